#include "common/metrics/metrics.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/config/config.hpp"
#include "common/metrics/server.hpp"
#include "tests/common/metrics/http_get.hpp"

namespace spotlight::metrics {
namespace {

TEST(MetricsNames, AcceptsTheHousePattern) {
  Registry r("reward");
  EXPECT_NO_THROW(r.counter("spotlight_reward_requests_total", "h"));
  EXPECT_NO_THROW(r.counter("spotlight_reward_images_scored_total", "h"));
  EXPECT_NO_THROW(r.counter("spotlight_reward_busy_seconds_total", "h"));
  EXPECT_NO_THROW(r.gauge("spotlight_reward_reward_mean", "h"));
  EXPECT_NO_THROW(r.gauge("spotlight_reward_queue2_depth", "h"));
  EXPECT_NO_THROW(r.histogram("spotlight_reward_score_seconds", "h", {0.1, 1.0}));
}

TEST(MetricsNames, RejectsEverythingElseNamingTheMetric) {
  Registry r("reward");
  const std::vector<std::string> bad_counters = {
      "spotlight_reward_total",            // no <what>
      "spotlight_trainer_requests_total",  // another service
      "reward_requests_total",             // no prefix
      "spotlight_reward_requests",         // counter without _total
      "spotlight_reward_Requests_total",   // upper case
      "spotlight_reward__requests_total",  // empty segment
      "spotlight_reward_requests_total_",  // trailing '_'
      "spotlight_reward_1st_total",        // <what> starts with a digit
      "spotlight_reward_req-s_total",      // bad character
      "",
  };
  for (const auto& name : bad_counters) {
    try {
      r.counter(name, "h");
      ADD_FAILURE() << "accepted counter name '" << name << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(r.gauge("spotlight_reward_requests_total", "h"), std::invalid_argument);
  EXPECT_THROW(r.gauge("spotlight_reward_mean", "h"), std::invalid_argument);  // no unit
  EXPECT_THROW(r.histogram("spotlight_reward_latency_total", "h", {1.0}), std::invalid_argument);
  EXPECT_THROW(r.counter("spotlight_reward_errors_total", "h", {{"__kind", "x"}}),
               std::invalid_argument);
  EXPECT_THROW(r.counter("spotlight_reward_errors_total", "h", {{"bad-label", "x"}}),
               std::invalid_argument);
}

TEST(MetricsNames, ServiceMustBeOneLowerCaseSegment) {
  EXPECT_THROW(Registry(""), std::invalid_argument);
  EXPECT_THROW(Registry("Reward"), std::invalid_argument);
  EXPECT_THROW(Registry("re_ward"), std::invalid_argument);
  EXPECT_THROW(Registry("9reward"), std::invalid_argument);
  EXPECT_EQ(Registry("explorer2").service(), "explorer2");
}

TEST(MetricsRegistry, SameNameAndLabelsIsTheSameMetric) {
  Registry r("reward");
  Counter a = r.counter("spotlight_reward_errors_total", "Errors.", {{"kind", "a"}});
  Counter a2 = r.counter("spotlight_reward_errors_total", "Errors.", {{"kind", "a"}});
  Counter b = r.counter("spotlight_reward_errors_total", "Errors.", {{"kind", "b"}});
  a.inc();
  a2.inc(2);
  b.inc(5);
  EXPECT_EQ(a.value(), 3.0);
  EXPECT_EQ(a2.value(), 3.0);
  EXPECT_EQ(b.value(), 5.0);
  a.inc(-1);  // counters never go down
  EXPECT_EQ(a.value(), 3.0);
  EXPECT_THROW(r.gauge("spotlight_reward_errors_total", "x"), std::invalid_argument);
}

TEST(MetricsRegistry, HandlesUpdateAndDetachedHandlesDoNothing) {
  Registry r("reward");
  Gauge g = r.gauge("spotlight_reward_reward_mean", "h");
  g.set(0.25);
  g.inc(1);
  g.dec(0.5);
  EXPECT_DOUBLE_EQ(g.value(), 0.75);
  Histogram h =
      r.histogram("spotlight_reward_score_seconds", "h", exponential_buckets(1e-3, 10, 4));
  h.observe(0.5);
  h.observe(2.0);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_DOUBLE_EQ(h.sum(), 2.5);

  Counter c;
  Gauge dg;
  Histogram dh;
  c.inc();
  dg.set(3);
  dh.observe(1);
  EXPECT_EQ(c.value(), 0.0);
  EXPECT_EQ(dg.value(), 0.0);
  EXPECT_EQ(dh.count(), 0u);
}

TEST(MetricsRegistry, ConcurrentUpdatesAreNotLost) {
  Registry r("reward");
  Counter c = r.counter("spotlight_reward_requests_total", "h");
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&r] {
      // Creating handles concurrently is safe too.
      Counter mine = r.counter("spotlight_reward_requests_total", "h");
      for (int i = 0; i < 1000; ++i)
        mine.inc();
    });
  }
  threads.clear();
  EXPECT_EQ(c.value(), 4000.0);
}

TEST(MetricsRegistry, BucketsAreValidated) {
  Registry r("reward");
  EXPECT_THROW(r.histogram("spotlight_reward_a_seconds", "h", {}), std::invalid_argument);
  EXPECT_THROW(r.histogram("spotlight_reward_a_seconds", "h", {1.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(exponential_buckets(0, 2, 3), std::invalid_argument);
  EXPECT_THROW(linear_buckets(0, 0, 3), std::invalid_argument);
  EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(linear_buckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
}

TEST(MetricsRegistry, TextExpositionHasNamesLabelsAndValues) {
  Registry r("reward");
  r.counter("spotlight_reward_errors_total", "Error replies.", {{"kind", "bad_prompt"}}).inc(7);
  r.histogram("spotlight_reward_batch_size_requests", "Batch sizes.", {1, 2, 4}).observe(3);
  const std::string text = r.text();
  EXPECT_NE(text.find("# TYPE spotlight_reward_errors_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("spotlight_reward_errors_total{kind=\"bad_prompt\"} 7"), std::string::npos)
      << text;
  EXPECT_NE(text.find("spotlight_reward_batch_size_requests_bucket{le=\"4\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("spotlight_reward_batch_size_requests_bucket{le=\"2\"} 0"), std::string::npos)
      << text;
}

TEST(MetricsServer, ServesTheRegistryOverHttpOnAPickedPort) {
  Registry r("reward");
  Counter c = r.counter("spotlight_reward_requests_total", "Requests.");
  auto server = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(server->port()));
  EXPECT_EQ(server->url(), "http://" + server->address() + "/metrics");

  c.inc(42);
  const auto response = testing::http_get("127.0.0.1", server->port(), "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_NE(response.body.find("spotlight_reward_requests_total 42"), std::string::npos)
      << response.body;
  // Metrics created after the server started are served too.
  r.gauge("spotlight_reward_reward_mean", "Mean.").set(0.5);
  EXPECT_NE(testing::http_get("127.0.0.1", server->port(), "/metrics")
                .body.find("spotlight_reward_reward_mean 0.5"),
            std::string::npos);
}

TEST(MetricsServer, BindProblemsAreReported) {
  Registry r("reward");
  EXPECT_EQ(MetricsServer::start(r, MetricsServerOptions{""}), nullptr);  // disabled
  auto first = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});
  auto second = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});
  EXPECT_NE(first->port(), second->port());
  try {
    MetricsServer taken(r, MetricsServerOptions{first->address()});
    ADD_FAILURE() << "listened twice on " << first->address();
  } catch (const MetricsError& e) {
    EXPECT_NE(std::string(e.what()).find(first->address()), std::string::npos) << e.what();
  }
  for (const std::string bad : {"9100", "127.0.0.1:", ":9100", "127.0.0.1:65536",
                                "127.0.0.1:9100,127.0.0.1:9101", "127.0.0.1:91s", "::1:0"}) {
    EXPECT_TRUE(bind_problem(bad).has_value()) << bad;
    EXPECT_THROW(MetricsServer(r, MetricsServerOptions{bad}), std::invalid_argument) << bad;
  }
  EXPECT_FALSE(bind_problem("").has_value());
  EXPECT_FALSE(bind_problem("0.0.0.0:9100").has_value());
  EXPECT_FALSE(bind_problem("[::1]:0").has_value());
  EXPECT_FALSE(bind_problem("metrics-host:9100").has_value());
}

TEST(MetricsSchema, ValidatesTheBindKey) {
  const config::Schema schema = metrics_schema();
  const auto defaults = config::Config::load(schema);
  EXPECT_EQ(metrics_server_options(defaults).bind, kDefaultMetricsBind);
  EXPECT_EQ(config::Config::load(metrics_schema("0.0.0.0:9100")).get_string("metrics.bind"),
            "0.0.0.0:9100");
  config::ConfigSources disabled;
  disabled.overrides = {"metrics.bind="};
  EXPECT_EQ(metrics_server_options(config::Config::load(schema, disabled)).bind, "");
  config::ConfigSources bad;
  bad.overrides = {"metrics.bind=localhost"};
  try {
    config::Config::load(schema, bad);
    ADD_FAILURE() << "accepted metrics.bind=localhost";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "metrics.bind");
  }
}

// The status code of a raw HTTP answer ("HTTP/1.0 431 ..."), 0 when there was none.
int status_of(const std::string& raw) {
  if (raw.rfind("HTTP/", 0) != 0 || raw.size() < 12) return 0;
  return std::stoi(raw.substr(raw.find(' ') + 1, 3));
}

// Extracts the value of one sample line ("name{labels} value") from a text exposition.
double sample(const std::string& text, const std::string& series) {
  const std::string line = "\n" + series + " ";  // not the # HELP / # TYPE lines
  const std::size_t at = ("\n" + text).find(line);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + line.size() - 1));
}

