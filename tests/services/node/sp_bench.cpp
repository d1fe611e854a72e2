// sp_bench: the figures of issue #6, measured in one run against its own redis-server.
//
//   regroup after SIGKILL (kill a member -> loss observed -> survivors + spare form a new
//   generation) vs cold restart of the group's processes (spawn, load weights from the store,
//   form the group); weight copy from a peer (shm) vs the weight store for a new rank, per
//   preset; SP forward time for SP 1/2/4 as ratios to SP 1.
//
// Usage: sp_bench [--iterations=N] [--threads=T]  (prints a table and one JSON line)
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/policy/policy.hpp"
#include "common/store/redis_weight_store.hpp"
#include "services/node/node_scheduler.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"

using namespace spotlight;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

node::NodeOptions options(const std::string& preset, int ranks, int sp, int threads) {
  node::NodeOptions o;
  o.rank_binary = testing::binary_path("services/node/spotlight-node");
  o.preset = preset;
  o.ranks = ranks;
  o.sp_size = sp;
  o.threads_per_rank = threads;
  return o;
}

node::WeightsLocation publish(store::RedisWeightStore& store, const testing::RedisServer& redis,
                              const std::string& preset, std::int64_t version) {
  policy::PolicyOptions p;
  p.preset = preset;
  policy::Policy policy(p, policy::task_options_for(model::mmdit_preset(preset)));
  store.publish(version, policy.weights_bytes());
  std::printf("  %s weights: %.2f MB\n", preset.c_str(), policy.weights_bytes().size() / 1e6);
  node::WeightsLocation where;
  where.redis_port = redis.client_options().port;
  where.key_prefix = "bench";
  where.version = version;
  return where;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 10, threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--iterations=", 0) == 0)
      iterations = std::stoi(arg.substr(13));
    else if (arg.rfind("--threads=", 0) == 0)
      threads = std::stoi(arg.substr(10));
    else {
      std::fprintf(stderr, "usage: sp_bench [--iterations=N] [--threads=T]\n");
      return 2;
    }
  }
  testing::RedisServerOptions redis_options;
  redis_options.appendfsync = "everysec";
  testing::RedisServer redis(redis_options);
  store::WeightStoreOptions weights;
  weights.key_prefix = "bench";
  store::RedisWeightStore store(redis.client_options(), weights);
  std::printf("publishing weights\n");
  const auto tiny = publish(store, redis, "tiny", 1);
  const auto small = publish(store, redis, "small", 2);
  nlohmann::json out;

  // Regroup after SIGKILL (tiny = the demo preset, SP 2 + one spare).
  std::vector<double> regroup, replace_spawn, replace_copy;
  {
    node::NodeScheduler node(options("tiny", 3, 2, threads));
    node.start();
    node.load_weights(tiny);
    node.regroup();
    for (int i = 0; i < iterations; ++i) {
      const auto victim = node.group_pids()[1];
      const auto start = Clock::now();
      kill(victim, SIGKILL);
      if (node.await_loss(std::chrono::seconds(30)) < 1) throw std::runtime_error("loss unseen");
      const auto report = node.regroup();
      regroup.push_back(since(start));
      if (report.size != 2)
        throw std::runtime_error("regrouped to size " + std::to_string(report.size));
      const auto copy = node.replenish();  // not part of the regroup: the spare took the place
      replace_spawn.push_back(copy.spawn_seconds);
      replace_copy.push_back(copy.seconds);
    }
  }
  // Cold restart of the group's processes.
  std::vector<double> cold;
  for (int i = 0; i < std::max(3, iterations / 2); ++i) {
    const auto start = Clock::now();
    node::NodeScheduler node(options("tiny", 2, 2, threads));
    node.start();
    node.load_weights(tiny);
    node.regroup();
    cold.push_back(since(start));
  }
  const double regroup_p50 = percentile(regroup, 0.5), regroup_p95 = percentile(regroup, 0.95);
  const double cold_p50 = percentile(cold, 0.5), cold_p95 = percentile(cold, 0.95);
  std::printf("\nregroup after SIGKILL (tiny, SP 2, n=%d): p50 %.1f ms  p95 %.1f ms\n", iterations,
              regroup_p50 * 1e3, regroup_p95 * 1e3);
  std::printf("cold restart (spawn + store load + form, n=%zu): p50 %.1f ms  p95 %.1f ms\n",
              cold.size(), cold_p50 * 1e3, cold_p95 * 1e3);
  std::printf("speed-up (cold p50 / regroup p50): %.1fx\n", cold_p50 / regroup_p50);
  std::printf("replacement rank (background): spawn p50 %.1f ms, peer copy p50 %.1f ms\n",
              percentile(replace_spawn, 0.5) * 1e3, percentile(replace_copy, 0.5) * 1e3);
  out["regroup_ms"] = {{"p50", regroup_p50 * 1e3}, {"p95", regroup_p95 * 1e3}};
  out["cold_restart_ms"] = {{"p50", cold_p50 * 1e3}, {"p95", cold_p95 * 1e3}};
  out["regroup_speedup"] = cold_p50 / regroup_p50;

  // Weights for a new rank: a peer's shared memory vs the weight store.
  for (const auto& [preset, where] : {std::pair{"tiny", tiny}, std::pair{"small", small}}) {
    node::NodeScheduler node(options(preset, 2, 1, threads));
    node.start();
    node.load_weights(where);
    std::vector<double> peer, from_store, exported;
    for (int i = 0; i < std::max(3, iterations / 2); ++i) {
      for (auto source : {node::NodeScheduler::WeightsSource::kPeer,
                          node::NodeScheduler::WeightsSource::kStore}) {
        kill(node.all_pids().back(), SIGKILL);
        node.await_loss(std::chrono::seconds(30));
        const auto copy = node.replenish(source);
        (copy.source == "shm" ? peer : from_store).push_back(copy.seconds);
        if (copy.export_seconds > 0) exported.push_back(copy.export_seconds);
      }
    }
    std::printf("weights for a new rank (%s): peer shm p50 %.1f ms, store p50 %.1f ms (%.1fx)\n",
                preset, percentile(peer, 0.5) * 1e3, percentile(from_store, 0.5) * 1e3,
                percentile(from_store, 0.5) / percentile(peer, 0.5));
    std::printf(
        "  (a peer exported the segment once per load: %.1f ms, counted in the first copy only)\n",
        exported.empty() ? 0.0 : exported.front() * 1e3);
    out["weights_copy_ms"][preset] = {
        {"peer_shm_p50", percentile(peer, 0.5) * 1e3},
        {"peer_export_once", exported.empty() ? 0.0 : exported.front() * 1e3},
        {"store_p50", percentile(from_store, 0.5) * 1e3}};
  }

  // SP forward time vs SP 1 (same ranks; every rank has `threads` intra-op threads).
  for (const std::string preset : {"tiny", "small"}) {
    double base = 0;
    for (int sp : {1, 2, 4}) {
      node::NodeOptions o = options(preset, 4, sp, threads);
      node::NodeScheduler group(o);
      group.start();
      group.load_weights(preset == "tiny" ? tiny : small);
      group.regroup();
      group.forward_seconds(4, 1);  // warm-up
      const double seconds = group.forward_seconds(4, 5);
      if (sp == 1) base = seconds;
      std::printf("SP forward (%s, batch 4): SP %d %.1f ms per forward, throughput x%.2f of SP 1\n",
                  preset.c_str(), sp, seconds * 1e3, base / seconds);
      out["sp_forward"][preset]["sp" + std::to_string(sp)] = {
          {"ms", seconds * 1e3}, {"throughput_vs_sp1", base / seconds}};
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
