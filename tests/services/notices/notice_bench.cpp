// notice_bench: what the bus notices and the result bell buy, measured against the polling they
// replace, in one process against a redis-server it starts itself. Samples of the two modes
// alternate (ABAB...), so both see the same machine load; the ratios are the result.
//
//   notice_bench [--samples N] [--preset tiny] [--prompts P] [--candidates N] [--poll-ms 50]
//                [--planner-poll-ms 100] [--resync-ms 1000]
//
// weights: publish-to-usable, from the moment the trainer's weight-store publish of v returns
//   (v is durable) until an explorer holds v loaded and verified (the publish itself, the same in
//   both modes, is left out).
//   notices  (this branch): the trainer publishes v, then its "weights" notice; the explorer's
//            WeightsPrefetcher fetches, verifies and loads v on its own thread. Ends when the
//            prefetcher has loaded it.
//   polling  (main): the explorer loads a version only when a task asks for it. A planner thread
//            reads the trainer's progress every planner.poll_ms and then enqueues a task asking
//            for v; the explorer, blocked in lease(), gets it, pins and calls
//            PolicyWeights::ensure(v) (fetch, verify, load). This is main's fastest case, with
//            max_staleness 0: with the default 1 an explorer holding v-1 keeps it for tasks that
//            ask for v, and loads v only for tasks of the iteration after.
// results: the trainer's result-wait overhead, from the moment the last needed result is written
//   (just before its complete() call) until AsyncSeedSource::select() returns.
//   bell     (this branch): select() sleeps on the queue's result bell, reads results in one
//            HMGET per wake-up.
//   polling  (main): select() re-reads every `poll` with one HGET per missing result (a queue
//            adapter hides the bell and answers results() with result() per id, as main did).
//   The explorer side writes P x N - 1 results at once, then the last one after a random pause
//   (uniform in [0, 2 poll)), so the last write falls anywhere in the trainer's poll cycle.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/bus/publisher.hpp"
#include "common/config/arguments.hpp"
#include "common/metrics/metrics.hpp"
#include "common/policy/policy.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/run/schedule.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/wire/messages.hpp"
#include "services/explorer/explorer_metrics.hpp"
#include "services/explorer/policy_weights.hpp"
#include "services/explorer/weights_prefetch.hpp"
#include "services/trainer/async_exploration.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(index, v.size() - 1)];
}

void report(const char* what, const char* after_name, const std::vector<double>& after,
            const char* before_name, const std::vector<double>& before) {
  const double a50 = percentile(after, 0.5), a95 = percentile(after, 0.95);
  const double b50 = percentile(before, 0.5), b95 = percentile(before, 0.95);
  std::printf("%-8s %-8s n=%zu p50 %8.2f ms  p95 %8.2f ms\n", what, after_name, after.size(), a50,
              a95);
  std::printf("%-8s %-8s n=%zu p50 %8.2f ms  p95 %8.2f ms\n", what, before_name, before.size(), b50,
              b95);
  std::printf("%-8s ratio %s/%s: p50 %.3f  p95 %.3f\n\n", what, after_name, before_name,
              b50 > 0 ? a50 / b50 : 0.0, b95 > 0 ? a95 / b95 : 0.0);
  std::fflush(stdout);
}

