#include "common/rpc/server.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zmq.hpp>

#include "common/rpc/detail/message_gate.hpp"
#include "common/rpc/detail/protocol.hpp"
#include "common/rpc/errors.hpp"
#include "common/zmq/errors.hpp"
#include "common/zmq/options.hpp"
#include "common/zmq/socket.hpp"

namespace spotlight::rpc {

using Clock = std::chrono::steady_clock;

RpcPayload::RpcPayload(std::string bytes) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  bytes_ = *owned;
  owner_ = std::move(owned);
}

namespace {

// One message as read from the ROUTER: its first frames (the routing id and at most the
// protocol's three), and how many frames it had in all.
struct Received {
  std::vector<zmq::message_t> frames;
  std::size_t total_frames = 0;
};

// Reads one message without blocking, frame by frame: frames beyond the first 1 + kRequestFrames
// are counted and freed at once instead of being kept. std::nullopt when none is waiting.
std::optional<Received> receive(zmq::socket_t& router) {
  zmq::message_t frame;
  if (!router.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  Received r;
  bool more = frame.more();
  r.frames.push_back(std::move(frame));
  r.total_frames = 1;
  while (more) {
    zmq::message_t next;
    // The rest of a message is delivered with its first frame: this never waits.
    if (!router.recv(next, zmq::recv_flags::none)) break;
    more = next.more();
    ++r.total_frames;
    if (r.frames.size() < 1 + detail::kRequestFrames) r.frames.push_back(std::move(next));
  }
  return r;
}

}  // namespace

struct RpcServer::Impl {
  Impl(BatchHandler h, RequestSink k, RpcServerOptions o);

  // A well-formed request's routing and payload frame, or std::nullopt after answering the
  // sender with an error.
  struct Parsed {
    std::uint64_t id = 0;
    std::string peer;
    std::string_view payload;  // in the received frames
  };
  std::optional<Parsed> parse(Received& received);
  void reply(const std::string& peer, std::uint64_t id, RpcStatus status, std::string_view body);
  void process(std::vector<RpcRequest>& batch);
  void send_posted();  // the replies posted by reply() from other threads

  BatchHandler handler;
  RequestSink sink;
  RpcServerOptions options;
  zmq::socket_t router;
  zmq::socket_t monitor;  // failed handshakes of `router`
  zmq::socket_t wake_in;  // run() side of the stop signal
  std::mutex wake_mutex;  // guards wake_out and posted
  zmq::socket_t wake_out;
  struct Posted {
    std::string peer;
    std::uint64_t id = 0;
    RpcReply reply;
  };
  std::vector<Posted> posted;
  void wake();  // caller holds wake_mutex

  std::atomic<bool> stop_requested{false};
  std::atomic<bool> running{false};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> malformed{0};
  std::atomic<std::uint64_t> rejected_frame_count{0};
  std::atomic<std::uint64_t> rejected_delimiter{0};
  std::atomic<std::uint64_t> rejected_header{0};
  std::atomic<std::uint64_t> rejected_too_large{0};
  std::atomic<std::uint64_t> rejected_handshake{0};
  std::atomic<std::uint64_t> rejected_message_size{0};

  // Relays of tcp:// endpoints (max_message_bytes), the directories of their ipc endpoints, and
  // the connections they closed that run() has not counted yet.
  std::vector<std::unique_ptr<detail::MessageGate>> gates;
  std::vector<std::filesystem::path> gate_dirs;
  std::vector<int> gate_locks;  // flock of each directory's "lock" file (stale-directory check)
  std::atomic<std::uint64_t> gate_closed{0};
  std::string bind_gated(const std::string& endpoint);

