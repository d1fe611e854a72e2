// queue_bench: lease + complete (result write + XACK) throughput of RedisLeaseQueue with 1, 4 and
// 16 consumer threads against a redis-server it starts itself (AOF on, appendfsync everysec).
//
//   queue_bench [--tasks N] [--seconds S] [--threads 1,4,16] [--batch B] [--payload BYTES]
//               [--fsync always|everysec] [--lease-timeout-ms L] [--reclaim-poll-ms P]
//               [--reclaim-rounds R]
//
// Per thread count: enqueue N tasks (enqueue_many), then every consumer thread (one queue object
// and connection each) loops lease(B) -> complete() until the queue is empty or S seconds passed.
// Prints tasks/s; each task is one lease + one complete (result + ack).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/queue/redis_lease_queue.hpp"
#include "tests/support/redis_server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using spotlight::queue::LeaseQueueOptions;
using spotlight::queue::RedisLeaseQueue;
using spotlight::queue::Task;

struct Args {
  int tasks = 20000;
  double seconds = 3.0;
  std::vector<int> threads = {1, 4, 16};
  int batch = 1;
  std::size_t payload = 256;
  std::string fsync = "everysec";
  int lease_timeout_ms = 500;
  int reclaim_poll_ms = 50;
  int reclaim_rounds = 20;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--tasks") {
      a.tasks = std::stoi(value);
    } else if (flag == "--seconds") {
      a.seconds = std::stod(value);
    } else if (flag == "--batch") {
      a.batch = std::stoi(value);
    } else if (flag == "--payload") {
      a.payload = std::stoul(value);
    } else if (flag == "--lease-timeout-ms") {
      a.lease_timeout_ms = std::stoi(value);
    } else if (flag == "--reclaim-poll-ms") {
      a.reclaim_poll_ms = std::stoi(value);
    } else if (flag == "--reclaim-rounds") {
      a.reclaim_rounds = std::stoi(value);
    } else if (flag == "--fsync") {
      a.fsync = value;
    } else if (flag == "--threads") {
      a.threads.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ','))
        a.threads.push_back(std::stoi(item));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  spotlight::testing::RedisServerOptions server_options;
  server_options.appendfsync = args.fsync;
  spotlight::testing::RedisServer server(server_options);
  std::printf("queue_bench: redis-server pid %d port %d, appendfsync %s, payload %zu B, batch %d\n",
              server.pid(), server.port(), args.fsync.c_str(), args.payload, args.batch);
  std::printf("%8s %10s %12s %14s %12s\n", "threads", "tasks", "seconds", "leases+acks/s",
              "enqueue/s");

  for (const int threads : args.threads) {
    LeaseQueueOptions o;
    o.key_prefix = "bench:" + std::to_string(threads);
    RedisLeaseQueue producer(server.client_options(), o);
    std::vector<Task> tasks;
    tasks.reserve(args.tasks);
    for (int i = 0; i < args.tasks; ++i) {
      tasks.push_back({"t" + std::to_string(i), std::string(args.payload, 'p')});
    }
    const auto enqueue_start = Clock::now();
    producer.enqueue_many(tasks);
    const double enqueue_s = std::chrono::duration<double>(Clock::now() - enqueue_start).count();

    std::atomic<long> done{0};
    std::atomic<bool> failed{false};
    const auto deadline = Clock::now() + std::chrono::duration<double>(args.seconds);
    const std::string result(args.payload, 'r');
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        try {
          RedisLeaseQueue q(server.client_options(), o);
          const std::string name = "c" + std::to_string(t);
          while (Clock::now() < deadline) {
            const auto leases = q.lease(name, args.batch, std::chrono::milliseconds(0));
            if (leases.empty()) break;
            for (const auto& l : leases)
              q.complete(l, result);
            done += static_cast<long>(leases.size());
          }
        } catch (const std::exception& e) {
          std::fprintf(stderr, "consumer %d: %s\n", t, e.what());
          failed = true;
        }
      });
    }
    for (auto& w : workers)
      w.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (failed) return 1;
    std::printf("%8d %10ld %12.2f %14.0f %12.0f\n", threads, done.load(), elapsed,
                done.load() / elapsed, args.tasks / enqueue_s);
    producer.destroy();
  }

  // Lease-reclaim latency: a consumer takes a lease and dies (never completes); a live consumer
  // polls reclaim() every `poll` ms. Latency = time from the lease to its re-delivery; the lease
  // timeout is a configured floor, so the excess over it is what the mechanism costs.
  {
    LeaseQueueOptions o;
    o.key_prefix = "bench:reclaim";
    o.lease_timeout = std::chrono::milliseconds(args.lease_timeout_ms);
    RedisLeaseQueue q(server.client_options(), o);
    const auto poll = std::chrono::milliseconds(args.reclaim_poll_ms);
    std::vector<double> excess_ms;
    for (int i = 0; i < args.reclaim_rounds; ++i) {
      q.enqueue("r" + std::to_string(i), "payload");
      const auto leased = q.lease("dead", 1, std::chrono::milliseconds(100));
      if (leased.empty()) return 1;
      const auto leased_at = Clock::now();
      while (true) {
        const auto back = q.reclaim("live", o.lease_timeout, 16);
        if (!back.empty()) {
          const double ms =
              std::chrono::duration<double, std::milli>(Clock::now() - leased_at).count();
          excess_ms.push_back(ms - static_cast<double>(args.lease_timeout_ms));
          for (const auto& l : back)
            q.complete(l, "r");
          break;
        }
        std::this_thread::sleep_for(poll);  // the reclaim period of a live explorer
      }
    }
    std::sort(excess_ms.begin(), excess_ms.end());
    const double mean = std::accumulate(excess_ms.begin(), excess_ms.end(), 0.0) / excess_ms.size();
    std::printf(
        "reclaim latency over a %d ms lease timeout, reclaim every %d ms, %d rounds: "
        "excess mean %.1f ms, p50 %.1f ms, p95 %.1f ms, max %.1f ms\n",
        args.lease_timeout_ms, args.reclaim_poll_ms, args.reclaim_rounds, mean,
        excess_ms[excess_ms.size() / 2], excess_ms[excess_ms.size() * 95 / 100], excess_ms.back());
    q.destroy();
  }
  return 0;
}