// Main's result reading: no bell, one HGET per id. Everything else goes to the real queue.
class PerIdQueue final : public queue::LeaseQueue {
 public:
  explicit PerIdQueue(queue::LeaseQueue& q) : q_(q) {}
  queue::EnqueueResult enqueue(std::string_view id, std::string_view p) override {
    return q_.enqueue(id, p);
  }
  std::int64_t enqueue_many(std::span<const queue::Task> t) override { return q_.enqueue_many(t); }
  std::vector<queue::Lease> lease(std::string_view c, int n, milliseconds b) override {
    return q_.lease(c, n, b);
  }
  queue::Completion complete(const queue::Lease& l, std::string_view r) override {
    return q_.complete(l, r);
  }
  queue::FailOutcome fail(const queue::Lease& l, std::string_view e) override {
    return q_.fail(l, e);
  }
  queue::FailOutcome reject(const queue::Lease& l, std::string_view e) override {
    return q_.reject(l, e);
  }
  bool release(const queue::Lease& l) override { return q_.release(l); }
  bool extend(const queue::Lease& l) override { return q_.extend(l); }
  std::vector<queue::Lease> reclaim(std::string_view c, milliseconds i, int n) override {
    return q_.reclaim(c, i, n);
  }
  std::vector<queue::Lease> reclaim_from(std::string_view d, std::string_view c, int n) override {
    return q_.reclaim_from(d, c, n);
  }
  std::optional<std::string> result(std::string_view id) override { return q_.result(id); }
  queue::QuarantineOutcome quarantine(std::string_view id, std::string_view r,
                                      std::string_view why) override {
    return q_.quarantine(id, r, why);
  }
  std::vector<queue::QuarantinedResult> quarantined(int n) override { return q_.quarantined(n); }
  std::int64_t result_count() override { return q_.result_count(); }
  void for_each_result(const std::function<void(std::string_view, std::string_view)>& fn) override {
    q_.for_each_result(fn);
  }
  std::optional<std::string> last_error(std::string_view id) override { return q_.last_error(id); }
  std::vector<queue::DeadLetter> dead_letters(int n) override { return q_.dead_letters(n); }
  queue::QueueStats stats() override { return q_.stats(); }

 private:
  queue::LeaseQueue& q_;
};

struct Args {
  int samples = 60;
  std::string preset = "tiny";
  int prompts = 16;
  int candidates = 8;
  int poll_ms = 50;
  int planner_poll_ms = 100;
  int resync_ms = 1000;
};

class Bench {
 public:
  explicit Bench(Args a) : a_(std::move(a)), keys_("bench"), rng_(12345) {
    redis_ = server_.client_options();
  }

  policy::PolicyOptions options() const {
    policy::PolicyOptions o;
    o.preset = a_.preset;
    return o;
  }

  // --- weights ---------------------------------------------------------------------------------

  void weights() {
    const store::WeightStoreOptions wo{keys_.prefix};
    store::RedisWeightStore trainer(redis_, wo), prefetch(redis_, wo), explorer(redis_, wo);
    store::RedisKeyValueStore trainer_kv(redis_, keys_.prefix), planner_kv(redis_, keys_.prefix);
    bus::Publisher bus;
    const std::string endpoint = bus.bind("tcp://127.0.0.1:*");
    policy::Policy source(options());
    // One explorer per mode, so the prefetcher (which also catches up by resync) never loads a
    // version the polling explorer is being timed on.
    policy::Policy prefetched_policy(options());
    policy::Policy polled_policy(options());
    metrics::Registry registry("explorer");
    explorer::ExplorerMetrics metrics(registry);
    explorer::PolicyWeights prefetched(explorer, prefetched_policy, metrics);
    explorer::PolicyWeights polled(explorer, polled_policy, metrics);
    run::BusSubscription sub;
    sub.endpoint = endpoint;
    sub.follower.follower.resync_interval = milliseconds(a_.resync_ms);
    auto prefetcher = std::make_unique<explorer::WeightsPrefetcher>(sub, prefetch, prefetched);
    bus.wait_for_subscriber("weights", std::chrono::seconds(10));

    queue::LeaseQueueOptions qo;
    qo.key_prefix = keys_.explore_queue + "-weights";
    queue::RedisLeaseQueue planner_queue(redis_, qo), explorer_queue(redis_, qo);

    std::vector<double> notices, polling;
    std::int64_t v = 0;
    std::size_t bytes = 0;
    for (int s = 0; s < a_.samples; ++s) {
      for (const bool with_notices : {true, false}) {
        // Fresh weights per version, like a training step (not timed).
        source.model()->parameters()[0].data().add_(0.001);
        const std::string blob = source.weights_bytes();
        bytes = blob.size();
        const auto done = with_notices
                              ? sample_notice(trainer, bus, *prefetcher, prefetched, blob, v)
                              : sample_polling(trainer, trainer_kv, planner_kv, planner_queue,
                                               explorer_queue, polled, blob, v);
        (with_notices ? notices : polling).push_back(done);
        ++v;
        trainer.gc(2);
      }
    }
    prefetcher.reset();
    std::printf("weights: %s preset, %zu bytes per version, %d samples per mode\n",
                a_.preset.c_str(), bytes, a_.samples);
    report("weights", "notices", notices, "polling", polling);
  }

