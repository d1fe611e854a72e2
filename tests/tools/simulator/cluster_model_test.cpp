// The cluster model: every baseline's time and cost accounting, the spot pool's decisions
// (hold what is needed, release what idles, preemption), and its agreement with the task-level
// simulation that drives the real lease queue, reaper and bandit.
#include "tools/simulator/cluster_model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "tools/simulator/simulation.hpp"
#include "tools/simulator/study.hpp"

namespace spotlight::simulator {
namespace {

Trace constant_trace(int available, int ticks = 50) {
  Trace t;
  t.name = "constant";
  t.gap_seconds = 300;
  t.data.assign(static_cast<std::size_t>(ticks), available);
  t.data.push_back(std::max(available, 1));  // a non-zero peak for scaling
  return t;
}

Trace shipped_trace() {
  const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return Trace::load((std::filesystem::path(src ? src : ".") / "deploy" / "traces" /
                      "availability_16-node_aws-08-27-2023_us-east-2b_v100_1.json")
                         .string());
}

ClusterOptions small() {
  ClusterOptions o;
  o.costs = estimated_step_costs("H200");
  o.reserved_gpus = 8;
  o.prompts = 8;
  o.group_size = 8;
  o.rollout_steps = 10;
  o.trained_steps = 9;
  o.sync_candidates = 32;
  o.sync_steps = 10;
  o.bandit.candidates = {16, 32};
  o.bandit.steps = {5, 10};
  o.learning.z0 = 0.0;
  o.learning.sigma_d = 1.5;
  o.learning.eta = 0.05;
  o.learning.noise = 60.0;  // the noisy regime our runs are in: selection helps
  o.learning.stale_flip = 0.1;
  o.target_score = 0.6;
  o.max_iterations = 2000;
  return o;
}

TEST(ClusterModel, ReservedOnlyModesAccountTimeAndCost) {
  const ClusterOptions o = small();
  const auto none = simulate_cluster(Mode::kNone, o, nullptr);
  ASSERT_TRUE(none.reached);
  const double iteration = training_seconds(o, o.reserved_gpus);
  EXPECT_NEAR(none.seconds, none.iterations * iteration, 1e-6);
  EXPECT_NEAR(none.reserved_cost, 8 * none.seconds * 4.0 / 3600, 1e-9);
  EXPECT_EQ(none.spot_cost, 0);
  const auto sync = simulate_cluster(Mode::kSync, o, nullptr);
  ASSERT_TRUE(sync.reached);
  const double explore = 8.0 * 32 * 10 * o.costs.seconds_per_sample_step / 8;
  EXPECT_NEAR(sync.seconds, sync.iterations * (iteration + explore), 1e-6);
  EXPECT_LT(sync.iterations, none.iterations);  // selection: fewer iterations
  // none-matched: the same iterations on more GPUs, at the data-parallel efficiency.
  ClusterOptions m = o;
  m.matched_spot_gpus = 16;  // + 0.27 x 16 = 4.32 reserved GPUs
  const auto matched = simulate_cluster(Mode::kNoneMatched, m, nullptr);
  EXPECT_EQ(matched.iterations, none.iterations);
  const double gpus = 8 + 0.27 * 16;
  EXPECT_NEAR(matched.seconds, none.seconds * 8 / (gpus * std::pow(0.9, std::log2(gpus / 8))),
              1e-6);
  EXPECT_NEAR(matched.reserved_cost, gpus * matched.seconds * 4.0 / 3600, 1e-9);
}

TEST(ClusterModel, AsyncHoldsWhatTheArmNeedsNotWhatTheTraceOffers) {
  ClusterOptions o = small();
  o.fixed_candidates = 16;
  o.fixed_steps = 10;
  o.spot_ratio = 4;  // up to 32 spot GPUs, all offered
  const Trace full = constant_trace(32);
  const auto r = simulate_cluster(Mode::kAsync, o, &full);
  ASSERT_TRUE(r.reached);
  // need = ceil(P N S t / (margin x compute)) for compute = rollout + train on 8 GPUs
  const double compute = training_seconds(o, 8);
  const int need = static_cast<int>(
      std::ceil(8.0 * 16 * 10 * o.costs.seconds_per_sample_step / (0.9 * compute)));
  EXPECT_LT(need, 32);
  EXPECT_LE(r.mean_held_spot, need + 1e-9);
  EXPECT_GT(r.mean_held_spot, 0);
  EXPECT_GT(r.spot_busy_share, 0.3);
  EXPECT_LE(r.spot_busy_share, 1.0);
  EXPECT_NEAR(r.spot_cost, r.mean_held_spot * r.seconds * 4.0 * 0.27 / 3600, 1e-6);
  EXPECT_EQ(r.preemptions, 0);
  // Only while the cold pool starts do prompts fall back to random seeds.
  const double startup_iterations = std::ceil(o.costs.explorer_startup_seconds / compute) + 1;
  EXPECT_GT(r.fallback_prompts, 0);
  EXPECT_LE(r.fallback_prompts, o.prompts * startup_iterations);
  const auto none = simulate_cluster(Mode::kNone, o, nullptr);
  EXPECT_LT(r.iterations, none.iterations);
}

TEST(ClusterModel, IdleSpotGpusAreReleasedBetweenPlans) {
  ClusterOptions o = small();
  o.fixed_candidates = 16;
  o.fixed_steps = 5;
  o.bandit.time_margin = 0.3;  // a pool sized to finish in 30% of the trainer's compute
  o.spot_ratio = 4;
  o.costs.seconds_per_sample_step = 2.0;  // long iterations: gaps worth releasing
  o.fixed_iterations = 20;
  const Trace full = constant_trace(32);
  const auto releasing = simulate_cluster(Mode::kAsync, o, &full);
  o.min_idle_seconds = 1e9;  // never worth it
  const auto holding = simulate_cluster(Mode::kAsync, o, &full);
  EXPECT_LT(releasing.spot_cost, holding.spot_cost);
  EXPECT_GT(releasing.spot_busy_share, holding.spot_busy_share);
  EXPECT_EQ(releasing.fallback_prompts, holding.fallback_prompts);  // taken back in time
}

TEST(ClusterModel, PreemptionsLoseWorkAndOffloadFallsBackToReservedRollouts) {
  ClusterOptions o = small();
  o.spot_ratio = 2;
  // Available for one tick, gone for one: every drop preempts the whole pool.
  Trace flapping;
  flapping.name = "flapping";
  flapping.gap_seconds = 120;
  for (int i = 0; i < 40; ++i)
    flapping.data.push_back(i % 2 ? 0 : 16);
  o.fixed_iterations = 30;
  const auto async = simulate_cluster(Mode::kAsync, o, &flapping);
  EXPECT_GT(async.preemptions, 0);
  EXPECT_GT(async.fallback_prompts, 0);
  // Offload without any spot GPU: the reserved GPUs roll out themselves (plus nothing else).
  const Trace none_offered = constant_trace(0);
  const auto offload = simulate_cluster(Mode::kOffload, o, &none_offered);
  EXPECT_EQ(offload.spot_cost, 0);
  EXPECT_NEAR(offload.seconds, 30 * training_seconds(o, 8), 1e-6);
}

// Days of simulated time, as the published calibration's 5000-iteration runs take: the clock's
// resolution there is coarser than what rounding leaves of a drained block, and the event loop
// once stopped time and spun forever (now it throws if time stops; see drain_event).
TEST(ClusterModel, LongRunsKeepTheirClockMoving) {
  const Trace trace = shipped_trace();
  for (const Mode mode : {Mode::kOffload, Mode::kAsync, Mode::kAsyncReuse}) {
    for (const double ratio : {1.0, 4.0}) {
      ClusterOptions o = small();
      o.costs.seconds_per_sample_step = 40;  // an hour per iteration: 1e6 s within 300
      o.spot_ratio = ratio;
      o.fixed_iterations = 300;
      ClusterResult r;
      ASSERT_NO_THROW(r = simulate_cluster(mode, o, &trace)) << to_string(mode) << " 1:" << ratio;
      EXPECT_EQ(r.iterations, 300);
      EXPECT_GT(r.seconds, 1e6);
    }
  }
}

TEST(ClusterModel, AsyncReuseTrainsWithoutRollingOutOnTheReservedGpus) {
  ClusterOptions o = small();
  o.fixed_candidates = 16;
  o.spot_ratio = 4;
  o.fixed_iterations = 20;
  const Trace full = constant_trace(32);
  const auto reuse = simulate_cluster(Mode::kAsyncReuse, o, &full);
  const auto async = simulate_cluster(Mode::kAsync, o, &full);
  EXPECT_LT(reuse.seconds, async.seconds);
  EXPECT_GT(reuse.mean_held_spot, async.mean_held_spot);  // full-step candidates, shorter budget
  EXPECT_EQ(reuse.arms.count("16x10"), 1u);
}

// The fluid cluster model against the task-level simulation (real lease queue, reaper, bandit,
// one seed task at a time) on the same run with a full, constant pool: the same learning, and
// iterations and time within a few percent.
// offload sizes its pool like async's: what rolls out the batch within the time margin of the
// training it waits beside, not the whole cap the trace offers.
TEST(ClusterModel, OffloadHoldsWhatItsRolloutsNeed) {
  ClusterOptions o = small();
  o.spot_ratio = 8;  // a cap of 64 GPUs, all offered
  const Trace full = constant_trace(64);
  const auto r = simulate_cluster(Mode::kOffload, o, &full);
  ASSERT_TRUE(r.reached);
  const double work = static_cast<double>(o.prompts) * o.group_size * o.rollout_steps *
                      o.costs.seconds_per_sample_step;
  const double train = training_seconds(o, o.reserved_gpus) - rollout_seconds(o, o.reserved_gpus);
  const double need = std::ceil(work / (o.bandit.time_margin * train));
  EXPECT_LE(r.mean_held_spot, need + 1e-9);
  EXPECT_LT(r.mean_held_spot, 64);
  EXPECT_GT(r.mean_held_spot, 0);
}

// One step off: the pool rolls out the next iteration while the reserved GPUs train, so with a
// pool large enough the trainer barely waits; with none at all the reserved GPUs roll out, and
// the run takes none's time plus nothing.
TEST(ClusterModel, PipelinedOffloadOverlapsRolloutsWithTraining) {
  ClusterOptions o = small();
  o.spot_ratio = 4;
  const Trace full = constant_trace(32);
  const auto none = simulate_cluster(Mode::kNone, o, nullptr);
  const auto offload = simulate_cluster(Mode::kOffload, o, &full);
  const auto pipelined = simulate_cluster(Mode::kOffloadPipelined, o, &full);
  ASSERT_TRUE(pipelined.reached);
  EXPECT_EQ(pipelined.iterations, none.iterations);  // plain groups, on-policy efficiency 1
  EXPECT_LT(pipelined.seconds, offload.seconds);
  EXPECT_LT(pipelined.seconds, none.seconds);
  EXPECT_LT(pipelined.mean_wait_seconds, offload.mean_wait_seconds);
  const Trace empty = constant_trace(0);
  const auto alone = simulate_cluster(Mode::kOffloadPipelined, o, &empty);
  EXPECT_NEAR(alone.seconds, none.seconds, 1e-6 * none.seconds);
  EXPECT_EQ(alone.spot_cost, 0);
}

// async pays what the benchmark measured: at least async_wait_share of its compute waiting, the
// audit's share and a weight publish per iteration.
TEST(ClusterModel, AsyncPaysTheMeasuredOverheads) {
  ClusterOptions o = small();
  o.spot_ratio = 4;
  o.fixed_iterations = 20;
  const Trace full = constant_trace(32);
  ClusterOptions free = o;
  free.costs.async_wait_share = 0;
  free.costs.async_audit_share = 0;
  free.costs.weight_publish_seconds = 0;
  const auto paid = simulate_cluster(Mode::kAsync, o, &full);
  const auto unpaid = simulate_cluster(Mode::kAsync, free, &full);
  const double compute = training_seconds(o, o.reserved_gpus);
  EXPECT_GE(paid.mean_wait_seconds, o.costs.async_wait_share * compute - 1e-6);
  EXPECT_LT(unpaid.mean_wait_seconds, paid.mean_wait_seconds);
  const double overhead = o.costs.async_wait_share * compute + o.costs.async_audit_share * compute +
                          o.costs.weight_publish_seconds;
  EXPECT_GE(paid.seconds / paid.iterations, unpaid.seconds / unpaid.iterations + 0.5 * overhead);
}

TEST(Study, WritesTheSameLinesOnAnyNumberOfThreads) {
  StudyOptions s;
  s.base = small();
  Calibration c;
  c.name = "test";
  c.learning = s.base.learning;
  c.target_score = s.base.target_score;
  s.calibrations = {c};
  s.traces = {constant_trace(4)};
  s.ratios = {1};
  s.gains = {2};
  s.startups = {120};
  s.offsets = 5;
  std::ostringstream one, three;
  run_study(s, one);
  s.jobs = 3;
  run_study(s, three);
  EXPECT_EQ(one.str(), three.str());
  // A line per run: none, then offload, offload-pipelined, async, none-matched and the gain.
  const std::string lines = one.str();
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1 + 6 * s.offsets);
  // Each start-up swept is a configuration of its own.
  s.startups = {30, 600};
  std::ostringstream two;
  run_study(s, two);
  const std::string more = two.str();
  EXPECT_EQ(std::count(more.begin(), more.end(), '\n'), 1 + s.offsets + 2 * 5 * s.offsets);
}

TEST(ClusterModel, AgreesWithTheTaskLevelSimulation) {
  ClusterOptions fluid = small();
  // The pool's mechanics alone: the task-level simulation charges async no measured overheads.
  fluid.costs.async_wait_share = 0;
  fluid.costs.async_audit_share = 0;
  fluid.costs.weight_publish_seconds = 0;
  fluid.fixed_candidates = 0;
  fluid.spot_ratio = 2;
  fluid.min_idle_seconds = 1e9;  // the task-level pool holds what the trace offers
  const Trace full = constant_trace(16);
  SimOptions tasks;
  tasks.costs = fluid.costs;
  tasks.reserved_gpus = fluid.reserved_gpus;
  tasks.prompts = fluid.prompts;
  tasks.group_size = fluid.group_size;
  tasks.bandit = fluid.bandit;
  tasks.learning = fluid.learning;
  tasks.target_score = fluid.target_score;
  tasks.trace_offset_seconds = 0;
  double fluid_seconds = 0, task_seconds = 0, fluid_its = 0, task_its = 0;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    fluid.seed = seed;
    tasks.seed = seed;
    const auto f = simulate_cluster(Mode::kAsync, fluid, &full);
    const auto t = simulate(Mode::kAsync, tasks, &full, 16);
    ASSERT_TRUE(f.reached);
    ASSERT_TRUE(t.reached);
    fluid_seconds += f.seconds;
    task_seconds += t.seconds;
    fluid_its += f.iterations;
    task_its += t.iterations;
  }
  EXPECT_NEAR(fluid_its / task_its, 1.0, 0.15);
  EXPECT_NEAR(fluid_seconds / task_seconds, 1.0, 0.15);
}

}  // namespace
}  // namespace spotlight::simulator
