// The spotlight-reward binary as a process: start it on free ports, score through RemoteReward,
// scrape its metrics, stop it with SIGTERM. Finds the binary through SPOTLIGHT_BINARY_DIR (set by
// ctest).

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/process/line_reader.hpp"
#include "common/process/process.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/rpc/client.hpp"
#include "common/rpc/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "common/wire/messages.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/curve_config.hpp"
#include "tests/common/metrics/http_get.hpp"
#include "tests/services/reward/reward_requests.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::reward {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kStartTimeout = 20s;
constexpr auto kStopTimeout = 10s;  // SIGTERM to exit; the HTTP listener alone may take ~2 s

std::optional<std::string> binary_path() {
  const char* dir = std::getenv("SPOTLIGHT_BINARY_DIR");
  if (dir == nullptr) return std::nullopt;
  return std::string(dir) + "/services/reward/spotlight-reward";
}

// The reward binary as a child process (common/process), its stdout and stderr on a pipe. Killed
// (SIGKILL) when destroyed if still running, and when the test process dies (PR_SET_PDEATHSIG).
class RewardProcess {
 public:
  explicit RewardProcess(const std::vector<std::string>& args)
      : process_(options(args)), lines_(process_.output_fd()) {}

  // Reads output until a line matches `pattern`; returns its first capture group, or nullopt
  // when the deadline passes or the process closes its output first.
  std::optional<std::string> wait_for_line(const std::regex& pattern, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left =
          std::max(std::chrono::milliseconds(0),
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
      const auto line = lines_.next(left);
      if (!line) return std::nullopt;
      output_ += *line + "\n";
      std::smatch m;
      if (std::regex_search(*line, m, pattern)) return m.size() > 1 ? m[1].str() : *line;
    }
  }

  // Everything the process wrote (reads the rest once it has exited).
  const std::string& output() {
    if (process_.exit_status()) {
      while (const auto line = lines_.next(std::chrono::milliseconds(0)))
        output_ += *line + "\n";
    }
    return output_;
  }

  void signal(int signo) { process_.signal(signo); }
  pid_t pid() const { return process_.pid(); }

  // The wait status (as waitpid() reports it) once the process has exited within `timeout`, else
  // nullopt.
  std::optional<int> wait_exit(Clock::duration timeout) {
    const auto s =
        process_.wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    if (!s) return std::nullopt;
    return W_EXITCODE(s->code, s->signal);
  }

 private:
  static process::ProcessOptions options(const std::vector<std::string>& args) {
    process::ProcessOptions o;
    o.argv = {*binary_path()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env["SPOTLIGHT_LOG_LEVEL"] = "info";
    o.pipe_stdout = true;
    o.pipe_stderr = true;
    return o;
  }

  process::Process process_;
  process::LineReader lines_;
  std::string output_;
};

#define SPOTLIGHT_REQUIRE_REWARD_BINARY()                                          \
  do {                                                                             \
    const auto p = binary_path();                                                  \
    if (!p) GTEST_SKIP() << "SPOTLIGHT_BINARY_DIR is not set (run through ctest)"; \
    if (::access(p->c_str(), X_OK) != 0) FAIL() << "no executable at " << *p;      \
  } while (0)

TEST(RewardBinary, ScoresThroughRemoteRewardAndStopsCleanlyOnSigterm) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  RewardProcess process({"--set", "reward.bind=tcp://127.0.0.1:*", "--set",
                         "metrics.bind=127.0.0.1:0", "--set", "reward.batch_window_ms=1"});
  const auto metrics_url =
      process.wait_for_line(std::regex(R"(metrics on (http://\S+))"), kStartTimeout);
  ASSERT_TRUE(metrics_url) << process.output();
  const auto endpoint =
      process.wait_for_line(std::regex(R"(listening on (tcp://\S+))"), kStartTimeout);
  ASSERT_TRUE(endpoint) << process.output();