TEST(MetricsServer, HostileRequestsAreRejectedCountedAndServingContinues) {
  Registry r("reward");
  r.counter("spotlight_reward_requests_total", "Requests.").inc(3);
  MetricsServerOptions options{"127.0.0.1:0"};
  options.max_request_bytes = 512;
  options.request_timeout = std::chrono::milliseconds(300);
  auto server = MetricsServer::start(r, options);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const auto exchange = [&](const std::string& request) {
    return testing::http_exchange("127.0.0.1", port, request);
  };
  // Oversized head (no blank line within the cap): 431, whatever follows.
  EXPECT_EQ(status_of(exchange("GET /metrics HTTP/1.1\r\nX: " + std::string(100000, 'a'))), 431);
  EXPECT_EQ(status_of(exchange("\x16\x03\x01garbage\r\n\r\n")), 400);  // e.g. a TLS hello
  EXPECT_EQ(status_of(exchange("GET metrics HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(status_of(exchange("DELETE /metrics HTTP/1.1\r\n\r\n")), 405);
  EXPECT_EQ(status_of(exchange("GET /admin HTTP/1.1\r\n\r\n")), 404);
  // A client that never finishes its head is dropped without an answer (after request_timeout;
  // the exchange returns when the server closes the connection).
  EXPECT_EQ(exchange("GET /metrics HTTP/1.1\r\n"), "");

  const auto response = testing::http_get("127.0.0.1", port, "/metrics");
  ASSERT_EQ(response.status, 200);
  const std::string& text = response.body;
  EXPECT_EQ(sample(text, "spotlight_reward_requests_total"), 3) << text;
  const std::string family = "spotlight_reward_rejected_http_requests_total";
  EXPECT_EQ(sample(text, family + "{reason=\"too_large\"}"), 1) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"bad_request\"}"), 2) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"method\"}"), 1) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"not_found\"}"), 1) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"timeout\"}"), 1) << text;
}

