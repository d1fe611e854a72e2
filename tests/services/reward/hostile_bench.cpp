// hostile_bench: issue #13's attacks on a running spotlight-reward process, measured from outside.
// Not a test (no assertions): it prints one JSON line per mode. Give it the binary of another
// build (e.g. main's) to measure "before" in the same session as "after".
//
//   hostile_bench scrape   [--binary PATH] [--idle 100] [--slow 20] [--scrapes 10] [--timeout-s 30]
//                          [--interval-ms 500]
//     /metrics scrape latency (one scrape every interval) while `idle` connections send nothing
//     and `slow` ones send their head one byte every 200 ms (both reconnect when dropped).
//   hostile_bench fairness [--binary PATH] [--heavy 4] [--heavy-images 5000] [--seconds 20]
//                          [--good-images 4]
//     a good client's request latency alone for `seconds`, then beside `heavy` clients (each a
//     process of its own) looping requests of `heavy-images` images for `seconds`; requests
//     completed in each phase; the service's RSS before, at its peak (VmHWM) and after the heavy
//     clients stopped and their requests drained.
//
// Default binary: $SPOTLIGHT_BINARY_DIR/services/reward/spotlight-reward, else this build's.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rpc/client.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/services/reward/reward_requests.hpp"
#include "tests/support/process.hpp"

namespace spotlight::reward {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Args {
  std::string mode;
  std::filesystem::path binary;
  int idle = 100, slow = 20, scrapes = 10, timeout_s = 30, interval_ms = 500;
  int heavy = 4, heavy_images = 5000, seconds = 20, good_images = 4;
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) throw std::invalid_argument("usage: hostile_bench scrape|fairness [options]");
  a.mode = argv[1];
  a.binary = testing::binary_path("services/reward/spotlight-reward");
  for (int i = 2; i < argc; i += 2) {
    const std::string key = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(key + " needs a value");
    const std::string value = argv[i + 1];
    if (key == "--binary")
      a.binary = value;
    else if (key == "--idle")
      a.idle = std::stoi(value);
    else if (key == "--slow")
      a.slow = std::stoi(value);
    else if (key == "--scrapes")
      a.scrapes = std::stoi(value);
    else if (key == "--timeout-s")
      a.timeout_s = std::stoi(value);
    else if (key == "--interval-ms")
      a.interval_ms = std::stoi(value);
    else if (key == "--heavy")
      a.heavy = std::stoi(value);
    else if (key == "--heavy-images")
      a.heavy_images = std::stoi(value);
    else if (key == "--seconds")
      a.seconds = std::stoi(value);
    else if (key == "--good-images")
      a.good_images = std::stoi(value);
    else
      throw std::invalid_argument("unknown option " + key);
  }
  return a;
}

// The service under test, on free ports, its log in a temporary directory.
struct Service {
  explicit Service(const Args& a, std::vector<std::string> extra = {}) {
    dir = testing::make_temp_dir("hostile-bench");
    metrics_port = testing::free_port();
    endpoint = "tcp://127.0.0.1:" + std::to_string(testing::free_port());
    std::vector<std::string> args = {"--set", "reward.bind=" + endpoint, "--set",
                                     "metrics.bind=127.0.0.1:" + std::to_string(metrics_port)};
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<testing::Process>(a.binary, args, dir / "reward.log");
    const auto deadline = Clock::now() + 30s;
    for (;;) {
      try {
        if (testing::http_get("127.0.0.1", metrics_port, "/metrics", 2s).status == 200) break;
      } catch (const std::exception&) {
      }
      if (Clock::now() > deadline || !process->running()) {
        throw std::runtime_error("the service did not start: " + process->log_tail());
      }
      std::this_thread::sleep_for(50ms);  // polling for readiness, not synchronisation
    }
  }
  ~Service() {
    process.reset();
    std::filesystem::remove_all(dir);
  }
  // A field of /proc/<pid>/status in MB (VmRSS, VmHWM).
  double status_mb(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(process->pid()) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
    }
    return -1;
  }

  std::filesystem::path dir;
  int metrics_port = 0;
  std::string endpoint;
  std::unique_ptr<testing::Process> process;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const auto index = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(index, v.size() - 1)];
}

// --- scrape -------------------------------------------------------------------------------------

int connect_nonblocking(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  return fd;
}

