// Cost accounting: the meter's busy/idle split and prices (unit), and the run's ledger in a real
// redis-server summing what several processes flushed (redis).

#include "common/cost/cost.hpp"

#include <gtest/gtest.h>

#include "common/cost/cost_reporter.hpp"
#include "common/metrics/metrics.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight::cost {
namespace {

using namespace std::chrono_literals;
using Clock = CostMeter::Clock;

TEST(Prices, SpotIsTheRatioOfReserved) {
  Prices p;
  EXPECT_DOUBLE_EQ(p.spot_ratio, 0.27);
  EXPECT_DOUBLE_EQ(p.per_hour(DeviceClass::kSpot), 0.27 * p.per_hour(DeviceClass::kReserved));
  p.spot_ratio = -1;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  EXPECT_EQ(parse_device_class("spot"), DeviceClass::kSpot);
  EXPECT_EQ(parse_device_class("reserved"), DeviceClass::kReserved);
  EXPECT_EQ(parse_device_class("gpu"), std::nullopt);
}

TEST(CostMeter, SplitsElapsedTimeIntoBusyAndIdleAndPricesBoth) {
  const auto start = Clock::now();
  Prices prices{.reserved_per_hour = 3600.0, .spot_ratio = 0.25};  // 1 per reserved second
  CostMeter spot(DeviceClass::kSpot, 2, prices, start);
  spot.set_busy_seconds(30);
  Usage u = spot.usage(start + 100s);
  EXPECT_DOUBLE_EQ(u.busy_device_seconds, 60);
  EXPECT_DOUBLE_EQ(u.idle_device_seconds, 140);
  EXPECT_DOUBLE_EQ(u.cost, 200 * 0.25);

  CostMeter reserved(DeviceClass::kReserved, 1, prices, start);
  reserved.set_idle_seconds(10);  // the trainer reports its wait for seeds
  u = reserved.usage(start + 50s);
  EXPECT_DOUBLE_EQ(u.busy_device_seconds, 40);
  EXPECT_DOUBLE_EQ(u.idle_device_seconds, 10);
  EXPECT_DOUBLE_EQ(u.cost, 50);
  reserved.set_idle_seconds(500);  // more than elapsed: clamped
  u = reserved.usage(start + 50s);
  EXPECT_DOUBLE_EQ(u.busy_device_seconds, 0);
  EXPECT_DOUBLE_EQ(u.idle_device_seconds, 50);
  EXPECT_THROW(CostMeter(DeviceClass::kSpot, -1, prices), std::invalid_argument);
}

TEST(CostReporter, ExportsCountersNamedForTheService) {
  metrics::Registry registry("explorer");
  CostMeter meter(DeviceClass::kSpot, 1, Prices{}, Clock::now() - 10s);
  meter.set_busy_seconds(4);
  CostReporter reporter(meter, &registry, nullptr);
  reporter.flush();
  const std::string text = registry.text();
  EXPECT_NE(text.find("spotlight_explorer_device_seconds_total{class=\"spot\",state=\"busy\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spotlight_explorer_device_seconds_total{class=\"spot\",state=\"idle\"} "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spotlight_explorer_cost_total "), std::string::npos) << text;
}

TEST(CostLedger, SumsWhatEveryProcessFlushed) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  spotlight::testing::RedisServer server;
  store::RedisKeyValueStore ledger(server.client_options(), "spotlight:cost-test");
  const Prices prices{.reserved_per_hour = 3600.0, .spot_ratio = 0.5};
  const auto start = Clock::now() - 20s;
  CostMeter trainer(DeviceClass::kReserved, 1, prices, start);
  CostMeter explorer_a(DeviceClass::kSpot, 1, prices, start);
  CostMeter explorer_b(DeviceClass::kSpot, 1, prices, start);
  trainer.set_idle_seconds(5);
  explorer_a.set_busy_seconds(12);
  explorer_b.set_busy_seconds(8);
  CostReporter rt(trainer, nullptr, &ledger), ra(explorer_a, nullptr, &ledger),
      rb(explorer_b, nullptr, &ledger);
  for (int round = 0; round < 3; ++round) {  // repeated flushes add only what accrued
    rt.flush();
    ra.flush();
    rb.flush();
  }
  const RunCost run = read_run_cost(ledger, prices);
  const double elapsed = run.reserved_busy_device_seconds + run.reserved_idle_device_seconds;
  EXPECT_GE(elapsed, 20.0);
  EXPECT_LT(elapsed, 25.0);  // the test's own run time, generously
  EXPECT_NEAR(run.reserved_idle_device_seconds, 5.0, 1e-3);
  EXPECT_NEAR(run.spot_busy_device_seconds, 20.0, 1e-3);
  EXPECT_NEAR(run.spot_busy_device_seconds + run.spot_idle_device_seconds, 2 * elapsed, 0.5);
  EXPECT_NEAR(run.spot_cost, 0.5 * (run.spot_busy_device_seconds + run.spot_idle_device_seconds),
              1e-9);
  EXPECT_NEAR(run.total(), run.reserved_cost + run.spot_cost, 1e-12);
}

}  // namespace
}  // namespace spotlight::cost
