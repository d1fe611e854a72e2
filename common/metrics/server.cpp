#include "common/metrics/server.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <map>
#include <string_view>
#include <thread>
#include <vector>

#include <netdb.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/metrics/detail/http_request.hpp"
#include "common/metrics/detail/registry_impl.hpp"

namespace spotlight::metrics {
namespace {

constexpr std::size_t kMinMetricsRequestBytes = 64;
constexpr std::chrono::milliseconds kLingerTime{200};  // after an answer, see answer()
constexpr std::size_t kLingerMaxBytes = std::size_t{1} << 20;

struct HostPort {
  std::string host;
  int port = 0;
};

std::optional<HostPort> split_bind(const std::string& bind) {
  const std::size_t colon = bind.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == bind.size()) return std::nullopt;
  HostPort out;
  out.host = bind.substr(0, colon);
  const std::string port = bind.substr(colon + 1);
  if (port.size() > 5) return std::nullopt;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || out.port > 65535) {
    return std::nullopt;
  }
  // Commas separate several listeners in CivetWeb's syntax; spaces are never valid.
  if (out.host.find_first_of(", \t") != std::string::npos) return std::nullopt;
  const bool v6 = out.host.front() == '[';
  if (v6 != (out.host.back() == ']')) return std::nullopt;
  if (!v6 && out.host.find(':') != std::string::npos) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> bind_problem(const std::string& bind) {
  if (bind.empty() || split_bind(bind)) return std::nullopt;
  return "must be empty or HOST:PORT with PORT in [0, 65535]";
}

// A deliberately small HTTP/1.0 server on its own thread: one request per connection, GET only.
// (prometheus-cpp's Exposer runs CivetWeb threads with 100 KB stacks, which cannot start in a
// process that also loads LibTorch: its static TLS alone is larger. Scrapes are rare and tiny.)
struct MetricsServer::Impl {
  std::shared_ptr<prometheus::Registry> registry;  // kept alive while served
  std::shared_ptr<Registry::Impl> registry_impl;   // owns the reject counters' family
  MetricsServerOptions options;
  std::map<std::string, prometheus::Counter*, std::less<>> rejected;  // by reason
  std::string host;
  std::uint16_t port = 0;
  int listener = -1;
  std::atomic<bool> stopping{false};
  std::thread thread;

  void count_reject(std::string_view reason) {
    const auto it = rejected.find(reason);
    if (it != rejected.end()) it->second->Increment();
  }