TEST(MetricsServer, BindsOnlyTheConfiguredAddress) {
  Registry r("reward");
  auto server = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  // Reachable on loopback, not on another local address of this host (when it has one).
  EXPECT_EQ(testing::http_get("127.0.0.1", server->port(), "/metrics").status, 200);
  EXPECT_THROW(testing::http_get("127.0.0.2", server->port(), "/metrics"), std::runtime_error);
}

TEST(MetricsServer, RequestLimitsAreValidated) {
  Registry r("reward");
  MetricsServerOptions tiny{"127.0.0.1:0"};
  tiny.max_request_bytes = 10;
  EXPECT_THROW(MetricsServer(r, tiny), std::invalid_argument);
  MetricsServerOptions no_time{"127.0.0.1:0"};
  no_time.request_timeout = std::chrono::milliseconds(0);
  EXPECT_THROW(MetricsServer(r, no_time), std::invalid_argument);
  const auto defaults = metrics_server_options(config::Config::load(metrics_schema()));
  EXPECT_EQ(defaults.max_request_bytes, kDefaultMetricsMaxRequestBytes);
  EXPECT_EQ(defaults.request_timeout, kDefaultMetricsRequestTimeout);
}

// A client connection that sends what the test tells it to (no HTTP logic). Connects without
// blocking: against a server that does not accept, the test itself must not hang.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);  // EINPROGRESS
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(const std::string& bytes) { ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // True once the server closed the connection (within `timeout`).
  bool closed_by_server(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(std::max<long long>(left.count(), 0))) <= 0) {
        return false;
      }
      char buffer[256];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    }
  }

 private:
  int fd_ = -1;
};

