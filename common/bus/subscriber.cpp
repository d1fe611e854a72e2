#include "common/bus/subscriber.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <vector>

#include <zmq_addon.hpp>

#include "common/bus/detail/framing.hpp"
#include "common/bus/errors.hpp"
#include "common/zmq/socket.hpp"

namespace spotlight::bus {

using Clock = std::chrono::steady_clock;

struct Subscriber::Impl {
  explicit Impl(SubscriberOptions opts);
  ~Impl();

  // Waits up to `timeout` for traffic and handles all of it. True when a notice or confirmation
  // arrived; false after a timeout or when only connection events were handled.
  bool pump(std::chrono::steady_clock::duration timeout);
  // Handles every message already queued on `socket`; true when there was one.
  bool drain();
  // Reads one whole message without waiting; false when none is queued.
  bool read_message(std::vector<zmq::message_t>& parts);
  void handle(std::vector<zmq::message_t>& parts);
  void handle_monitor_events();
  // Re-connects the lost endpoints that are due; true when it handled queued messages first.
  bool run_due_reconnects();

  SubscriberOptions options;
  zmq::socket_t socket;
  const std::string id = zmqio::random_hex(8);
  // Receives ZMQ_EVENT_DISCONNECTED of `socket`. libzmq reconnects after an ordinary connection
  // loss but gives an endpoint up for good after a protocol error (e.g. a frame above
  // ZMQ_MAXMSGSIZE); re-connecting every lost endpoint ourselves covers both.
  zmq::socket_t monitor;
  std::set<std::string, std::less<>> topics;
  std::vector<std::string> connected;
  // At most one reconnect per endpoint per reconnect_interval (a failing CURVE handshake
  // disconnects at once, again and again).
  std::map<std::string, Clock::time_point> last_reconnect;
  std::map<std::string, Clock::time_point> reconnect_due;

