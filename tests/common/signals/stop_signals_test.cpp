// StopSignals with real signals: raise() (delivered to this thread before it returns) and
// kill(getpid()) from another thread. Each becomes one wake-up of wait(), none is lost, a stop
// request ends a wait, and the previous handlers come back.

#include "common/signals/stop_signals.hpp"

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace spotlight::signals {
namespace {

volatile std::sig_atomic_t g_previous_handler_calls = 0;
void previous_handler(int) {
  g_previous_handler_calls = g_previous_handler_calls + 1;
}

// Installs `previous_handler` for SIGTERM and SIGINT for the duration of a test, so that a
// signal that escapes StopSignals cannot end the test binary.
class StopSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction action {};
    action.sa_handler = previous_handler;
    sigemptyset(&action.sa_mask);
    ASSERT_EQ(::sigaction(SIGTERM, &action, &saved_term_), 0);
    ASSERT_EQ(::sigaction(SIGINT, &action, &saved_int_), 0);
    g_previous_handler_calls = 0;
  }
  void TearDown() override {
    ::sigaction(SIGTERM, &saved_term_, nullptr);
    ::sigaction(SIGINT, &saved_int_, nullptr);
  }

 private:
  struct sigaction saved_term_ {};
  struct sigaction saved_int_ {};
};

TEST_F(StopSignalsTest, ASignalSentBeforeWaitIsNotLost) {
  StopSignals signals;
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_EQ(signals.wait(), SIGTERM);
  EXPECT_EQ(g_previous_handler_calls, 0);
}

TEST_F(StopSignalsTest, ASignalFromAnotherThreadWakesAWaiter) {
  StopSignals signals;
  std::jthread sender([] {
    std::this_thread::yield();
    ::kill(::getpid(), SIGINT);
  });
  EXPECT_EQ(signals.wait(), SIGINT);
}

TEST_F(StopSignalsTest, EachSignalIsReportedOnce) {
  StopSignals signals;
  ASSERT_EQ(std::raise(SIGINT), 0);
  ASSERT_EQ(std::raise(SIGTERM), 0);
  EXPECT_EQ(signals.wait(), SIGINT);
  EXPECT_EQ(signals.wait(), SIGTERM);
  std::stop_source none_left;
  none_left.request_stop();
  EXPECT_EQ(signals.wait(none_left.get_token()), std::nullopt);
}

TEST_F(StopSignalsTest, APendingSignalComesBeforeAStopRequest) {
  StopSignals signals;
  std::stop_source stop;
  stop.request_stop();
  ASSERT_EQ(std::raise(SIGINT), 0);
  EXPECT_EQ(signals.wait(stop.get_token()), SIGINT);
  EXPECT_EQ(signals.wait(stop.get_token()), std::nullopt);
}

TEST_F(StopSignalsTest, AStopRequestEndsTheWaitWithoutASignal) {
  StopSignals signals;
  std::stop_source stop;
  std::jthread requester([&] { stop.request_stop(); });
  EXPECT_EQ(signals.wait(stop.get_token()), std::nullopt);
}

TEST_F(StopSignalsTest, OneInstanceAtATimeAndThePreviousHandlersComeBack) {
  {
    StopSignals signals;
    EXPECT_THROW(StopSignals{}, std::logic_error);
  }
  ASSERT_EQ(std::raise(SIGTERM), 0);  // handled by this thread before raise() returns
  EXPECT_EQ(g_previous_handler_calls, 1);
  StopSignals again;  // a new instance after the first is gone
  ASSERT_EQ(std::raise(SIGINT), 0);
  EXPECT_EQ(again.wait(), SIGINT);
  EXPECT_EQ(g_previous_handler_calls, 1);
}

TEST(SignalName, NamesTheStopSignals) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGUSR1), "signal " + std::to_string(SIGUSR1));
}

}  // namespace
}  // namespace spotlight::signals
