#include "common/metrics/server.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/metrics/detail/http_request.hpp"
#include "common/metrics/detail/registry_impl.hpp"

namespace spotlight::metrics {
namespace {

constexpr std::size_t kMinMetricsRequestBytes = 64;
constexpr std::string_view kMetricsPath = "/metrics";
constexpr std::chrono::milliseconds kLingerTime{200};  // after an answer, see progress()
constexpr std::size_t kLingerMaxBytes = std::size_t{1} << 20;
constexpr std::chrono::milliseconds kMinWriteTime{100};  // to send an answer, see progress()
constexpr std::chrono::milliseconds kAcceptPause{100};   // after running out of descriptors
constexpr const char* kRejectReasons[] = {"too_large", "bad_request", "method", "not_found",
                                          "timeout",   "overload",    "error"};

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

// A deliberately small HTTP/1.0 server: one event loop (poll) on its own thread, one request per
// connection, GET only. (prometheus-cpp's Exposer runs CivetWeb threads with 100 KB stacks, which
// cannot start in a process that also loads LibTorch: its static TLS alone is larger. Scrapes are
// rare and tiny, so one thread serving every connection without blocking is enough.)
struct MetricsServer::Impl {
  using Clock = std::chrono::steady_clock;

  enum class Phase {
    kReading,    // receiving the request head
    kWriting,    // sending the answer
    kLingering,  // answer sent and write side shut: discarding what the client still sends
  };
  struct Connection {
    int fd = -1;
    std::uint64_t serial = 0;    // accept order: the oldest reading one is evicted first
    Clock::time_point deadline;  // accept + request_timeout: head read and answer written
    Clock::time_point linger_until;
    Phase phase = Phase::kReading;
    std::string in;   // request head so far
    std::string out;  // the answer
    std::size_t sent = 0;
    std::size_t drained = 0;
  };
  struct Route {
    std::string content_type;
    ContentProvider provider;
  };

  std::shared_ptr<prometheus::Registry> registry;  // kept alive while served
  std::shared_ptr<Registry::Impl> registry_impl;   // owns the reject counters' family
  MetricsServerOptions options;
  std::map<std::string, prometheus::Counter*, std::less<>> rejected;  // by reason
  std::string host;
  std::uint16_t port = 0;
  int listener = -1;
  int wake = -1;  // eventfd: the destructor's stop signal
  std::atomic<bool> stopping{false};
  std::mutex routes_mutex;  // guards routes
  std::map<std::string, Route, std::less<>> routes;
  std::list<Connection> connections;  // the thread's own
  std::uint64_t next_serial = 0;
  Clock::time_point accept_paused_until{};  // after EMFILE/ENFILE: let descriptors free up
  std::thread thread;

  ~Impl() {
    for (auto& c : connections)
      ::close(c.fd);
    if (listener >= 0) ::close(listener);
    if (wake >= 0) ::close(wake);
  }

  void count_reject(std::string_view reason) {
    const auto it = rejected.find(reason);
    if (it != rejected.end()) it->second->Increment();
  }

  static int poll_timeout(Clock::time_point now, Clock::time_point until) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    return static_cast<int>(std::clamp<long long>(ms, 0, 60000));
  }