  std::uint64_t generation = 0;
  std::string live_token;          // current confirmation topic, empty when none
  std::set<std::string> acked_by;  // publisher instance ids that answered live_token
  std::deque<Notice> pending;      // notices received by wait_live()
  SubscriberCounters counters;
};

Subscriber::Impl::Impl(SubscriberOptions opts)
    : options(std::move(opts)),
      socket(zmqio::context(), zmq::socket_type::sub),
      monitor(zmqio::context(), zmq::socket_type::pair) {
  zmqio::apply_curve(socket, options.curve, "subscriber");
  zmqio::apply_max_message_size(socket, options.max_message_size, "subscriber");
  socket.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::reconnect_ivl, static_cast<int>(options.reconnect_interval.count()));
  const std::string monitor_endpoint = "inproc://spotlight.bus.subscriber.monitor." + id;
  if (zmq_socket_monitor(socket.handle(), monitor_endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    throw BusError(std::string("subscriber: zmq_socket_monitor: ") + zmq_strerror(zmq_errno()));
  }
  monitor.connect(monitor_endpoint);
  monitor.set(zmq::sockopt::linger, 0);
}

Subscriber::Impl::~Impl() {
  zmq_socket_monitor(socket.handle(), nullptr, 0);
}

void Subscriber::Impl::handle_monitor_events() {
  std::vector<zmq::message_t> parts;
  while (zmq::recv_multipart(monitor, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
    // [event: u16 + value: u32, native byte order][endpoint as given to connect()]
    std::uint16_t event = 0;
    if (parts.size() == 2 && parts[0].size() >= sizeof(event)) {
      std::memcpy(&event, parts[0].data(), sizeof(event));
    }
    const std::string endpoint = parts.size() == 2 ? parts[1].to_string() : std::string();
    parts.clear();
    if (event != ZMQ_EVENT_DISCONNECTED) continue;
    if (std::find(connected.begin(), connected.end(), endpoint) == connected.end()) continue;
    const auto last = last_reconnect.find(endpoint);
    const auto earliest =
        last == last_reconnect.end() ? Clock::now() : last->second + options.reconnect_interval;
    reconnect_due.try_emplace(endpoint, earliest);
  }
}

bool Subscriber::Impl::run_due_reconnects() {
  const auto now = Clock::now();
  const bool any_due = std::any_of(reconnect_due.begin(), reconnect_due.end(),
                                   [&](const auto& due) { return due.second <= now; });
  if (!any_due) return false;
  // Read what is queued first. A poll may have read the first frame of a message ahead
  // (ZMQ_EVENTS), and libzmq aborts the next read ("!_more", fq.cpp) when the pipe under that
  // half-read message is terminated by disconnect(). Draining also keeps the notices that arrived
  // before the connection was lost, which disconnect() would drop.
  const bool any = drain();
  for (auto it = reconnect_due.begin(); it != reconnect_due.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const std::string& endpoint = it->first;
    try {
      socket.disconnect(endpoint);
    } catch (const zmq::error_t&) {
      // Already gone.
    }
    socket.connect(endpoint);  // subscriptions are re-sent when the connection comes up
    last_reconnect[endpoint] = now;
    ++counters.reconnects;
    it = reconnect_due.erase(it);
  }
  return any;
}

bool Subscriber::Impl::pump(std::chrono::steady_clock::duration timeout) {
  if (run_due_reconnects()) return true;
  for (const auto& [endpoint, due] : reconnect_due)
    timeout = std::min(timeout, due - Clock::now());
  zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                             {monitor.handle(), 0, ZMQ_POLLIN, 0}};
  try {
    if (zmq::poll(items, 2, zmqio::poll_timeout(timeout)) == 0) return false;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw BusError(std::string("subscriber: poll: ") + e.what());
  }
  // Everything already queued first (one poll per notice would be wasteful under bursts), then
  // the lost connections: see run_due_reconnects().
  bool any = drain();
  if (items[1].revents & ZMQ_POLLIN) {
    handle_monitor_events();
    any = run_due_reconnects() || any;
  }
  return any;
}

bool Subscriber::Impl::drain() {
  bool any = false;
  std::vector<zmq::message_t> parts;
  while (read_message(parts)) {
    any = true;
    handle(parts);
    parts.clear();
  }
  return any;
}

bool Subscriber::Impl::read_message(std::vector<zmq::message_t>& parts) {
  // A message is queued whole, so once its first frame is read the others are read too, even
  // when a signal interrupts a read (EINTR): a message left half-read would be taken for the next
  // one, and would break a later disconnect() (see run_due_reconnects()).
  for (;;) {
    zmq::message_t part;
    zmq::recv_result_t got;
    try {
      got = socket.recv(part, zmq::recv_flags::dontwait);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw BusError(std::string("subscriber: receive: ") + e.what());
    }
    if (!got) {
      if (parts.empty()) return false;
      throw BusError("subscriber: receive: a message ended after " + std::to_string(parts.size()) +
                     " frames");
    }
    const bool more = part.more();
    parts.push_back(std::move(part));
    if (!more) return true;
  }
}

void Subscriber::Impl::handle(std::vector<zmq::message_t>& parts) {
  std::vector<std::string_view> frames;
  frames.reserve(parts.size());
  for (const auto& part : parts)
    frames.push_back(part.to_string_view());
  const detail::ParsedNotice notice = detail::parse_notice(frames);
  if (notice.reject != detail::FrameReject::kNone) {
    ++counters.malformed;
    return;
  }
  if (notice.control) {
    if (!live_token.empty() && notice.topic == live_token) {
      acked_by.insert(std::string(notice.payload));
    }
    return;
  }
  if (topics.find(notice.topic) == topics.end()) {
    ++counters.filtered;
    return;
  }
  pending.push_back(Notice{std::string(notice.topic), notice.version, std::string(notice.payload)});
}

Subscriber::Subscriber(SubscriberOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Subscriber::~Subscriber() = default;

void Subscriber::connect(const std::string& endpoint) {
  zmqio::connect(impl_->socket, endpoint, "subscriber");
  impl_->connected.push_back(endpoint);
}

std::string Subscriber::bind(const std::string& endpoint) {
  return zmqio::bind(impl_->socket, endpoint, "subscriber");
}

void Subscriber::subscribe(std::string_view topic) {
  detail::check_topic(topic);
  if (impl_->topics.find(topic) != impl_->topics.end()) return;
  impl_->socket.set(zmq::sockopt::subscribe, topic);
  impl_->topics.emplace(topic);
}

void Subscriber::unsubscribe(std::string_view topic) {
  const auto it = impl_->topics.find(topic);
  if (it == impl_->topics.end()) return;
  impl_->socket.set(zmq::sockopt::unsubscribe, topic);
  impl_->topics.erase(it);
}

bool Subscriber::wait_live(std::chrono::milliseconds timeout, std::size_t publishers) {
  Impl& s = *impl_;
  const std::size_t needed =
      publishers > 0 ? publishers : std::max<std::size_t>(1, s.connected.size());
  if (!s.live_token.empty()) s.socket.set(zmq::sockopt::unsubscribe, s.live_token);
  s.live_token = std::string(detail::kAckTopicPrefix) + s.id + "/" + std::to_string(++s.generation);
  s.acked_by.clear();
  s.socket.set(zmq::sockopt::subscribe, s.live_token);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (s.acked_by.size() < needed) {
    const auto remaining = deadline - std::chrono::steady_clock::now();
    if (remaining <= std::chrono::steady_clock::duration::zero()) return false;
    s.pump(remaining);
  }
  return true;
}

std::optional<Notice> Subscriber::receive(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (s.pending.empty()) {
    const auto remaining = deadline - std::chrono::steady_clock::now();
    // A zero timeout still looks once at what has arrived.
    if (!s.pump(remaining) && remaining <= std::chrono::steady_clock::duration::zero()) {
      return std::nullopt;
    }
  }
  Notice n = std::move(s.pending.front());
  s.pending.pop_front();
  ++s.counters.received;
  return n;
}

SubscriberCounters Subscriber::counters() const {
  return impl_->counters;
}

}  // namespace spotlight::bus