  RemoteRewardOptions options;
  options.endpoint = *endpoint;
  options.rpc.timeout = 5s;
  RemoteReward remote(options);
  const task::TaskOptions task;
  const task::PromptGenerator generator(task);
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    prompts.push_back(generator.sample(seed));
    images.push_back(seed % 2 == 0 ? task::render(prompts.back(), seed, task)
                                   : task::Image::blank(task.image_size, task.image_size));
  }
  const auto scores = remote.score(prompts, images);
  ASSERT_EQ(scores.size(), 6u);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(scores[i].correct, i % 2 == 0) << prompts[i].text();
    if (i % 2 == 0) {
      EXPECT_EQ(scores[i].reward, 1.0) << prompts[i].text();
    } else {
      EXPECT_LT(scores[i].reward, 0.25) << prompts[i].text();
    }
  }

  // "http://127.0.0.1:PORT/metrics"
  std::smatch m;
  ASSERT_TRUE(std::regex_match(*metrics_url, m, std::regex(R"(http://([0-9.]+):(\d+)/metrics)")));
  const auto scrape = testing::http_get(m[1].str(), std::stoi(m[2].str()), "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("spotlight_reward_images_scored_total 6"), std::string::npos)
      << scrape.body;

  const auto sent = Clock::now();
  process.signal(SIGTERM);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status) << "still running " << kStopTimeout.count() << " s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status)) << "status " << *status << "\n" << process.output();
  EXPECT_EQ(WEXITSTATUS(*status), 0) << process.output();
  EXPECT_LT(Clock::now() - sent, 5s);
  EXPECT_NE(process.output().find("stopping"), std::string::npos) << process.output();
}

TEST(RewardBinary, SigintStopsAnIdleServiceToo) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  RewardProcess process(
      {"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind="});  // no HTTP
  ASSERT_TRUE(process.wait_for_line(std::regex("listening on"), kStartTimeout)) << process.output();
  process.signal(SIGINT);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << process.output();
}

TEST(RewardBinary, RejectsAnUnusableConfigurationAtStart) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  struct Case {
    std::vector<std::string> args;
    std::string in_message;
  };
  const std::vector<Case> cases = {
      {{"--set", "reward.functions=[task, clip]", "--set", "reward.weights=[1, 1]"}, "clip"},
      {{"--set", "reward.weights=[1, 2]"}, "reward.weights"},
      {{"--set", "reward.max_batch=0"}, "reward.max_batch"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind="});
    RewardProcess process(args);
    const auto status = process.wait_exit(kStopTimeout);
    ASSERT_TRUE(status) << c.in_message;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << process.output();
    EXPECT_NE(process.output().find(c.in_message), std::string::npos) << process.output();
  }
}

// Scores 2 images through `remote`; true when both came back.
bool scores_two(RemoteReward& remote) {
  const task::TaskOptions task;
  const task::PromptGenerator generator(task);
  std::vector<task::Prompt> prompts = {generator.sample(1), generator.sample(2)};
  std::vector<task::Image> images = {task::render(prompts[0], 1, task),
                                     task::render(prompts[1], 2, task)};
  return remote.score(prompts, images).size() == 2;
}

// "tcp://127.0.0.1:PORT" -> PORT; "http://127.0.0.1:PORT/metrics" -> PORT.
int port_of(const std::string& url) {
  std::smatch m;
  if (!std::regex_search(url, m, std::regex(R"(:(\d+))"))) return -1;
  return std::stoi(m[1].str());
}

// The value of the sample `series` ("name{labels}") in a text exposition, -1 when absent.
double sample(const std::string& text, const std::string& series) {
  const std::string line = "\n" + series + " ";
  const std::size_t at = ("\n" + text).find(line);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + line.size() - 1));
}

// Sends `frames` on a DEALER and returns the status byte of the reply (-1: no reply in time).
int rpc_status(zmq::socket_t& dealer, const std::vector<std::string>& frames) {
  std::vector<zmq::message_t> out;
  for (const auto& f : frames)
    out.emplace_back(f.data(), f.size());
  zmq::send_multipart(dealer, out);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(kStartTimeout)) == 0) return -1;
  std::vector<zmq::message_t> reply;
  if (!zmq::recv_multipart(dealer, std::back_inserter(reply))) return -1;
  if (reply.size() != 3 || reply[1].size() != 10) return -2;
  return reply[1].data<std::uint8_t>()[9];
}