  void serve() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> polled;
    while (!stopping.load()) {
      auto now = Clock::now();
      fds.clear();
      polled.clear();
      fds.push_back(pollfd{wake, POLLIN, 0});
      const bool accepting = now >= accept_paused_until;
      fds.push_back(pollfd{listener, static_cast<short>(accepting ? POLLIN : 0), 0});
      Clock::time_point next = now + std::chrono::seconds(60);
      if (!accepting) next = std::min(next, accept_paused_until);
      for (auto it = connections.begin(); it != connections.end(); ++it) {
        const short events = it->phase == Phase::kWriting ? POLLOUT : POLLIN;
        fds.push_back(pollfd{it->fd, events, 0});
        polled.push_back(it);
        next = std::min(next, it->phase == Phase::kLingering ? it->linger_until : it->deadline);
      }
      const int ready = ::poll(fds.data(), fds.size(), poll_timeout(now, next));
      if (ready < 0 && errno != EINTR) break;  // cannot happen with valid descriptors
      if (stopping.load()) break;
      now = Clock::now();
      for (std::size_t i = 0; i < polled.size(); ++i) {
        const short revents = fds[i + 2].revents;
        auto it = polled[i];
        bool open = true;
        if (revents != 0) open = progress(*it, now);
        if (open) open = !expired(*it, now);
        if (!open) {
          ::close(it->fd);
          connections.erase(it);
        }
      }
      if (fds[1].revents & POLLIN) accept_all(now);
      if (fds[0].revents & POLLIN) {
        std::uint64_t value = 0;
        [[maybe_unused]] const ssize_t n = ::read(wake, &value, sizeof value);
      }
    }
  }

