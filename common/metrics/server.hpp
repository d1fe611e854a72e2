#pragma once
// The HTTP endpoint Prometheus scrapes (GET /metrics), and the `metrics.*` config fragment every
// service adds to its schema.
//
//   config::Schema schema{...};
//   schema.add(metrics::metrics_schema());
//   ...
//   auto registry = std::make_shared<metrics::Registry>("reward");
//   auto server = metrics::MetricsServer::start(*registry, metrics::metrics_server_options(cfg));
//   if (server) log::info("metrics on {}", server->url());
//
//   server->add_route("/grid.png", "image/png", [] { return read_newest_grid(); });
//
// Contract: the server answers GET /metrics and the added routes (one request per connection) on
// its own thread from construction until destruction; it keeps the registry's metrics alive while
// it runs. Thread-safe accessors and add_route(). Destruction returns promptly (it wakes the
// thread).
// Concurrency: one event loop (poll) serves every connection at once; each connection has its
// own deadline (request_timeout from its accept, for reading the head and writing the answer), so
// idle or slow clients never delay another client's scrape. At most max_connections are open; a
// new one beyond that evicts the oldest connection still sending its head (or is closed when
// none is).
// Hostile clients: a head above max_request_bytes gets 431, a malformed request line 400, another
// method 405, another path 404, a client slower than request_timeout is dropped, an evicted or
// refused connection is dropped, a route whose provider throws answers 500; each is counted in
// spotlight_<service>_rejected_http_requests_total{reason="too_large" | "bad_request" | "method" |
// "not_found" | "timeout" | "overload" | "error"} of the served registry, and the server keeps
// serving. It listens only on the address of `bind` (no wildcard unless the address is one).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/metrics/metrics.hpp"

namespace spotlight::metrics {

// Loopback, on a free port (logged at start): safe anywhere, never collides. Deployments set a
// fixed, reachable address such as "0.0.0.0:9100".
inline constexpr const char* kDefaultMetricsBind = "127.0.0.1:0";
inline constexpr std::size_t kDefaultMetricsThreads = 2;
// A scrape is "GET /metrics HTTP/1.1" plus a few headers: far below this.
inline constexpr std::size_t kDefaultMetricsMaxRequestBytes = 8192;
// Whole time a client has to send its request head and read the answer.
inline constexpr std::chrono::milliseconds kDefaultMetricsRequestTimeout{2000};
// Connections open at once (each holds a file descriptor and at most max_request_bytes).
inline constexpr std::size_t kDefaultMetricsMaxConnections = 256;

// The endpoint cannot be served (address in use, unknown host, ...).
class MetricsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MetricsServerOptions {
  // "HOST:PORT" (IPv6 as "[::1]:PORT"); port 0 picks a free port. Empty: metrics not served.
  std::string bind = kDefaultMetricsBind;
  std::size_t threads = kDefaultMetricsThreads;  // must be >= 1 (one serving thread is used)
  // A request head (request line + headers + blank line) larger than this is answered 431.
  std::size_t max_request_bytes = kDefaultMetricsMaxRequestBytes;  // >= 64
  // A client that has not sent its whole head (and read the answer) within this time of its
  // connection is dropped.
  std::chrono::milliseconds request_timeout = kDefaultMetricsRequestTimeout;  // > 0
  std::size_t max_connections = kDefaultMetricsMaxConnections;                // >= 1
};

// The body of a read-only route, made on request; std::nullopt answers 404 (nothing to serve
// yet). Called on the server's thread, one call at a time: it must be quick and thread-safe with
// respect to whatever it reads; a throw answers 500 (counted as reason "error").
using ContentProvider = std::function<std::optional<std::string>()>;

// std::nullopt when `bind` is empty or HOST:PORT with PORT in [0, 65535]; else the reason.
std::optional<std::string> bind_problem(const std::string& bind);

class MetricsServer {
 public:
  // Listens on options.bind (which must not be empty) and serves `registry`. Throws
  // std::invalid_argument for a malformed bind or threads == 0, MetricsError naming the address
  // when it cannot listen.
  MetricsServer(const Registry& registry, const MetricsServerOptions& options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // nullptr when options.bind is empty (metrics disabled); else a serving MetricsServer.
  static std::unique_ptr<MetricsServer> start(const Registry& registry,
                                              const MetricsServerOptions& options);

  // Serves GET `path` (also with a query string) with `provider`'s body as `content_type`. Any
  // time, from any thread. Throws std::invalid_argument for a path that does not start with '/',
  // contains a '?' or a space, is /metrics, or is already served, or for an empty provider.
  void add_route(std::string path, std::string content_type, ContentProvider provider);

  std::uint16_t port() const;   // the port listened on (the picked one for port 0)
  std::string address() const;  // "HOST:PORT" with that port
  std::string url() const;      // "http://HOST:PORT/metrics"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The `metrics.*` keys (metrics.bind with default `default_bind`, metrics.max_request_bytes,
// metrics.request_timeout_ms, metrics.max_connections), to add to a service's schema.
config::Schema metrics_schema(std::string default_bind = kDefaultMetricsBind);
MetricsServerOptions metrics_server_options(const config::Config& config);

}  // namespace spotlight::metrics
