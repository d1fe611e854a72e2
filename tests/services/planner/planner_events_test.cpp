// The planner plans on the trainer's iteration events: with a poll period far longer than the
// test, each pass after the first is started by an "iteration" notice on a real bus::Publisher
// (what the trainer publishes), read through make_planner()'s subscription.
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/bus/publisher.hpp"
#include "common/wire/messages.hpp"
#include "services/planner/planner.hpp"
#include "services/planner/planner_config.hpp"
#include "tests/services/planner/planner_fixture.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::planner::test {
namespace {

using namespace std::chrono_literals;
using spotlight::testing::wait_for;

class PlannerEventsTest : public RedisFixture {};

TEST_F(PlannerEventsTest, PlansOnIterationEventsNotOnItsPoll) {
  bus::Publisher trainer_bus;
  const std::string endpoint = trainer_bus.bind("tcp://127.0.0.1:*");
  // No poll and no resync within the test's patience: only events can start a pass.
  const auto c = make_config({"planner.poll_ms=600000", "bus.resync_ms=600000",
                              "bus.trainer_endpoint=" + endpoint, "trainer.iterations=6"});
  auto planner = make_planner(c, nullptr);
  ASSERT_TRUE(trainer_bus.wait_for_subscriber("iteration", kPatience));
  std::jthread loop([&](std::stop_token stop) { planner->run(stop); });
  // The first pass finds no trainer yet; then the trainer announces each iteration.
  for (std::int64_t k = 0; k < 3; ++k) {
    set_trainer_iteration(k);
    const wire::IterationEvent event{
        run_id(), k, k == 0 ? wire::IterationKind::kStarted : wire::IterationKind::kTrained, 0, k};
    trainer_bus.publish("iteration", static_cast<std::uint64_t>(k) + 1, event.encode());
    EXPECT_TRUE(wait_for([&] { return planner_state() == k + 1; }, kPatience))
        << "iteration " << k << ": planned through " << planner_state().value_or(-1);
  }
  loop.request_stop();  // ends the wait at once
}

TEST_F(PlannerEventsTest, WithoutTheBusItPollsAsBefore) {
  const auto c = make_config({"bus.subscribe=false"});
  auto planner = make_planner(c, nullptr);
  std::jthread loop([&](std::stop_token stop) { planner->run(stop); });
  set_trainer_iteration(0);
  EXPECT_TRUE(wait_for([&] { return planner_state() == 1; }, kPatience));
}

}  // namespace
}  // namespace spotlight::planner::test