  // Accepts every pending connection, within max_connections.
  void accept_all(Clock::time_point now) {
    for (;;) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: free one if a slow client holds it, else wait a moment (the
          // listener would otherwise stay readable and spin the loop).
          if (!evict_oldest_reader()) accept_paused_until = now + kAcceptPause;
        }
        return;  // EAGAIN: none left; ECONNABORTED and the like: the next poll tells
      }
      if (connections.size() >= options.max_connections && !evict_oldest_reader()) {
        count_reject("overload");  // every slot is answering: refuse the newcomer
        ::close(fd);
        continue;
      }
      Connection c;
      c.fd = fd;
      c.serial = next_serial++;
      c.deadline = now + options.request_timeout;
      connections.push_back(std::move(c));
    }
  }

  // Drops the connection that has been sending its head for longest; false when none is.
  bool evict_oldest_reader() {
    auto oldest = connections.end();
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      if (it->phase == Phase::kReading &&
          (oldest == connections.end() || it->serial < oldest->serial))
        oldest = it;
    }
    if (oldest == connections.end()) return false;
    count_reject("overload");
    ::close(oldest->fd);
    connections.erase(oldest);
    return true;
  }

  // Handles readiness of `c`; false when the connection is done (to be closed).
  bool progress(Connection& c, Clock::time_point now) {
    char buffer[4096];
    switch (c.phase) {
      case Phase::kReading: {
        for (;;) {
          const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
          if (n <= 0) {
            if (!c.in.empty()) count_reject("timeout");  // gave up before the head ended
            return false;
          }
          c.in.append(buffer, static_cast<std::size_t>(n));
          const auto head = detail::parse_request_head(c.in, options.max_request_bytes);
          if (head.status == detail::HttpHeadStatus::kIncomplete) continue;
          c.out = answer(head);
          c.in.clear();
          c.in.shrink_to_fit();
          c.phase = Phase::kWriting;
          // A client that does not read its answer is dropped at its deadline (at least 100 ms
          // from now, so a fast client at the end of its time still gets it).
          c.deadline = std::max(c.deadline, now + kMinWriteTime);
          return progress(c, now);
        }
      }
      case Phase::kWriting: {
        while (c.sent < c.out.size()) {
          const ssize_t n =
              ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
          if (n <= 0) return false;
          c.sent += static_cast<std::size_t>(n);
        }
        // Lingering close: closing with unread request bytes makes the kernel send a reset, which
        // can destroy the answer (e.g. a 431) before the client reads it. Discard what the client
        // still sends, briefly and boundedly, after announcing the end of the answer.
        ::shutdown(c.fd, SHUT_WR);
        c.out.clear();
        c.out.shrink_to_fit();
        c.phase = Phase::kLingering;
        c.linger_until = std::min(c.deadline, now + kLingerTime);
        return now < c.linger_until;
      }
      case Phase::kLingering: {
        for (;;) {
          const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
          if (n <= 0) return false;
          c.drained += static_cast<std::size_t>(n);
          if (c.drained >= kLingerMaxBytes) return false;
        }
      }
    }
    return false;
  }

  // True when `c` ran out of time (counted when it had not sent its whole head).
  bool expired(const Connection& c, Clock::time_point now) {
    if (c.phase == Phase::kLingering) return now >= c.linger_until;
    if (now < c.deadline) return false;
    if (c.phase == Phase::kReading) count_reject("timeout");
    return true;
  }

  // The whole HTTP answer to a complete (or rejected) request head.
  std::string answer(const detail::HttpRequestHead& head) {
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
    std::string_view path = head.target;
    if (const auto query = path.find('?'); query != std::string_view::npos) {
      path = path.substr(0, query);
    }
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
    } else if (path == kMetricsPath) {
      body = prometheus::TextSerializer().Serialize(registry->Collect());
    } else if (auto route = find_route(path)) {
      std::optional<std::string> content;
      try {
        content = route->provider();
      } catch (const std::exception&) {
        count_reject("error");
        status = "500 Internal Server Error";
        body = "cannot produce " + std::string(path) + "\n";
        type = "text/plain; charset=utf-8";
      }
      if (content) {
        type = route->content_type;
        body = std::move(*content);
      } else if (status.starts_with("200")) {
        count_reject("not_found");
        status = "404 Not Found";
        body = std::string(path) + " has nothing to serve yet\n";
        type = "text/plain; charset=utf-8";
      }
    } else {
      count_reject("not_found");
      status = "404 Not Found";
      body = "see /metrics\n";
    }
    return "HTTP/1.0 " + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  }

  std::optional<Route> find_route(std::string_view path) {
    std::lock_guard lock(routes_mutex);
    const auto it = routes.find(path);
    if (it == routes.end()) return std::nullopt;
    return it->second;
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
  if (options.max_connections < 1) {
    throw std::invalid_argument("metrics: max_connections must be >= 1");
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
    for (const char* reason : kRejectReasons) {
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
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
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
  // The loop never blocks on a client: accepted sockets are non-blocking, and so is the listener
  // (a connection reset between poll and accept must not block the loop).
  ::fcntl(impl_->listener, F_SETFL, ::fcntl(impl_->listener, F_GETFL) | O_NONBLOCK);
  impl_->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl_->wake < 0) {
    throw MetricsError("metrics: eventfd: " + std::string(std::strerror(errno)));
  }
  impl_->host = hp->host;
  impl_->thread = std::thread([impl = impl_.get()] { impl->serve(); });
}

MetricsServer::~MetricsServer() {
  impl_->stopping = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(impl_->wake, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
}

void MetricsServer::add_route(std::string path, std::string content_type,
                              ContentProvider provider) {
  if (path.empty() || path.front() != '/' || path.find_first_of("? \t\r\n") != std::string::npos) {
    throw std::invalid_argument("metrics: route '" + path +
                                "' must start with '/' and contain no '?' or spaces");
  }
  if (path == kMetricsPath) throw std::invalid_argument("metrics: /metrics is built in");
  if (!provider) throw std::invalid_argument("metrics: route '" + path + "' has no provider");
  std::lock_guard lock(impl_->routes_mutex);
  if (!impl_->routes.try_emplace(path, Impl::Route{std::move(content_type), std::move(provider)})
           .second) {
    throw std::invalid_argument("metrics: route '" + path + "' is already served");
  }
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
  schema.add(config::Entry::integer("metrics.max_connections",
                                    static_cast<std::int64_t>(kDefaultMetricsMaxConnections),
                                    "Connections the /metrics endpoint keeps open at once (beyond: "
                                    "the oldest still sending its request is dropped, counted).")
                 .range(1, 65536));
  return schema;
}

MetricsServerOptions metrics_server_options(const config::Config& config) {
  MetricsServerOptions options;
  options.bind = config.get_string("metrics.bind");
  options.max_request_bytes = config.get<std::size_t>("metrics.max_request_bytes");
  options.request_timeout = std::chrono::milliseconds(config.get_int("metrics.request_timeout_ms"));
  options.max_connections = config.get<std::size_t>("metrics.max_connections");
  return options;
}

}  // namespace spotlight::metrics