  void serve() {
    while (!stopping.load()) {
      pollfd pfd{listener, POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;  // 100 ms: how quickly a stop is noticed
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      answer(fd);
      ::close(fd);
    }
  }

  // Reads the request head within options.request_timeout and answers it.
  void answer(int fd) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + options.request_timeout;
    std::string request;
    char buffer[2048];
    detail::HttpRequestHead head;
    for (;;) {
      head = detail::parse_request_head(request, options.max_request_bytes);
      if (head.status != detail::HttpHeadStatus::kIncomplete) break;
      const auto remaining =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd pfd{fd, POLLIN, 0};
      if (remaining <= 0 || ::poll(&pfd, 1, static_cast<int>(remaining)) <= 0) {
        count_reject("timeout");
        return;
      }
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        if (!request.empty()) count_reject("timeout");  // gave up before the head ended
        return;
      }
      request.append(buffer, static_cast<size_t>(n));
    }
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
    std::string extra_headers;
    const std::string_view path = head.target.substr(0, head.target.find('?'));
    const auto route = options.routes.find(path);
    if (head.status == detail::HttpHeadStatus::kTooLarge) {
      count_reject("too_large");
      status = "431 Request Header Fields Too Large";
      body = "request head above " + std::to_string(options.max_request_bytes) + " bytes\n";
    } else if (head.status == detail::HttpHeadStatus::kBadRequest) {
      count_reject("bad_request");
      status = "400 Bad Request";
      body = "malformed request line\n";
    } else if (head.method != "GET") {
      count_reject("method");
      status = "405 Method Not Allowed";
      body = "only GET\n";
    } else if (path == "/metrics") {
      body = prometheus::TextSerializer().Serialize(registry->Collect());
    } else if (route != options.routes.end()) {
      std::optional<HttpContent> content;
      try {
        content = route->second();
      } catch (const std::exception&) {
        content.reset();  // a route that cannot answer has nothing to serve
      }
      extra_headers = "Cache-Control: no-store\r\n";
      if (content) {
        type = std::move(content->content_type);
        body = std::move(content->body);
      } else {
        status = "404 Not Found";
        type = "text/plain; charset=utf-8";
        body = "nothing to serve yet\n";
      }
    } else {
      count_reject("not_found");
      status = "404 Not Found";
      body = "see /metrics\n";
    }
    const std::string head_out = "HTTP/1.0 " + status + "\r\nContent-Type: " + type +
                                 "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                                 extra_headers + "Connection: close\r\n\r\n";
    const std::string out = head_out + body;
    for (size_t sent = 0; sent < out.size();) {
      pollfd pfd{fd, POLLOUT, 0};
      const auto remaining =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      // A client that does not read its answer is dropped at the same deadline.
      if (::poll(&pfd, 1, static_cast<int>(std::max<long long>(remaining, 100))) <= 0) return;
      const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
    // Lingering close: closing with unread request bytes makes the kernel send a reset, which can
    // destroy the answer (e.g. a 431) before the client reads it. Discard what the client still
    // sends, briefly and boundedly, after announcing the end of the answer.
    ::shutdown(fd, SHUT_WR);
    const auto linger_until = std::min(deadline, Clock::now() + kLingerTime);
    for (std::size_t drained = 0; drained < kLingerMaxBytes;) {
      const auto remaining =
          std::chrono::ceil<std::chrono::milliseconds>(linger_until - Clock::now()).count();
      pollfd pfd{fd, POLLIN, 0};
      if (remaining <= 0 || ::poll(&pfd, 1, static_cast<int>(remaining)) <= 0) return;
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      drained += static_cast<std::size_t>(n);
    }
  }
};

MetricsServer::MetricsServer(const Registry& registry, const MetricsServerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const auto hp = split_bind(options.bind);
  if (!hp) {
    throw std::invalid_argument("metrics: bind address '" + options.bind +
                                "' must be HOST:PORT with PORT in [0, 65535]");
  }
  if (options.threads < 1) throw std::invalid_argument("metrics: threads must be >= 1");
  if (options.max_request_bytes < kMinMetricsRequestBytes) {
    throw std::invalid_argument("metrics: max_request_bytes must be >= " +
                                std::to_string(kMinMetricsRequestBytes));
  }
  if (options.request_timeout.count() <= 0) {
    throw std::invalid_argument("metrics: request_timeout must be > 0");
  }
  for (const auto& [path, handler] : options.routes) {
    if (path.empty() || path.front() != '/' || path == "/metrics" ||
        path.find_first_of("? \t\r\n") != std::string::npos || !handler) {
      throw std::invalid_argument("metrics: route '" + path +
                                  "' must be a path other than /metrics, with a handler");
    }
  }
  impl_->options = options;
  impl_->registry = registry.impl_->registry;
  impl_->registry_impl = registry.impl_;
  {
    Registry::Impl& r = *registry.impl_;
    std::lock_guard lock(r.mutex);
    const std::string name = "spotlight_" + r.service + "_rejected_http_requests_total";
    auto& family = r.family(name, "Requests to the /metrics endpoint rejected, by reason.",
                            MetricType::kCounter, {{"reason", ""}});
    for (const char* reason : {"too_large", "bad_request", "method", "not_found", "timeout"}) {
      impl_->rejected[reason] = &family.counters->Add({{"reason", reason}});
    }
  }
  std::string host = hp->host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(hp->port).c_str(), &hints, &found);
      rc != 0) {
    throw MetricsError("metrics: cannot listen on '" + options.bind + "': " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && impl_->listener < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 16) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      impl_->port =
          ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      impl_->listener = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (impl_->listener < 0)
    throw MetricsError("metrics: cannot listen on '" + options.bind + "': " + why);
  impl_->host = hp->host;
  impl_->thread = std::thread([impl = impl_.get()] { impl->serve(); });
}

MetricsServer::~MetricsServer() {
  impl_->stopping = true;
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->listener >= 0) ::close(impl_->listener);
}

std::unique_ptr<MetricsServer> MetricsServer::start(const Registry& registry,
                                                    const MetricsServerOptions& options) {
  if (options.bind.empty()) return nullptr;
  return std::make_unique<MetricsServer>(registry, options);
}

std::uint16_t MetricsServer::port() const {
  return impl_->port;
}

std::string MetricsServer::address() const {
  return impl_->host + ":" + std::to_string(impl_->port);
}

std::string MetricsServer::url() const {
  return "http://" + address() + "/metrics";
}

config::Schema metrics_schema(std::string default_bind) {
  config::Schema schema;
  schema.add(
      config::Entry::string("metrics.bind", std::move(default_bind),
                            "Prometheus endpoint HOST:PORT serving /metrics (port 0: a "
                            "free port, logged at start; empty: metrics not served).")
          .check("must be empty or HOST:PORT with PORT in [0, 65535]", [](const config::Value& v) {
            return !bind_problem(std::get<std::string>(v)).has_value();
          }));
  schema.add(config::Entry::integer("metrics.max_request_bytes",
                                    static_cast<std::int64_t>(kDefaultMetricsMaxRequestBytes),
                                    "Largest HTTP request head the /metrics endpoint reads "
                                    "(larger: 431, counted).")
                 .range(static_cast<std::int64_t>(kMinMetricsRequestBytes), 1 << 20));
  schema.add(config::Entry::integer("metrics.request_timeout_ms",
                                    kDefaultMetricsRequestTimeout.count(),
                                    "A /metrics client must send its request head within this "
                                    "time (slower: dropped, counted).")
                 .range(1, 600000));
  return schema;
}

MetricsServerOptions metrics_server_options(const config::Config& config) {
  MetricsServerOptions options;
  options.bind = config.get_string("metrics.bind");
  options.max_request_bytes = config.get<std::size_t>("metrics.max_request_bytes");
  options.request_timeout = std::chrono::milliseconds(config.get_int("metrics.request_timeout_ms"));
  return options;
}

}  // namespace spotlight::metrics