std::string request_header(std::uint64_t id) {
  std::string h(1, '\x01');
  for (int i = 7; i >= 0; --i)
    h.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  return h;
}

// Connects a raw TCP socket and sends `bytes`. With `expect_close`, waits until the peer closes
// the connection and returns whether it did; else closes it at once and returns true.
bool send_raw(int port, const std::string& bytes, bool expect_close) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval tv{static_cast<time_t>(kStartTimeout.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    ok = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
    char buffer[256];
    while (ok && expect_close) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) continue;  // the server's ZMTP greeting
      ok = n == 0 || errno == ECONNRESET;
      break;
    }
  }
  ::close(fd);
  return ok;
}

// A ZMTP 3.0 greeting asking for the CURVE mechanism (the service speaks NULL): a protocol error.
std::string zmtp_greeting_with_wrong_mechanism() {
  std::string g(64, '\0');
  g[0] = '\xff';
  g[9] = '\x7f';
  g[10] = 3;  // version 3.0
  g.replace(12, 5, "CURVE");
  return g;
}

// Garbage and oversized messages on both listening sockets of the real service (ZeroMQ ROUTER and
// HTTP /metrics): each is rejected with an answer where one is possible, counted by reason, and
// the service keeps answering valid requests.
TEST(RewardBinary, HostileInputOnEverySocketIsRejectedCountedAndServingContinues) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  RewardProcess process(
      {"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind=127.0.0.1:0", "--set",
       "reward.batch_window_ms=1", "--set", "reward.max_request_bytes=1048576", "--set",
       "metrics.max_request_bytes=1024", "--set", "reward.handshake_timeout_ms=300"});
  const auto metrics_url =
      process.wait_for_line(std::regex(R"(metrics on (http://\S+))"), kStartTimeout);
  ASSERT_TRUE(metrics_url) << process.output();
  const auto endpoint =
      process.wait_for_line(std::regex(R"(listening on (tcp://\S+))"), kStartTimeout);
  ASSERT_TRUE(endpoint) << process.output();
  const int http_port = port_of(*metrics_url);

  // ZeroMQ: raw TCP garbage. A greeting libzmq can judge is refused at once; other bytes never
  // complete a handshake, and the peer is dropped after reward.handshake_timeout_ms.
  const int zmq_port = port_of(*endpoint);
  EXPECT_TRUE(send_raw(zmq_port, zmtp_greeting_with_wrong_mechanism(), true));
  EXPECT_TRUE(send_raw(zmq_port, std::string(4096, '\x7f'), true));
  EXPECT_TRUE(send_raw(zmq_port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", true));
  // ZeroMQ: well-formed ZMTP, broken RPC framing or payloads.
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(*endpoint);
  const int kMalformed = static_cast<int>(rpc::RpcStatus::kMalformed);
  EXPECT_EQ(rpc_status(dealer, {"junk"}), kMalformed);
  EXPECT_EQ(rpc_status(dealer, {"x", request_header(1), "p"}), kMalformed);
  EXPECT_EQ(rpc_status(dealer, {"", "short", "p"}), kMalformed);
  EXPECT_EQ(rpc_status(dealer, {"", request_header(2), std::string(2 << 20, 'x')}),
            static_cast<int>(rpc::RpcStatus::kTooLarge));
  // Passes the RPC layer, fails to decode: an ok RPC carrying an error RewardReply.
  EXPECT_EQ(rpc_status(dealer, {"", request_header(3), "\xc1 not msgpack"}), 0);
  // HTTP: an oversized head and a garbage request line.
  const std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(64 * 1024, 'a');
  EXPECT_EQ(testing::http_exchange("127.0.0.1", http_port, huge).substr(0, 12), "HTTP/1.0 431");
  EXPECT_EQ(
      testing::http_exchange("127.0.0.1", http_port, "\x16\x03\x01\x02\xff\r\n\r\n").substr(0, 12),
      "HTTP/1.0 400");

  // Still serving, and every reject is counted.
  RemoteRewardOptions options;
  options.endpoint = *endpoint;
  options.rpc.timeout = 5s;
  RemoteReward remote(options);
  EXPECT_TRUE(scores_two(remote));
  const auto scrape = testing::http_get("127.0.0.1", http_port, "/metrics");
  ASSERT_EQ(scrape.status, 200);
  const std::string& text = scrape.body;
  const std::string rejected = "spotlight_reward_rejected_messages_total";
  EXPECT_EQ(sample(text, rejected + "{reason=\"frame_count\"}"), 1) << text;
  EXPECT_EQ(sample(text, rejected + "{reason=\"delimiter\"}"), 1) << text;
  EXPECT_EQ(sample(text, rejected + "{reason=\"header\"}"), 1) << text;
  EXPECT_EQ(sample(text, rejected + "{reason=\"too_large\"}"), 1) << text;
  EXPECT_EQ(sample(text, rejected + "{reason=\"not_msgpack\"}"), 1) << text;
  const std::string http = "spotlight_reward_rejected_http_requests_total";
  EXPECT_EQ(sample(text, http + "{reason=\"too_large\"}"), 1) << text;
  EXPECT_EQ(sample(text, http + "{reason=\"bad_request\"}"), 1) << text;
  EXPECT_EQ(sample(text, "spotlight_reward_images_scored_total"), 2) << text;
  // The refused greeting and the two timed-out garbage peers are failed handshakes. The server
  // counts monitor events asynchronously: poll for them.
  const std::string handshake = rejected + "{reason=\"handshake\"}";
  const auto deadline = Clock::now() + kStartTimeout;
  double handshakes = sample(text, handshake);
  while (handshakes < 3 && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    handshakes = sample(testing::http_get("127.0.0.1", http_port, "/metrics").body, handshake);
  }
  EXPECT_EQ(handshakes, 3) << text;

  process.signal(SIGTERM);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << process.output();
}

class KeyDir {
 public:
  KeyDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "spotlight-keys-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~KeyDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// CURVE on the reward service with keys from files made by spotlight-keygen: an encrypted client
// with the server's public key is answered; a client with another server key, or in plain text,
// is refused (its handshake fails, so it times out) and the service keeps serving.
TEST(RewardBinary, CurveEncryptionWithKeyFilesAndWrongKeysRefused) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  if (!zmqio::curve_available()) GTEST_SKIP() << "libzmq built without CURVE";
  KeyDir keys;
  const std::string keygen =
      std::string(std::getenv("SPOTLIGHT_BINARY_DIR")) + "/tools/keygen/spotlight-keygen";
  for (const std::string name : {"reward", "other"}) {
    testing::Process run(keygen, {keys / (name + ".key"), keys / (name + ".pub")},
                         keys / "keygen.log");
    ASSERT_EQ(run.wait(30s), std::optional<int>(0)) << run.log_tail();
  }
  EXPECT_EQ(
      std::filesystem::status(keys / "reward.key").permissions() & std::filesystem::perms::all,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  RewardProcess process({"--set", "reward.bind=tcp://127.0.0.1:*", "--set",
                         "metrics.bind=", "--set", "reward.batch_window_ms=1", "--set",
                         "reward.curve.server_secret_file=" + keys / "reward.key"});
  const auto endpoint =
      process.wait_for_line(std::regex(R"(listening on (tcp://\S+))"), kStartTimeout);
  ASSERT_TRUE(endpoint) << process.output();

  const auto client = [&](std::optional<std::string> server_public_file) {
    RemoteRewardOptions options;
    options.endpoint = *endpoint;
    options.rpc.timeout = kStartTimeout;  // a refused handshake ends an attempt at once
    options.rpc.retries = 0;
    if (server_public_file) {
      zmqio::CurveClientKeys k;
      k.own = zmqio::generate_curve_keypair();
      k.server_public_key = zmqio::load_curve_public_key(*server_public_file);
      options.rpc.curve.client = k;
    }
    return std::make_unique<RemoteReward>(options);
  };
  auto good = client(keys / "reward.pub");
  EXPECT_TRUE(scores_two(*good));
  const auto refused = [&](std::optional<std::string> server_public_file) {
    try {
      scores_two(*client(std::move(server_public_file)));
    } catch (const rpc::RpcConnectionClosed& e) {
      return e.handshake_failed();
    }
    return false;
  };
  EXPECT_TRUE(refused(keys / "other.pub"));  // wrong server key
  EXPECT_TRUE(refused(std::nullopt));        // plain text
  EXPECT_TRUE(scores_two(*good));

  process.signal(SIGTERM);
  const auto status = process.wait_exit(kStopTimeout);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << process.output();

  // A key file that is not a key pair stops the service at start, naming the key.
  RewardProcess bad({"--set", "reward.bind=tcp://127.0.0.1:*", "--set", "metrics.bind=", "--set",
                     "reward.curve.server_secret_file=" + keys / "reward.pub"});
  const auto bad_status = bad.wait_exit(kStopTimeout);
  ASSERT_TRUE(bad_status);
  EXPECT_TRUE(WIFEXITED(*bad_status) && WEXITSTATUS(*bad_status) == 2) << bad.output();
  EXPECT_NE(bad.output().find("reward.curve.server_secret_file"), std::string::npos)
      << bad.output();
}

// A field of /proc/<pid>/status in MiB (VmRSS: resident now, VmHWM: the peak so far).
double status_mib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return -1;
}

// `mib` MiB that read as zeros and cost this process no memory (untouched anonymous pages), for
// sending large frames without copying them.
class ZeroBytes {
 public:
  explicit ZeroBytes(std::size_t mib) : size_(mib << 20) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  }
  ~ZeroBytes() { ::munmap(data_, size_); }
  // A frame of `bytes` of them, sent without a copy.
  zmq::message_t frame(std::size_t bytes) const {
    return zmq::message_t(
        data_, std::min(bytes, size_), [](void*, void*) {}, nullptr);
  }

 private:
  std::size_t size_;
  void* data_;
};