// Issue #13 (3): about 19 idle connections made /metrics unscrapable, because the server answered
// one connection at a time and gave each request_timeout. Every connection now has its own
// deadline in one event loop: 100 idle and 20 slow-loris connections (all within their 2 s) must
// not delay a scrape.
TEST(MetricsServer, IdleAndSlowLorisClientsDoNotDelayAScrape) {
  Registry r("reward");
  r.counter("spotlight_reward_requests_total", "Requests.").inc(7);
  auto server = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});  // 2 s per client
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  std::vector<std::unique_ptr<RawClient>> idle, slow;
  for (int i = 0; i < 100; ++i)
    idle.push_back(std::make_unique<RawClient>(port));
  for (int i = 0; i < 20; ++i)
    slow.push_back(std::make_unique<RawClient>(port));
  // Slow-loris: a head that never ends, one byte at a time.
  std::atomic<bool> done{false};
  std::thread loris([&] {
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for (std::size_t i = 0; !done; ++i) {
      for (auto& c : slow)
        c->send(std::string(1, i < head.size() ? head[i] : 'a'));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the attack's pace
    }
  });
  struct Join {
    std::atomic<bool>& done;
    std::thread& t;
    ~Join() {
      done = true;
      t.join();
    }
  } join{done, loris};

  for (int scrape = 0; scrape < 5; ++scrape) {
    const auto start = std::chrono::steady_clock::now();
    // Throws when a connect, send or receive takes longer than 1 s.
    const auto response =
        testing::http_get("127.0.0.1", port, "/metrics", std::chrono::milliseconds(1000));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(sample(response.body, "spotlight_reward_requests_total"), 7) << response.body;
    EXPECT_LT(took, std::chrono::seconds(1)) << "scrape " << scrape;
  }
  // The hostile connections are still dropped at their deadline, and counted.
  for (auto& c : slow)
    EXPECT_TRUE(c->closed_by_server(std::chrono::seconds(10)));
  for (auto& c : idle)
    EXPECT_TRUE(c->closed_by_server(std::chrono::seconds(10)));
  const auto text = testing::http_get("127.0.0.1", port, "/metrics").body;
  EXPECT_EQ(sample(text, "spotlight_reward_rejected_http_requests_total{reason=\"timeout\"}"), 120)
      << text;
}

