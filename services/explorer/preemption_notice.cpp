#include "services/explorer/preemption_notice.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log/log.hpp"

namespace spotlight::explorer {
namespace {

struct Url {
  std::string host;
  std::string port = "80";
  std::string path = "/";
};

Url parse_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    throw std::invalid_argument("preemption notice url '" + url + "': only http:// is supported");
  }
  const std::string rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  Url u;
  if (slash != std::string::npos) u.path = rest.substr(slash);
  const auto colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  if (u.host.empty() || u.port.empty() ||
      !std::all_of(u.port.begin(), u.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("preemption notice url '" + url +
                                "': expected http://host[:port]/path");
  }
  return u;
}

std::string trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passes (throws).
void wait_ready(int fd, short events, std::chrono::steady_clock::time_point deadline,
                const char* what) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error(std::string("timed out ") + what);
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), what);
  }
}

}  // namespace

void PreemptionNoticeOptions::validate() const {
  if (!url.empty()) parse_url(url);
  if (poll_interval.count() <= 0) {
    throw std::invalid_argument("PreemptionNoticeOptions.poll_interval: must be > 0");
  }
  if (http_timeout.count() <= 0) {
    throw std::invalid_argument("PreemptionNoticeOptions.http_timeout: must be > 0");
  }
}

std::optional<std::string> poll_notice_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  line = trim(line);
  return line.empty() ? std::string("notice file ") + path : line;
}

HttpResponse http_get(const std::string& url, std::chrono::milliseconds timeout) {
  const Url u = parse_url(url);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error("resolving " + u.host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  Socket sock(::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       found->ai_protocol));
  if (sock.fd() < 0) throw std::system_error(errno, std::generic_category(), "socket");
  if (::connect(sock.fd(), found->ai_addr, found->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) throw std::system_error(errno, std::generic_category(), "connect");
    wait_ready(sock.fd(), POLLOUT, deadline, "connecting");
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) throw std::system_error(error, std::generic_category(), "connect " + url);
  }
  const std::string request = "GET " + u.path + " HTTP/1.0\r\nHost: " + u.host +
                              "\r\nMetadata-Flavor: Google\r\nConnection: close\r\n\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    wait_ready(sock.fd(), POLLOUT, deadline, "sending");
    const ssize_t n = ::send(sock.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "send");
    }
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  std::string response;
  constexpr std::size_t kMaxResponse = 64 << 10;
  for (;;) {
    wait_ready(sock.fd(), POLLIN, deadline, "reading");
    char buffer[4096];
    const ssize_t n = ::recv(sock.fd(), buffer, sizeof buffer, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "recv");
    }
    response.append(buffer, static_cast<std::size_t>(n));
    if (response.size() > kMaxResponse) throw std::runtime_error("response too large");
  }
  // "HTTP/1.x NNN reason\r\n headers \r\n\r\n body"
  HttpResponse out;
  if (response.rfind("HTTP/", 0) != 0 || response.size() < 12) {
    throw std::runtime_error("not an HTTP response");
  }
  const auto space = response.find(' ');
  try {
    out.status = std::stoi(response.substr(space + 1, 3));
  } catch (const std::exception&) {
    throw std::runtime_error("bad HTTP status line");
  }
  const auto body = response.find("\r\n\r\n");
  if (body != std::string::npos) out.body = response.substr(body + 4);
  return out;
}

std::optional<std::string> poll_notice_url(const std::string& url,
                                           std::chrono::milliseconds timeout) {
  const HttpResponse r = http_get(url, timeout);
  if (r.status != 200) return std::nullopt;
  std::string body = trim(r.body);
  std::string upper = body;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "FALSE") return std::nullopt;
  return body.empty() ? std::string("notice at ") + url : body;
}

PreemptionWatcher::PreemptionWatcher(PreemptionNoticeOptions options,
                                     std::function<void(std::string)> on_notice)
    : options_((options.validate(), std::move(options))), on_notice_(std::move(on_notice)) {
  if (options_.enabled()) thread_ = std::jthread([this](std::stop_token stop) { poll(stop); });
}

PreemptionWatcher::~PreemptionWatcher() = default;  // jthread: request_stop + join

void PreemptionWatcher::poll(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::string last_error;
  while (!stop.stop_requested()) {
    std::optional<std::string> reason;
    if (!options_.file.empty()) reason = poll_notice_file(options_.file);
    if (!reason && !options_.url.empty()) {
      try {
        reason = poll_notice_url(options_.url, options_.http_timeout);
      } catch (const std::exception& e) {
        if (last_error != e.what())
          log::warn("preemption notice url {}: {}", options_.url, e.what());
        last_error = e.what();
      }
    }
    if (reason) {
      on_notice_(*reason);
      return;
    }
    std::unique_lock lock(mutex);
    wake.wait_for(lock, stop, options_.poll_interval, [] { return false; });
  }
}

}  // namespace spotlight::explorer
