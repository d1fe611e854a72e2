// Round trip of a reward request to the C++ reward service (spotlight-reward, the embedded task's
// rule-based scorer) and to the reference Python server (tools/reward_server/spotlight_reward.py
// with a score function that returns zeros), through the services' own client (RemoteReward),
// for several images per request. Both servers run as processes on loopback, started by this
// program. Per server and batch size:
//   latency     median seconds of `--calls` sequential requests from one client
//   throughput  images/s of `--clients` clients each sending `--calls` requests at once
// plus, in the same run, the in-process cost of the C++ scorer on the same images (what the C++
// service's round trip spends scoring rather than in the protocol).
// Usage: reward_roundtrip_bench [--sizes 1,8,32,128] [--calls 30] [--clients 4]
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/reward/remote_reward.hpp"
#include "common/reward/reward_function.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "tests/support/process.hpp"

namespace {

using namespace spotlight;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::filesystem::path source_path(const std::string& relative) {
  const char* root = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return std::filesystem::path(root != nullptr ? root : SPOTLIGHT_DEFAULT_SOURCE_DIR) / relative;
}

reward::RemoteReward client(int port) {
  reward::RemoteRewardOptions o;
  o.endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  o.rpc.timeout = std::chrono::milliseconds(30000);
  o.rpc.retries = 0;
  return reward::RemoteReward(o);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{1, 8, 32, 128};
  int calls = 30, clients = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--sizes") {
      sizes.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        sizes.push_back(std::stoi(item));
    } else if (key == "--calls") {
      calls = std::stoi(value);
    } else if (key == "--clients") {
      clients = std::stoi(value);
    } else {
      std::cerr << "unknown option " << key << "\n";
      return 2;
    }
  }
  const auto dir = testing::make_temp_dir("spotlight-reward-bench");
  const task::TaskOptions task;
  const int largest = *std::max_element(sizes.begin(), sizes.end());
  const auto prompts = task::validation_prompts(task, largest);
  std::vector<task::Image> images;
  for (int i = 0; i < largest; ++i)
    images.push_back(task::render(prompts[i], static_cast<uint64_t>(i), task));

  std::ofstream(dir / "zeros.py") << "import numpy as np\n"
                                     "def score(inputs, prompts):\n"
                                     "    return np.zeros(len(prompts))\n";
  const int cpp_port = testing::free_port(), python_port = testing::free_port();
  testing::Process cpp(testing::binary_path("services/reward/spotlight-reward"),
                       {"--set", "reward.bind=tcp://127.0.0.1:" + std::to_string(cpp_port)},
                       dir / "cpp.log");
  testing::Process python(
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3",
      {source_path("tools/reward_server/spotlight_reward.py").string(), "--score",
       (dir / "zeros.py").string() + ":score", "--bind",
       "tcp://127.0.0.1:" + std::to_string(python_port)},
      dir / "python.log");

  nlohmann::json out{{"image", "32x32x3"}, {"calls", calls}, {"clients", clients}};
  auto scorer = reward::make_task_reward(task);
  for (const int n : sizes) {
    const std::vector<task::Prompt> p(prompts.begin(), prompts.begin() + n);
    const std::vector<task::Image> im(images.begin(), images.begin() + n);
    nlohmann::json row{{"images_per_request", n}};
    std::vector<double> inprocess;
    for (int c = 0; c < calls; ++c) {
      const auto start = Clock::now();
      scorer->score(p, im);
      inprocess.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    row["cpp_scorer_in_process_seconds"] = median(inprocess);
    for (const auto& [name, port] :
         {std::pair{"cpp", cpp_port}, std::pair{"python", python_port}}) {
      auto one = client(port);
      for (int attempt = 0;; ++attempt) {  // the first call also waits for the server to be up
        try {
          one.score(p, im);
          break;
        } catch (const std::exception& e) {
          if (attempt > 100) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
      std::vector<double> latency;
      for (int c = 0; c < calls; ++c) {
        const auto start = Clock::now();
        one.score(p, im);
        latency.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      const auto start = Clock::now();
      std::vector<std::thread> threads;
      for (int k = 0; k < clients; ++k) {
        threads.emplace_back([&, port = port] {
          auto mine = client(port);
          for (int c = 0; c < calls; ++c)
            mine.score(p, im);
        });
      }
      for (auto& t : threads)
        t.join();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      row[name] = {{"latency_seconds", median(latency)},
                   {"throughput_images_per_second", clients * calls * n / seconds}};
    }
    row["python_over_cpp_latency"] = row["python"]["latency_seconds"].get<double>() /
                                     row["cpp"]["latency_seconds"].get<double>();
    row["python_over_cpp_throughput"] =
        row["python"]["throughput_images_per_second"].get<double>() /
        row["cpp"]["throughput_images_per_second"].get<double>();
    out["rows"].push_back(row);
  }
  cpp.signal(SIGTERM);
  python.signal(SIGTERM);
  const bool stopped = cpp.wait(std::chrono::seconds(10)) == std::optional<int>(0) &&
                       python.wait(std::chrono::seconds(10)) == std::optional<int>(0);
  out["servers_stopped_cleanly"] = stopped;
  std::cout << out.dump(2) << std::endl;
  std::filesystem::remove_all(dir);
  return stopped ? 0 : 1;
}