TEST(MetricsServer, AtTheConnectionLimitTheOldestUnfinishedClientMakesRoom) {
  Registry r("reward");
  MetricsServerOptions options{"127.0.0.1:0"};
  options.max_connections = 8;
  options.request_timeout = std::chrono::seconds(30);
  auto server = MetricsServer::start(r, options);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(std::make_unique<RawClient>(server->port()));
    idle.back()->send("GET /met");  // accepted, unfinished
  }
  const auto response = testing::http_get("127.0.0.1", server->port(), "/metrics");
  EXPECT_EQ(response.status, 200);
  EXPECT_TRUE(idle.front()->closed_by_server(std::chrono::seconds(5)));
  EXPECT_EQ(sample(response.body,
                   "spotlight_reward_rejected_http_requests_total{reason="
                   "\"overload\"}"),
            1)
      << response.body;
  MetricsServerOptions none{"127.0.0.1:0"};
  none.max_connections = 0;
  EXPECT_THROW(MetricsServer(r, none), std::invalid_argument);
  const auto defaults = metrics_server_options(config::Config::load(metrics_schema()));
  EXPECT_EQ(defaults.max_connections, kDefaultMetricsMaxConnections);
}

// What another feature (e.g. the newest validation grid as a PNG) registers beside /metrics.
TEST(MetricsServer, ServesAddedReadOnlyRoutes) {
  Registry r("reward");
  auto server = MetricsServer::start(r, MetricsServerOptions{"127.0.0.1:0"});
  ASSERT_NE(server, nullptr);
  std::atomic<int> calls{0};
  const std::string png("\x89PNG\r\n\x1a\n\0\0binary", 16);
  server->add_route("/grid.png", "image/png", [&]() -> std::optional<std::string> {
    ++calls;
    return png;
  });
  server->add_route("/later.png", "image/png", [] { return std::optional<std::string>(); });
  server->add_route("/broken", "text/plain",
                    []() -> std::optional<std::string> { throw std::runtime_error("disk gone"); });
  const int port = server->port();
  const std::string raw =
      testing::http_exchange("127.0.0.1", port, "GET /grid.png?t=1 HTTP/1.0\r\n\r\n");
  EXPECT_EQ(status_of(raw), 200) << raw;
  EXPECT_NE(raw.find("\r\nContent-Type: image/png\r\n"), std::string::npos) << raw;
  EXPECT_NE(raw.find("\r\nContent-Length: 16\r\n"), std::string::npos) << raw;
  EXPECT_EQ(raw.substr(raw.find("\r\n\r\n") + 4), png);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(testing::http_get("127.0.0.1", port, "/later.png").status, 404);
  EXPECT_EQ(testing::http_get("127.0.0.1", port, "/broken").status, 500);
  EXPECT_EQ(status_of(testing::http_exchange("127.0.0.1", port, "POST /grid.png HTTP/1.0\r\n\r\n")),
            405);
  const std::string text = testing::http_get("127.0.0.1", port, "/metrics").body;
  const std::string family = "spotlight_reward_rejected_http_requests_total";
  EXPECT_EQ(sample(text, family + "{reason=\"error\"}"), 1) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"not_found\"}"), 1) << text;
  EXPECT_EQ(sample(text, family + "{reason=\"method\"}"), 1) << text;

  const auto some = [] { return std::optional<std::string>("x"); };
  EXPECT_THROW(server->add_route("/grid.png", "image/png", some), std::invalid_argument);
  EXPECT_THROW(server->add_route("/metrics", "text/plain", some), std::invalid_argument);
  EXPECT_THROW(server->add_route("grid.png", "image/png", some), std::invalid_argument);
  EXPECT_THROW(server->add_route("/a?b", "image/png", some), std::invalid_argument);
  EXPECT_THROW(server->add_route("/a b", "image/png", some), std::invalid_argument);
  EXPECT_THROW(server->add_route("/empty", "image/png", nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::metrics
