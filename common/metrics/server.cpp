#include "common/metrics/server.hpp"

#include <atomic>
#include <charconv>
#include <cstring>
#include <thread>
#include <vector>

#include <netdb.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/metrics/detail/registry_impl.hpp"

namespace spotlight::metrics {
namespace {

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
  std::string host;
  std::uint16_t port = 0;
  int listener = -1;
  std::atomic<bool> stopping{false};
  std::thread thread;

  void serve() {
    while (!stopping.load()) {
      pollfd pfd{listener, POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;  // 100 ms: how quickly a stop is noticed
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) continue;
      answer(fd);
      ::close(fd);
    }
  }

  void answer(int fd) {
    std::string request;
    char buffer[2048];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, 1000) <= 0) return;  // a client that sends nothing for 1 s is dropped
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      request.append(buffer, static_cast<size_t>(n));
    }
    const bool get = request.rfind("GET ", 0) == 0;
    const auto path_end = request.find(' ', 4);
    const std::string path =
        get && path_end != std::string::npos ? request.substr(4, path_end - 4) : "";
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
    if (!get) {
      status = "405 Method Not Allowed";
      body = "only GET\n";
    } else if (path != "/metrics" && path.rfind("/metrics?", 0) != 0) {
      status = "404 Not Found";
      body = "see /metrics\n";
    } else {
      body = prometheus::TextSerializer().Serialize(registry->Collect());
    }
    const std::string head = "HTTP/1.0 " + status + "\r\nContent-Type: " + type +
                             "\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n";
    const std::string out = head + body;
    for (size_t sent = 0; sent < out.size();) {
      const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
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
  impl_->registry = registry.impl_->registry;
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
  return schema;
}

MetricsServerOptions metrics_server_options(const config::Config& config) {
  MetricsServerOptions options;
  options.bind = config.get_string("metrics.bind");
  return options;
}

}  // namespace spotlight::metrics