  void count_reject(zmqio::FrameReject why);
  ~Impl() {
    gates.clear();
    zmqio::stop_monitor(router);
    router.close();
    for (const auto& dir : gate_dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    for (const int fd : gate_locks)
      ::close(fd);
  }
};

void RpcServer::Impl::count_reject(zmqio::FrameReject why) {
  using zmqio::FrameReject;
  // The callback runs before the counter moves, so a reader who sees the count (a test, the
  // metrics scrape) also sees what the callback recorded.
  if (options.on_reject) options.on_reject(zmqio::to_string(why));
  switch (why) {
    case FrameReject::kFrameCount:
      ++rejected_frame_count;
      break;
    case FrameReject::kDelimiter:
      ++rejected_delimiter;
      break;
    case FrameReject::kHeader:
      ++rejected_header;
      break;
    case FrameReject::kTooLarge:
      ++rejected_too_large;
      break;
    case FrameReject::kHandshake:
      ++rejected_handshake;
      break;
    case FrameReject::kMessageSize:
      ++rejected_message_size;
      break;
    case FrameReject::kNone:
    case FrameReject::kBadCommand:
      break;
  }
}

RpcServer::Impl::Impl(BatchHandler h, RequestSink k, RpcServerOptions o)
    : handler(std::move(h)),
      sink(std::move(k)),
      options(std::move(o)),
      router(zmqio::context(), zmq::socket_type::router),
      wake_in(zmqio::context(), zmq::socket_type::pair),
      wake_out(zmqio::context(), zmq::socket_type::pair) {
  if (!handler && !sink) throw RpcError("rpc server: handler is empty");
  if (options.max_batch < 1) throw RpcError("rpc server: max_batch must be >= 1");
  if (options.batch_window.count() < 0) throw RpcError("rpc server: batch_window must be >= 0");
  if (options.max_message_size >= 0 && options.max_message_size < zmqio::kMinMaxMessageSize) {
    throw RpcError("rpc server: max_message_size must be >= " +
                   std::to_string(zmqio::kMinMaxMessageSize) + " or negative (unlimited)");
  }
  if (options.handshake_timeout.count() <= 0) {
    throw RpcError("rpc server: handshake_timeout must be > 0");
  }
  if (options.max_message_bytes > 0 && options.max_message_bytes < options.max_request_bytes) {
    throw RpcError("rpc server: max_message_bytes must be 0 or >= max_request_bytes");
  }
  zmqio::apply_curve(router, options.curve, "rpc server");
  zmqio::apply_max_message_size(router, options.max_message_size, "rpc server");
  zmqio::apply_handshake_timeout(router, options.handshake_timeout, "rpc server");
  monitor = zmqio::monitor_handshake_failures(router, "rpc server");
  router.set(zmq::sockopt::sndhwm, options.high_water_mark);
  router.set(zmq::sockopt::rcvhwm, options.high_water_mark);
  router.set(zmq::sockopt::linger, 0);
  const std::string inproc = "inproc://spotlight.rpc.server." + zmqio::random_hex(8);
  wake_in.bind(inproc);
  wake_out.connect(inproc);
  wake_out.set(zmq::sockopt::linger, 0);
}

void RpcServer::Impl::reply(const std::string& peer, std::uint64_t id, RpcStatus status,
                            std::string_view body) {
  const std::string header = detail::encode_reply_header(id, status);
  try {
    // ROUTER drops replies to peers that are gone or past their high-water mark.
    router.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    router.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    router.send(zmq::buffer(header), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    router.send(zmq::buffer(body), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // Unroutable peer: nothing to answer.
  }
}

std::optional<RpcServer::Impl::Parsed> RpcServer::Impl::parse(Received& received) {
  // frames: [peer][""][header][payload]
  if (received.frames.empty()) return std::nullopt;
  std::string peer = received.frames[0].to_string();
  std::vector<std::string_view> frames;
  frames.reserve(received.frames.size() - 1);
  for (std::size_t i = 1; i < received.frames.size(); ++i)
    frames.push_back(received.frames[i].to_string_view());
  detail::ParsedRequest parsed =
      detail::parse_request(frames, options.max_request_bytes, received.total_frames - 1);
  if (parsed.reject != zmqio::FrameReject::kNone) {
    ++malformed;
    count_reject(parsed.reject);
    reply(peer, parsed.id.value_or(0), parsed.status, parsed.error);
    return std::nullopt;
  }
  return Parsed{*parsed.id, std::move(peer), parsed.payload};
}

void RpcServer::Impl::wake() {
  try {
    wake_out.send(zmq::message_t(), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // A wake-up is already queued.
  }
}

void RpcServer::Impl::send_posted() {
  std::vector<Posted> batch;
  {
    std::lock_guard lock(wake_mutex);
    batch.swap(posted);
  }
  for (auto& p : batch) {
    if (!p.reply.ok) ++errors;
    reply(p.peer, p.id, p.reply.ok ? RpcStatus::kOk : RpcStatus::kHandlerError, p.reply.body);
  }
  batch.clear();  // here, release_after_send
}

void RpcServer::Impl::process(std::vector<RpcRequest>& batch) {
  struct Route {
    std::string peer;
    std::uint64_t id;
  };
  std::vector<Route> routes;
  routes.reserve(batch.size());
  for (const auto& r : batch)
    routes.push_back(Route{r.peer, r.id});
  ++batches;
  requests += batch.size();

  std::vector<RpcReply> replies;
  std::string failure;
  try {
    replies = handler(std::move(batch));
    if (replies.size() != routes.size()) {
      failure = "handler returned " + std::to_string(replies.size()) + " replies for " +
                std::to_string(routes.size()) + " requests";
    }
  } catch (const std::exception& e) {
    failure = std::string("handler failed: ") + e.what();
  } catch (...) {
    failure = "handler failed with a non-standard exception";
  }
  batch.clear();

  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (!failure.empty()) {
      ++errors;
      reply(routes[i].peer, routes[i].id, RpcStatus::kHandlerError, failure);
    } else if (!replies[i].ok) {
      ++errors;
      reply(routes[i].peer, routes[i].id, RpcStatus::kHandlerError, replies[i].body);
    } else {
      reply(routes[i].peer, routes[i].id, RpcStatus::kOk, replies[i].body);
    }
  }
}

RpcServer::RpcServer(BatchHandler handler, RpcServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(handler), nullptr, std::move(options))) {}

RpcServer::RpcServer(RequestSink sink, RpcServerOptions options)
    : impl_(std::make_unique<Impl>(nullptr, std::move(sink), std::move(options))) {}

RpcServer::~RpcServer() = default;

namespace {

// The directories of ipc endpoints that servers killed without unwinding (SIGKILL) left in `tmp`:
// each server holds an flock on its directory's "lock" file while it lives.
void remove_stale_ipc_dirs(const std::filesystem::path& tmp) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, error)) {
    if (entry.path().filename().string().rfind("spotlight-rpc-", 0) != 0) continue;
    const int fd = ::open((entry.path() / "lock").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // not ours, or being created
    const bool stale = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (stale) std::filesystem::remove_all(entry.path(), error);
    ::close(fd);
  }
}

}  // namespace

std::string RpcServer::Impl::bind_gated(const std::string& endpoint) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  remove_stale_ipc_dirs(dir);
  std::string pattern = dir + "/spotlight-rpc-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw RpcError("rpc server: cannot create a directory for its ipc endpoint (" + pattern +
                   "): " + std::strerror(errno));
  }
  gate_dirs.emplace_back(pattern);
  const int lock = ::open((pattern + "/lock").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    throw RpcError("rpc server: cannot lock " + pattern + "/lock: " + std::strerror(errno));
  }
  gate_locks.push_back(lock);  // released with the process, however it ends
  const std::string path = pattern + "/router";
  zmqio::bind(router, "ipc://" + path, "rpc server");
  detail::MessageGateOptions o;
  o.max_unanswered_bytes = options.max_message_bytes;
  o.on_oversize = [this] {
    ++gate_closed;
    std::lock_guard lock(wake_mutex);
    wake();
  };
  gates.push_back(std::make_unique<detail::MessageGate>(endpoint, path, std::move(o)));
  return gates.back()->endpoint();
}