  double sample_notice(store::WeightStore& trainer, bus::Publisher& bus,
                       explorer::WeightsPrefetcher& prefetcher, explorer::PolicyWeights& weights,
                       const std::string& blob, std::int64_t v) {
    std::uint64_t seen = prefetcher.follower().delivered();
    const auto m = trainer.publish(v, blob);
    const auto t0 = Clock::now();  // v is durable: from here on it could be used
    const wire::WeightsNotice n{v, m.checksum, keys_.weights, static_cast<std::int64_t>(m.bytes),
                                m.published_unix_ms};
    bus.publish("weights", static_cast<std::uint64_t>(v) + 1, n.encode());
    while (weights.loaded() != v) {
      seen = prefetcher.follower().wait_newer(seen, milliseconds(5000));
    }
    return ms_since(t0, Clock::now());
  }

  // Main's path: the planner notices the new progress on its next poll and enqueues a task
  // asking for v; the explorer (blocked in lease) loads v when it takes the task.
  double sample_polling(store::WeightStore& trainer, store::KeyValueStore& trainer_kv,
                        store::KeyValueStore& planner_kv, queue::LeaseQueue& planner_queue,
                        queue::LeaseQueue& explorer_queue, explorer::PolicyWeights& weights,
                        const std::string& blob, std::int64_t v) {
    std::atomic<bool> published{false};
    std::jthread planner([&](std::stop_token stop) {
      // Where the planner's poll cycle stands when the trainer publishes: anywhere.
      std::this_thread::sleep_for(
          milliseconds(std::uniform_int_distribution<int>(0, a_.planner_poll_ms)(planner_rng_)));
      while (!stop.stop_requested()) {
        if (published && planner_kv.get("trainer:iteration") == std::to_string(v)) {
          planner_queue.enqueue("w" + std::to_string(v), "task");
          return;
        }
        std::this_thread::sleep_for(milliseconds(a_.planner_poll_ms));
      }
    });
    trainer.publish(v, blob);
    const auto t0 = Clock::now();  // v is durable: from here on it could be used
    trainer_kv.put("trainer:iteration", std::to_string(v));
    published = true;
    for (;;) {
      auto leases = explorer_queue.lease("e", 1, milliseconds(1000));
      if (leases.empty()) continue;
      const auto pinned = weights.pin();
      weights.ensure(v);
      explorer_queue.complete(leases[0], "done");
      break;
    }
    const double ms = ms_since(t0, Clock::now());
    if (weights.loaded() != v) std::fprintf(stderr, "polling sample: version %ld not loaded\n", v);
    return ms;
  }

  // --- results ---------------------------------------------------------------------------------

  void results() {
    queue::LeaseQueueOptions qo;
    qo.key_prefix = keys_.explore_queue;
    queue::RedisLeaseQueue trainer_queue(redis_, qo), explorer_queue(redis_, qo);
    PerIdQueue main_queue(trainer_queue);
    std::vector<double> bell, polling;
    std::int64_t iteration = 0;
    for (int s = 0; s < a_.samples; ++s) {
      for (const bool with_bell : {true, false}) {
        trainer::AsyncSeedOptions o;
        o.run_id = "bench";
        o.group_size = std::min(4, a_.candidates);
        o.candidates = a_.candidates;
        o.max_wait = std::chrono::seconds(60);
        o.poll = milliseconds(a_.poll_ms);
        o.resync = milliseconds(a_.resync_ms);
        o.notices = with_bell;
        trainer::AsyncSeedSource source(
            o, with_bell ? static_cast<queue::LeaseQueue&>(trainer_queue) : main_queue);
        (with_bell ? bell : polling).push_back(sample_results(source, explorer_queue, iteration));
        ++iteration;
      }
    }
    std::printf("results: %d prompts x %d candidates, poll %d ms, %d samples per mode\n",
                a_.prompts, a_.candidates, a_.poll_ms, a_.samples);
    report("results", "bell", bell, "polling", polling);
  }