int scrape(const Args& a) {
  Service service(a);
  std::atomic<bool> done{false};
  std::atomic<long> reconnects{0};
  std::thread attacker([&] {
    struct Conn {
      int fd;
      bool slow;
      std::size_t sent = 0;
    };
    std::vector<Conn> conns;
    for (int i = 0; i < a.idle + a.slow; ++i)
      conns.push_back(Conn{connect_nonblocking(service.metrics_port), i >= a.idle});
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    auto next_byte = Clock::now();
    while (!done) {
      std::vector<pollfd> fds;
      for (const auto& c : conns)
        fds.push_back(pollfd{c.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 50);
      for (std::size_t i = 0; i < conns.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buffer[512];
        if (::recv(conns[i].fd, buffer, sizeof buffer, 0) > 0) continue;
        ::close(conns[i].fd);  // dropped by the server: come back
        conns[i] = Conn{connect_nonblocking(service.metrics_port), conns[i].slow};
        ++reconnects;
      }
      if (Clock::now() >= next_byte) {
        next_byte = Clock::now() + 200ms;
        for (auto& c : conns) {
          if (!c.slow) continue;
          const char byte = c.sent < head.size() ? head[c.sent] : 'a';
          if (::send(c.fd, &byte, 1, MSG_NOSIGNAL) == 1) ++c.sent;
        }
      }
    }
    for (const auto& c : conns)
      ::close(c.fd);
  });
  std::this_thread::sleep_for(1s);  // let the attack take hold before measuring
  std::vector<double> seconds;
  int timeouts = 0, failures = 0;
  for (int i = 0; i < a.scrapes; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.interval_ms));
    const auto start = Clock::now();
    try {
      const auto r = testing::http_get("127.0.0.1", service.metrics_port, "/metrics",
                                       std::chrono::seconds(a.timeout_s));
      if (r.status != 200) ++failures;
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    } catch (const std::exception&) {
      ++timeouts;  // censored at the timeout
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  done = true;
  attacker.join();
  std::cout << "{\"mode\":\"scrape\",\"binary\":\"" << a.binary.string() << "\",\"idle\":" << a.idle
            << ",\"slow\":" << a.slow << ",\"scrapes\":" << a.scrapes
            << ",\"p50_s\":" << percentile(seconds, 0.5)
            << ",\"max_s\":" << *std::max_element(seconds.begin(), seconds.end())
            << ",\"timeouts\":" << timeouts << ",\"timeout_s\":" << a.timeout_s
            << ",\"non_200\":" << failures << ",\"attacker_reconnects\":" << reconnects.load()
            << "}\n";
  return 0;
}

// --- fairness -----------------------------------------------------------------------------------

struct Phase {
  std::vector<double> seconds;
  int errors = 0;
};

Phase good_client(const std::string& endpoint, const std::string& payload, double seconds) {
  rpc::RpcClientOptions o;
  o.timeout = 60s;
  o.retries = 0;
  rpc::RpcClient client(endpoint, o);
  Phase p;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const auto start = Clock::now();
    try {
      if (!wire::RewardReply::decode(client.call(payload)).ok()) ++p.errors;
    } catch (const std::exception&) {
      ++p.errors;
    }
    p.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return p;
}

std::string phase_json(const Phase& p) {
  std::ostringstream out;
  out << "{\"requests\":" << p.seconds.size() << ",\"errors\":" << p.errors
      << ",\"p50_ms\":" << percentile(p.seconds, 0.5) * 1e3
      << ",\"p99_ms\":" << percentile(p.seconds, 0.99) * 1e3 << ",\"max_ms\":"
      << (p.seconds.empty() ? 0 : *std::max_element(p.seconds.begin(), p.seconds.end())) * 1e3
      << "}";
  return out.str();
}

int fairness(const Args& a) {
  Service service(a);
  const std::string good = testing::rendered_request(a.good_images, "good").encode();
  const double rss_before = service.status_mb("VmRSS");
  const Phase alone = good_client(service.endpoint, good, a.seconds);
  std::vector<std::unique_ptr<testing::Process>> heavies;
  for (int i = 0; i < a.heavy; ++i) {
    heavies.push_back(std::make_unique<testing::Process>(
        testing::binary_path("tests/services/reward/reward_heavy_client"),
        std::vector<std::string>{service.endpoint, std::to_string(a.heavy_images)},
        service.dir / ("heavy-" + std::to_string(i) + ".log")));
  }
  std::this_thread::sleep_for(2s);  // the heavy requests are encoded and sent
  const Phase beside = good_client(service.endpoint, good, a.seconds);
  const double rss_loaded = service.status_mb("VmRSS");
  for (auto& h : heavies)
    h->signal(SIGTERM);
  for (auto& h : heavies)
    h->wait(180s);
  heavies.clear();
  // Their last requests drain (the service answers them to closed connections): give it time,
  // then one more request so a service that trims after the queue empties has done so.
  std::this_thread::sleep_for(std::chrono::seconds(a.seconds));
  good_client(service.endpoint, good, 0.5);
  const double rss_after = service.status_mb("VmRSS");
  const double rss_peak = service.status_mb("VmHWM");
  std::cout << "{\"mode\":\"fairness\",\"binary\":\"" << a.binary.string()
            << "\",\"heavy\":" << a.heavy << ",\"heavy_images\":" << a.heavy_images
            << ",\"good_images\":" << a.good_images << ",\"seconds_per_phase\":" << a.seconds
            << ",\"alone\":" << phase_json(alone) << ",\"beside_heavy\":" << phase_json(beside)
            << ",\"rss_mb\":{\"before\":" << rss_before << ",\"during\":" << rss_loaded
            << ",\"peak\":" << rss_peak << ",\"after\":" << rss_after << "}}\n";
  return 0;
}

}  // namespace
}  // namespace spotlight::reward

int main(int argc, char** argv) {
  try {
    const auto args = spotlight::reward::parse(argc, argv);
    if (args.mode == "scrape") return spotlight::reward::scrape(args);
    if (args.mode == "fairness") return spotlight::reward::fairness(args);
    std::cerr << "unknown mode " << args.mode << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hostile_bench: " << e.what() << "\n";
    return 1;
  }
}