std::string RpcServer::bind(const std::string& endpoint) {
  if (impl_->running) throw RpcError("rpc server: bind() while run() is serving");
  try {
    if (impl_->options.max_message_bytes > 0 && endpoint.rfind("tcp://", 0) == 0) {
      return impl_->bind_gated(endpoint);
    }
    return zmqio::bind(impl_->router, endpoint, "rpc server");
  } catch (const zmqio::CurveError&) {
    throw;
  } catch (const zmqio::SocketError& e) {
    throw RpcError(e.what());
  }
}

void RpcServer::stop() {
  impl_->stop_requested = true;
  std::lock_guard lock(impl_->wake_mutex);
  impl_->wake();
}

void RpcServer::reply(const std::string& peer, std::uint64_t id, RpcReply reply) {
  std::lock_guard lock(impl_->wake_mutex);
  impl_->posted.push_back(Impl::Posted{peer, id, std::move(reply)});
  impl_->wake();
}

void RpcServer::run(std::stop_token stop_token) {
  Impl& s = *impl_;
  if (s.running.exchange(true)) throw RpcError("rpc server: run() is already serving");
  struct NotRunning {
    std::atomic<bool>& running;
    ~NotRunning() { running = false; }
  } not_running{s.running};
  std::stop_callback on_stop(stop_token, [this] { stop(); });

  std::vector<RpcRequest> batch;
  batch.reserve(s.options.max_batch);
  Clock::time_point batch_deadline{};
  zmq::pollitem_t items[] = {{s.router.handle(), 0, ZMQ_POLLIN, 0},
                             {s.wake_in.handle(), 0, ZMQ_POLLIN, 0},
                             {s.monitor.handle(), 0, ZMQ_POLLIN, 0}};
  while (!s.stop_requested) {
    const auto timeout = batch.empty() ? std::chrono::milliseconds(-1)
                                       : zmqio::poll_timeout(batch_deadline - Clock::now());
    try {
      zmq::poll(items, 3, timeout);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw RpcError(std::string("rpc server: poll: ") + e.what());
    }
    if (items[1].revents & ZMQ_POLLIN) {
      zmq::message_t drop;
      while (s.wake_in.recv(drop, zmq::recv_flags::dontwait)) {
      }
    }
    if (items[2].revents & ZMQ_POLLIN) {
      for (std::size_t n = zmqio::count_handshake_failures(s.monitor); n > 0; --n)
        s.count_reject(zmqio::FrameReject::kHandshake);
    }
    for (std::uint64_t n = s.gate_closed.exchange(0); n > 0; --n) {
      ++s.malformed;
      s.count_reject(zmqio::FrameReject::kMessageSize);
    }
    if (s.sink) s.send_posted();
    if (s.stop_requested) break;
    // Bounded, so a flood of malformed messages cannot keep a batch from being answered.
    const std::size_t max_reads = 4 * s.options.max_batch + 64;
    for (std::size_t reads = 0; reads < max_reads && batch.size() < s.options.max_batch; ++reads) {
      auto received = receive(s.router);
      if (!received) break;
      auto request = s.parse(*received);
      if (!request) continue;
      if (s.sink) {
        ++s.requests;
        // The payload frame moves into a shared holder: the sink's RpcPayload keeps it alive.
        auto frame = std::make_shared<zmq::message_t>(std::move(received->frames.back()));
        const std::string_view bytes = frame->to_string_view();
        const std::string peer = request->peer;
        try {
          s.sink(RpcCall{request->id, std::move(request->peer),
                         RpcPayload(std::shared_ptr<const void>(frame, frame.get()), bytes)});
        } catch (const std::exception& e) {
          ++s.errors;
          s.reply(peer, request->id, RpcStatus::kHandlerError,
                  std::string("request sink failed: ") + e.what());
        }
        continue;
      }
      if (batch.empty()) batch_deadline = Clock::now() + s.options.batch_window;
      batch.push_back(
          RpcRequest{request->id, std::move(request->peer), std::string(request->payload)});
    }
    if (!batch.empty() && (batch.size() >= s.options.max_batch || Clock::now() >= batch_deadline)) {
      s.process(batch);
    }
  }
  if (!batch.empty()) s.process(batch);
  if (s.sink) s.send_posted();
}

RpcServerCounters RpcServer::counters() const {
  RpcServerCounters c;
  c.requests = impl_->requests.load();
  c.batches = impl_->batches.load();
  c.errors = impl_->errors.load();
  c.malformed = impl_->malformed.load();
  c.rejected_frame_count = impl_->rejected_frame_count.load();
  c.rejected_delimiter = impl_->rejected_delimiter.load();
  c.rejected_header = impl_->rejected_header.load();
  c.rejected_too_large = impl_->rejected_too_large.load();
  c.rejected_handshake = impl_->rejected_handshake.load();
  c.rejected_message_size = impl_->rejected_message_size.load();
  return c;
}

}  // namespace spotlight::rpc