  double sample_results(trainer::AsyncSeedSource& source, queue::LeaseQueue& explorer_queue,
                        std::int64_t k) {
    const int total = a_.prompts * a_.candidates;
    for (int i = 0; i < a_.prompts; ++i) {
      for (int j = 0; j < a_.candidates; ++j)
        explorer_queue.enqueue(run::seed_task_id(k, i, j), "task");
    }
    auto leases = explorer_queue.lease("e", total, milliseconds(0));
    const auto result_of = [&](const queue::Lease& lease) {
      const auto id = run::parse_seed_task_id(lease.task_id);
      wire::SeedResult r;
      r.task_id = lease.task_id;
      r.run_id = "bench";
      r.iteration = k;
      r.prompt_index = id->prompt;
      r.seed = run::candidate_seed(0, k, id->prompt, id->candidate);
      r.reward = 0.1 * id->candidate;
      return r.encode();
    };
    Clock::time_point last_written{};
    std::jthread explorer([&] {
      for (std::size_t l = 0; l + 1 < leases.size(); ++l)
        explorer_queue.complete(leases[l], result_of(leases[l]));
      std::this_thread::sleep_for(
          milliseconds(std::uniform_int_distribution<int>(0, 2 * a_.poll_ms)(rng_)));
      last_written = Clock::now();
      explorer_queue.complete(leases.back(), result_of(leases.back()));
    });
    const auto selection =
        source.select(k, std::vector<task::Prompt>(static_cast<std::size_t>(a_.prompts)));
    const auto returned = Clock::now();
    explorer.join();
    if (selection.fallback_prompts != 0) std::fprintf(stderr, "results sample: fallback\n");
    return ms_since(last_written, returned);
  }

 private:
  Args a_;
  run::RunKeys keys_;
  testing::RedisServer server_;
  redis::RedisOptions redis_;
  std::mt19937 rng_;
  std::mt19937 planner_rng_{678};
};

}  // namespace
}  // namespace spotlight

int main(int argc, char** argv) {
  using spotlight::config::ArgumentParser;
  ArgumentParser parser(
      "usage: notice_bench [options]\n"
      "Publish-to-usable latency of weights and the trainer's result-wait overhead, with the bus\n"
      "notices and the result bell against main's polling, interleaved in one run.");
  parser.option("samples", "N", "samples per mode", "60")
      .option("preset", "NAME", "model preset whose weights are published", "tiny")
      .option("prompts", "P", "prompts per iteration", "16")
      .option("candidates", "N", "candidates per prompt", "8")
      .option("poll-ms", "MS", "the trainer's result poll of main", "50")
      .option("planner-poll-ms", "MS", "planner.poll_ms", "100")
      .option("resync-ms", "MS", "bus.resync_ms", "1000")
      .option("only", "WHAT", "weights or results (default both)", "");
  const auto a = parser.parse(argc, argv);
  if (a.help()) {
    std::cout << parser.help();
    return 0;
  }
  spotlight::Args args;
  args.samples = static_cast<int>(a.integer("samples"));
  args.preset = a.value("preset").value_or("tiny");
  args.prompts = static_cast<int>(a.integer("prompts"));
  args.candidates = static_cast<int>(a.integer("candidates"));
  args.poll_ms = static_cast<int>(a.integer("poll-ms"));
  args.planner_poll_ms = static_cast<int>(a.integer("planner-poll-ms"));
  args.resync_ms = static_cast<int>(a.integer("resync-ms"));
  const std::string only = a.value("only").value_or("");
  spotlight::Bench bench(args);
  if (only.empty() || only == "results") bench.results();
  if (only.empty() || only == "weights") bench.weights();
  return 0;
}
