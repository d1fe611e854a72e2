#pragma once
// A tiny blocking HTTP/1.0 GET for tests (no curl): enough to scrape a /metrics endpoint.
// Header-only; also used by the reward service tests.

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace spotlight::testing {

struct HttpResponse {
  int status = 0;    // e.g. 200
  std::string body;  // after the blank line
};

// Sends `request` as raw bytes to <ipv4>:<port> and returns everything the server sends until it
// closes the connection (empty when it closes without answering). Throws std::runtime_error on
// connection failures or a timeout (per send/receive call).
inline std::string http_exchange(const std::string& ipv4, int port, const std::string& request,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("http: socket: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("http: not an IPv4 address: " + ipv4);
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("http: connect " + ipv4 + ":" + std::to_string(port) + ": " +
                             std::strerror(errno));
  }
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    // The server may answer (and close) before reading everything, e.g. 431 for a huge head.
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) break;
    if (n <= 0) throw std::runtime_error(std::string("http: send: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNRESET) break;
    if (n < 0) throw std::runtime_error(std::string("http: recv: ") + std::strerror(errno));
    if (n == 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  return raw;
}

// GETs http://<ipv4>:<port><path>. Throws std::runtime_error on connection failures, a timeout
// (per send/receive call) or a response that is not HTTP.
inline HttpResponse http_get(const std::string& ipv4, int port, const std::string& path,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const std::string raw = http_exchange(ipv4, port,
                                        "GET " + path + " HTTP/1.0\r\nHost: " + ipv4 + ":" +
                                            std::to_string(port) + "\r\nConnection: close\r\n\r\n",
                                        timeout);
  // "HTTP/1.x 200 OK\r\n...\r\n\r\nbody"
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/", 0) != 0 || raw.size() < 12 || head_end == std::string::npos) {
    throw std::runtime_error("http_get: not an HTTP response: " + raw.substr(0, 80));
  }
  HttpResponse response;
  response.status = std::stoi(raw.substr(raw.find(' ') + 1, 3));
  response.body = raw.substr(head_end + 4);
  return response;
}

}  // namespace spotlight::testing