// The reward service with free ports, its endpoint and metrics port read from its log.
struct StartedReward {
  explicit StartedReward(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--set", "reward.bind=tcp://127.0.0.1:*", "--set",
                                     "metrics.bind=127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<RewardProcess>(args);
    const auto url =
        process->wait_for_line(std::regex(R"(metrics on (http://\S+))"), kStartTimeout);
    const auto ep =
        process->wait_for_line(std::regex(R"(listening on (tcp://\S+))"), kStartTimeout);
    if (!url || !ep) throw std::runtime_error("no start: " + process->output());
    http_port = port_of(*url);
    endpoint = *ep;
  }
  double metric(const std::string& series) const {
    return sample(testing::http_get("127.0.0.1", http_port, "/metrics").body, series);
  }
  bool serves() const {
    RemoteRewardOptions options;
    options.endpoint = endpoint;
    options.rpc.timeout = 10s;
    RemoteReward remote(options);
    return scores_two(remote);
  }
  // A request without images (fits any max_request_bytes) is answered.
  bool answers() const {
    rpc::RpcClientOptions options;
    options.timeout = 10s;
    rpc::RpcClient client(endpoint, options);
    wire::RewardRequest empty;
    empty.request_id = "empty";
    return wire::RewardReply::decode(client.call(empty.encode())).ok();
  }
  double rss() const { return status_mib(process->pid(), "VmRSS"); }

