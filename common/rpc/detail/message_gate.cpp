#include "common/rpc/detail/message_gate.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <list>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/rpc/errors.hpp"

namespace spotlight::rpc::detail {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{256} << 10;  // per direction and connection

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

[[noreturn]] void fail(const std::string& endpoint, const std::string& what, int error) {
  throw RpcError("rpc server: " + endpoint + ": " + what + ": " + std::strerror(error));
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// One client connection and its connection to the ROUTER.
struct Link {
  Fd client;
  Fd router;
  std::string up;    // client -> router, not yet written
  std::string down;  // router -> client, not yet written
  std::size_t unanswered = 0;
};

// Writes what `pending` holds to `fd`; false when the peer is gone.
bool flush(int fd, std::string& pending) {
  while (!pending.empty()) {
    const ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    pending.erase(0, static_cast<std::size_t>(n));
  }
  return true;
}

enum class Read { kOk, kClosed };

// Appends to `into` what `fd` has, up to the buffer's room; sets `got`.
Read read_into(int fd, std::string& into, std::size_t& got) {
  got = 0;
  std::array<char, 64 << 10> chunk{};
  const std::size_t room = std::min(chunk.size(), kBufferBytes - into.size());
  if (room == 0) return Read::kOk;
  const ssize_t n = ::recv(fd, chunk.data(), room, 0);
  if (n == 0) return Read::kClosed;
  if (n < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Read::kOk : Read::kClosed;
  }
  got = static_cast<std::size_t>(n);
  into.append(chunk.data(), got);
  return Read::kOk;
}

}  // namespace

struct MessageGate::Impl {
  Impl(const std::string& tcp_endpoint, std::string path, MessageGateOptions o);
  ~Impl();
  void serve();
  void accept_clients();

  std::string router_path;
  MessageGateOptions options;
  std::string endpoint;
  Fd listener;
  std::array<int, 2> wake{-1, -1};
  std::list<Link> links;
  std::atomic<std::uint64_t> oversize{0};
  std::atomic<bool> stopping{false};
  std::thread thread;
};

MessageGate::Impl::Impl(const std::string& tcp_endpoint, std::string path, MessageGateOptions o)
    : router_path(std::move(path)), options(std::move(o)) {
  if (options.max_unanswered_bytes == 0) {
    throw RpcError("rpc server: max_message_bytes must be > 0");
  }
  const std::string prefix = "tcp://";
  const auto colon = tcp_endpoint.rfind(':');
  if (tcp_endpoint.rfind(prefix, 0) != 0 || colon == std::string::npos || colon < prefix.size()) {
    throw RpcError("rpc server: endpoint '" + tcp_endpoint + "' is not tcp://HOST:PORT");
  }
  std::string host = tcp_endpoint.substr(prefix.size(), colon - prefix.size());
  std::string port = tcp_endpoint.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (port == "*") port = "0";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host == "*" ? nullptr : host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw RpcError("rpc server: endpoint '" + tcp_endpoint + "': " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  // "*": the IPv4 wildcard, as libzmq binds it.
  const addrinfo* use = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      use = a;
      break;
    }
  }
  listener = Fd(::socket(use->ai_family, use->ai_socktype | SOCK_CLOEXEC, use->ai_protocol));
  if (listener.get() < 0) fail(tcp_endpoint, "socket", errno);
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener.get(), use->ai_addr, use->ai_addrlen) != 0) fail(tcp_endpoint, "bind", errno);
  if (::listen(listener.get(), SOMAXCONN) != 0) fail(tcp_endpoint, "listen", errno);
  set_nonblocking(listener.get());
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  std::array<char, NI_MAXHOST> name{};
  std::array<char, NI_MAXSERV> service{};
  ::getnameinfo(reinterpret_cast<sockaddr*>(&bound), length, name.data(), name.size(),
                service.data(), service.size(), NI_NUMERICHOST | NI_NUMERICSERV);
  const std::string address(name.data());
  endpoint = prefix + (bound.ss_family == AF_INET6 ? "[" + address + "]" : address) + ":" +
             std::string(service.data());
  if (::pipe2(wake.data(), O_CLOEXEC | O_NONBLOCK) != 0) fail(tcp_endpoint, "pipe", errno);
  thread = std::thread([this] { serve(); });
}

MessageGate::Impl::~Impl() {
  stopping = true;
  const char byte = 0;
  [[maybe_unused]] const auto written = ::write(wake[1], &byte, 1);
  if (thread.joinable()) thread.join();
  ::close(wake[0]);
  ::close(wake[1]);
}

void MessageGate::Impl::accept_clients() {
  for (;;) {
    Fd client(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (client.get() < 0) return;  // EAGAIN, or a connection that went away meanwhile
    const int one = 1;
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Fd router(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, router_path.c_str(), sizeof address.sun_path - 1);
    if (router.get() < 0 ||
        ::connect(router.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      continue;  // the ROUTER is not listening (stopping) or its backlog is full: drop the client
    }
    links.push_back(Link{std::move(client), std::move(router), {}, {}, 0});
  }
}

void MessageGate::Impl::serve() {
  std::vector<pollfd> fds;
  std::vector<Link*> owners;
  while (!stopping) {
    fds.clear();
    owners.clear();
    fds.push_back({wake[0], POLLIN, 0});
    fds.push_back({listener.get(), POLLIN, 0});
    for (auto& link : links) {
      const auto want = [](bool read, bool write) {
        return static_cast<short>((read ? POLLIN : 0) | (write ? POLLOUT : 0));
      };
      fds.push_back(
          {link.client.get(), want(link.up.size() < kBufferBytes, !link.down.empty()), 0});
      fds.push_back(
          {link.router.get(), want(link.down.size() < kBufferBytes, !link.up.empty()), 0});
      owners.push_back(&link);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents & POLLIN) accept_clients();
    for (std::size_t i = 0; i < owners.size(); ++i) {
      Link& link = *owners[i];
      const short client = fds[2 + 2 * i].revents;
      const short router = fds[3 + 2 * i].revents;
      bool open = true;
      std::size_t got = 0;
      if (open && (client & (POLLIN | POLLHUP | POLLERR))) {
        open = read_into(link.client.get(), link.up, got) == Read::kOk;
        link.unanswered += got;
        if (open && link.unanswered > options.max_unanswered_bytes) {
          open = false;
          ++oversize;
          if (options.on_oversize) options.on_oversize();
        }
      }
      if (open && (router & (POLLIN | POLLHUP | POLLERR))) {
        open = read_into(link.router.get(), link.down, got) == Read::kOk;
        if (got > 0) link.unanswered = 0;
      }
      if (open) open = flush(link.router.get(), link.up) && flush(link.client.get(), link.down);
      if (!open) {
        link.client.reset();  // both sides; libzmq drops a partial message
        link.router.reset();
      }
    }
    links.remove_if([](const Link& l) { return l.client.get() < 0; });
  }
  links.clear();
}

MessageGate::MessageGate(const std::string& tcp_endpoint, std::string router_path,
                         MessageGateOptions options)
    : impl_(std::make_unique<Impl>(tcp_endpoint, std::move(router_path), std::move(options))) {}

MessageGate::~MessageGate() = default;

const std::string& MessageGate::endpoint() const {
  return impl_->endpoint;
}

std::uint64_t MessageGate::closed_oversize() const {
  return impl_->oversize.load();
}

}  // namespace spotlight::rpc::detail
