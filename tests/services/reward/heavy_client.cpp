// reward_heavy_client: one client that loops heavy requests at a reward service until SIGTERM
// (issue #13.4's attack), as a process of its own so that its work does not share the test's or
// the benchmark's threads.
//
//   reward_heavy_client ENDPOINT IMAGES [NICE]
//
// Sends requests of IMAGES rendered 32x32 images (100 distinct prompts, repeated), one at a time,
// each as soon as the previous one is answered (or refused). Prints "ready" once the first request
// is encoded. With NICE, it lowers its CPU priority by
// that much first.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include <sys/resource.h>

#include "common/rpc/client.hpp"
#include "tests/services/reward/reward_requests.hpp"

namespace {
std::atomic<bool> g_stop{false};
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: reward_heavy_client ENDPOINT IMAGES [NICE]\n");
    return 2;
  }
  std::signal(SIGTERM, [](int) { g_stop = true; });
  if (argc == 4) ::setpriority(PRIO_PROCESS, 0, std::stoi(argv[3]));
  try {
    const std::string payload =
        spotlight::testing::rendered_request(std::stoi(argv[2]), "heavy").encode();
    spotlight::rpc::RpcClientOptions options;
    options.timeout = std::chrono::seconds(120);
    options.retries = 0;
    spotlight::rpc::RpcClient client(argv[1], options);
    std::printf("ready\n");
    std::fflush(stdout);
    while (!g_stop) {
      try {
        client.call(payload);
      } catch (const std::exception&) {
        // Refused or timed out: keep the pressure on.
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reward_heavy_client: %s\n", e.what());
    return 1;
  }
}