  std::unique_ptr<RewardProcess> process;
  std::string endpoint;
  int http_port = 0;
};

// libzmq hands over a multipart message only once its last frame arrived: one message of 1000
// frames of 1 MiB, each under the frame limit, raised the service's peak RSS by 1 GiB before it
// was refused (frame_count). The connection is now closed once its unanswered bytes pass the
// message limit, and the peak stays within that limit.
TEST(RewardBinary, AMessageOfManyLargeFramesIsCutOffAtTheMessageLimit) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  // A small limit, so the message's 200 MiB dwarf it: max_request_bytes 4 MiB, frames up to
  // 5 MiB, messages up to 5 MiB + 64 KiB.
  StartedReward service({"--set", "reward.max_request_bytes=4194304"});
  ASSERT_TRUE(service.serves());
  const double peak_before = status_mib(service.process->pid(), "VmHWM");
  const ZeroBytes zeros(1);
  {
    zmq::context_t ctx;
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(service.endpoint);
    constexpr int kFrames = 200;
    const std::string header = request_header(7);
    dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);
    for (int i = 0; i < kFrames; ++i) {
      dealer.send(zeros.frame(1 << 20),
                  i + 1 < kFrames ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    // The connection is closed once it passes the limit (no answer is possible: the service has
    // not seen a whole message), and counted.
    EXPECT_TRUE(testing::wait_for(
        [&] {
          return service.metric(
                     "spotlight_reward_rejected_messages_total{reason=\"message_size\"}") >= 1;
        },
        kStartTimeout));
  }
  EXPECT_EQ(service.metric("spotlight_reward_rejected_messages_total{reason=\"frame_count\"}"), 0);
  // Memory: the service held at most the limit of the message, not its 200 MiB (before the limit
  // its peak grew by all of them).
  const double peak_after = status_mib(service.process->pid(), "VmHWM");
  EXPECT_LT(peak_after - peak_before, 5 + 16) << "peak " << peak_before << " -> " << peak_after;
  EXPECT_TRUE(service.serves());
}

