// log::Throttle with explicit time points: one line per interval, the rest counted.
#include "common/log/throttle.hpp"

#include <gtest/gtest.h>

namespace spotlight::log {
namespace {

using namespace std::chrono_literals;

TEST(Throttle, LetsOneLinePerIntervalThroughAndCountsTheOthers) {
  Throttle throttle(10s);
  const Throttle::Clock::time_point t0{};
  EXPECT_EQ(throttle.admit(t0), 0u);  // the first line always
  EXPECT_EQ(throttle.admit(t0 + 1s), std::nullopt);
  EXPECT_EQ(throttle.admit(t0 + 9s), std::nullopt);
  EXPECT_EQ(throttle.admit(t0 + 10s), 2u);  // and the two held back are reported with it
  EXPECT_EQ(throttle.admit(t0 + 19s), std::nullopt);
  EXPECT_EQ(throttle.admit(t0 + 31s), 1u);
  EXPECT_EQ(throttle.admit(t0 + 60s), 0u);
}

}  // namespace
}  // namespace spotlight::log