// Issue #13 (4): with reward.max_request_bytes=1024, a 100 MiB frame was still buffered whole
// before it was rejected. libzmq now refuses a frame above max_request_bytes + 1 MiB as soon as
// its size arrives: the peak memory of the service does not grow by it.
TEST(RewardBinary, AFrameFarAboveTheRequestLimitIsRefusedBeforeItIsBuffered) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  StartedReward service({"--set", "reward.max_request_bytes=1024"});
  const double peak_before = status_mib(service.process->pid(), "VmHWM");
  const ZeroBytes zeros(100);
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(service.endpoint);
  const std::string header = request_header(8);
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);
  dealer.send(zeros.frame(100 << 20), zmq::send_flags::none);
  // The connection is dropped: no answer comes (the service cannot answer what it refused to
  // read); a small request on a fresh connection is served meanwhile.
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(2000)), 0);
  EXPECT_TRUE(service.answers());
  const double peak_after = status_mib(service.process->pid(), "VmHWM");
  EXPECT_LT(peak_after, peak_before + 32)
      << "peak RSS " << peak_before << " -> " << peak_after << " MiB";
}

// Issue #13 (4): after four clients looped heavy requests, 1.57 of the 1.86 GB peak stayed
// resident. Requests are held within the budget and freed memory goes back to the system.
TEST(RewardBinary, MemoryGoesBackAfterHeavyClientsLeave) {
  SPOTLIGHT_REQUIRE_REWARD_BINARY();
  StartedReward service;
  ASSERT_TRUE(service.serves());
  const double before = service.rss();
  const auto logs = testing::make_temp_dir("reward-heavy");
  {
    std::vector<testing::Process> heavy;
    for (int c = 0; c < 4; ++c) {
      heavy.emplace_back(testing::binary_path("tests/services/reward/reward_heavy_client"),
                         std::vector<std::string>{service.endpoint, "1000"},
                         logs / ("heavy-" + std::to_string(c)));
    }
    // Each heavy client has had two requests answered.
    EXPECT_TRUE(testing::wait_for(
        [&] { return service.metric("spotlight_reward_images_scored_total") >= 8000; }, 180s));
    for (auto& h : heavy)
      h.signal(SIGTERM);
    for (auto& h : heavy)
      EXPECT_TRUE(h.wait(120s).has_value()) << h.log_tail();
  }
  std::filesystem::remove_all(logs);
  const double peak = status_mib(service.process->pid(), "VmHWM");
  EXPECT_GT(peak, before + 24) << "the load did not take memory: nothing was tested";
  double after = 0;
  EXPECT_TRUE(testing::wait_for(
      [&] {
        return service.metric("spotlight_reward_queued_requests") <= 0 &&
               (after = service.rss()) < before + 48;
      },
      60s))
      << "RSS " << before << " MiB before, peak " << peak << ", " << after << " MiB after";
  EXPECT_TRUE(service.serves());
}

}  // namespace
}  // namespace spotlight::reward
