#include "common/bus/publisher.hpp"

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <zmq_addon.hpp>

#include "common/bus/detail/framing.hpp"
#include "common/bus/errors.hpp"
#include "common/zmq/socket.hpp"

namespace spotlight::bus {
namespace {

// Bound on how long a caller waits for the I/O thread to take a command.
constexpr std::chrono::milliseconds kCommandTimeout{10000};

// Commands from callers to the I/O thread over an inproc PAIR: [kind][arguments...].
//   kPublish: [topic][version][payload]
//   kBind / kConnect: [endpoint][SharedPromise* as raw bytes; the I/O thread deletes it]
//   kStop: nothing; the I/O thread flushes and exits.
enum class Command : char { kPublish = 'P', kBind = 'B', kConnect = 'C', kStop = 'S' };

// Commands handled per wake-up before subscriptions get a turn.
constexpr int kCommandsPerTurn = 256;

using SharedPromise = std::shared_ptr<std::promise<std::string>>;

zmq::message_t kind_frame(Command c) {
  return zmq::message_t(&c, 1);
}

}  // namespace

struct Publisher::Impl {
  explicit Impl(PublisherOptions opts);
  ~Impl();

  void send_command(std::vector<zmq::message_t>& parts);
  std::string sync_command(Command kind, const std::string& endpoint);
  void io_loop();
  bool drain_commands();  // false once kStop was seen
  void drain_subscriptions();
  void check_alive() const;

  PublisherOptions options;
  const std::string instance_id = zmqio::random_hex(8);

  // Owned by the I/O thread once it runs.
  zmq::socket_t xpub;
  zmq::socket_t monitor;  // failed handshakes of xpub
  zmq::socket_t cmd_in;

  std::mutex cmd_mutex;  // guards cmd_out
  zmq::socket_t cmd_out;

  mutable std::mutex state_mutex;  // guards the fields below
  std::condition_variable state_cv;
  std::set<std::string, std::less<>> subscribed;
  std::vector<std::string> endpoints;
  std::string failure;  // non-empty once the I/O thread died
  std::atomic<std::uint64_t> rejected_frames{0};
  std::atomic<std::uint64_t> handshake_failures{0};

  std::thread io;
};

Publisher::Impl::Impl(PublisherOptions opts)
    : options(std::move(opts)),
      xpub(zmqio::context(), zmq::socket_type::xpub),
      cmd_in(zmqio::context(), zmq::socket_type::pair),
      cmd_out(zmqio::context(), zmq::socket_type::pair) {
  zmqio::apply_curve(xpub, options.curve, "publisher");
  zmqio::apply_max_message_size(xpub, options.max_message_size, "publisher");
  xpub.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
  zmqio::apply_handshake_timeout(xpub, options.handshake_timeout, "publisher");
  monitor = zmqio::monitor_handshake_failures(xpub, "publisher");

  const std::string inproc = "inproc://spotlight.bus.publisher." + zmqio::random_hex(8);
  cmd_in.bind(inproc);
  cmd_out.connect(inproc);
  cmd_out.set(zmq::sockopt::sndtimeo, static_cast<int>(kCommandTimeout.count()));
  cmd_out.set(zmq::sockopt::linger, 0);
  io = std::thread([this] { io_loop(); });
}

Publisher::Impl::~Impl() {
  if (io.joinable()) {
    try {
      std::vector<zmq::message_t> parts;
      parts.push_back(kind_frame(Command::kStop));
      send_command(parts);
    } catch (const std::exception&) {
      // The I/O thread is gone already (it recorded why); join below returns at once.
    }
    io.join();
  }
}

void Publisher::Impl::check_alive() const {
  std::lock_guard lock(state_mutex);
  if (!failure.empty()) throw BusError("publisher I/O thread failed: " + failure);
}

void Publisher::Impl::send_command(std::vector<zmq::message_t>& parts) {
  std::lock_guard lock(cmd_mutex);
  if (!zmq::send_multipart(cmd_out, parts)) {
    throw BusError("publisher: I/O thread did not take a command within " +
                   std::to_string(kCommandTimeout.count()) + " ms");
  }
}

std::string Publisher::Impl::sync_command(Command kind, const std::string& endpoint) {
  check_alive();
  // The I/O thread takes ownership of `ptr` (a reference to the shared promise), so a caller
  // that gives up waiting leaves nothing dangling.
  auto result = std::make_shared<std::promise<std::string>>();
  std::future<std::string> done = result->get_future();
  auto* ptr = new SharedPromise(result);
  std::vector<zmq::message_t> parts;
  parts.push_back(kind_frame(kind));
  parts.emplace_back(endpoint.data(), endpoint.size());
  parts.emplace_back(&ptr, sizeof(ptr));
  try {
    send_command(parts);
  } catch (...) {
    delete ptr;
    throw;
  }
  if (done.wait_for(kCommandTimeout) != std::future_status::ready) {
    throw BusError("publisher: I/O thread did not answer " + endpoint + " within " +
                   std::to_string(kCommandTimeout.count()) + " ms");
  }
  return done.get();
}

void Publisher::Impl::io_loop() {
  try {
    zmq::pollitem_t items[] = {{cmd_in.handle(), 0, ZMQ_POLLIN, 0},
                               {xpub.handle(), 0, ZMQ_POLLIN, 0},
                               {monitor.handle(), 0, ZMQ_POLLIN, 0}};
    for (;;) {
      try {
        zmq::poll(items, 3, std::chrono::milliseconds(-1));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (items[2].revents & ZMQ_POLLIN) {
        handshake_failures.fetch_add(zmqio::count_handshake_failures(monitor),
                                     std::memory_order_relaxed);
      }
      if (items[1].revents & ZMQ_POLLIN) drain_subscriptions();
      if ((items[0].revents & ZMQ_POLLIN) && !drain_commands()) break;
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(state_mutex);
    failure = e.what();
  }
  zmqio::stop_monitor(xpub);
  monitor.close();
  xpub.set(zmq::sockopt::linger, static_cast<int>(options.linger.count()));
  xpub.close();
  cmd_in.close();
  state_cv.notify_all();
}

bool Publisher::Impl::drain_commands() {
  for (int i = 0; i < kCommandsPerTurn; ++i) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(cmd_in, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
      return true;
    }
    const auto kind = static_cast<Command>(*parts[0].data<char>());
    switch (kind) {
      case Command::kStop:
        return false;
      case Command::kPublish:
        // XPUB never blocks: a subscriber past its high-water mark misses the notice.
        xpub.send(parts[1], zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        xpub.send(parts[2], zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        xpub.send(parts[3], zmq::send_flags::dontwait);
        break;
      case Command::kBind:
      case Command::kConnect: {
        SharedPromise* raw = nullptr;
        std::memcpy(&raw, parts[2].data(), sizeof(raw));
        const std::unique_ptr<SharedPromise> result_owner(raw);
        std::promise<std::string>* result = raw->get();
        const std::string endpoint = parts[1].to_string();
        try {
          if (kind == Command::kBind) {
            std::string resolved = zmqio::bind(xpub, endpoint, "publisher");
            {
              std::lock_guard lock(state_mutex);
              endpoints.push_back(resolved);
            }
            result->set_value(std::move(resolved));
          } else {
            zmqio::connect(xpub, endpoint, "publisher");
            result->set_value(endpoint);
          }
        } catch (...) {
          result->set_exception(std::current_exception());
        }
        break;
      }
    }
  }
  return true;
}

void Publisher::Impl::drain_subscriptions() {
  zmq::message_t msg;
  while (xpub.recv(msg, zmq::recv_flags::dontwait)) {
    const auto parsed = detail::parse_subscription(msg.to_string_view());
    if (!parsed) {
      // Subscribers only send (un)subscriptions; anything else is a hostile or broken peer.
      rejected_frames.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::string topic(parsed->topic);
    if (topic.starts_with(detail::kAckTopicPrefix)) {
      if (parsed->subscribe) {
        xpub.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        xpub.send(zmq::buffer(zmqio::encode_u64(0)),
                  zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        xpub.send(zmq::buffer(instance_id), zmq::send_flags::dontwait);
      }
      continue;
    }
    {
      std::lock_guard lock(state_mutex);
      if (parsed->subscribe) {
        subscribed.insert(std::move(topic));
      } else {
        subscribed.erase(topic);
      }
    }
    state_cv.notify_all();
  }
}

Publisher::Publisher(PublisherOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Publisher::~Publisher() = default;

std::string Publisher::bind(const std::string& endpoint) {
  return impl_->sync_command(Command::kBind, endpoint);
}

void Publisher::connect(const std::string& endpoint) {
  impl_->sync_command(Command::kConnect, endpoint);
}

void Publisher::publish(std::string_view topic, std::uint64_t version, std::string_view payload) {
  detail::check_topic(topic);
  const std::int64_t limit = impl_->options.max_message_size;
  for (const std::size_t size : {topic.size(), payload.size()}) {
    if (limit >= 0 && size > static_cast<std::uint64_t>(limit)) {
      throw MessageTooLarge("publish " + std::string(topic) + ": a frame of " +
                                std::to_string(size) + " bytes exceeds max_message_size " +
                                std::to_string(limit),
                            size, static_cast<std::size_t>(limit));
    }
  }
  impl_->check_alive();
  std::vector<zmq::message_t> parts;
  parts.push_back(kind_frame(Command::kPublish));
  parts.emplace_back(topic.data(), topic.size());
  const std::string v = zmqio::encode_u64(version);
  parts.emplace_back(v.data(), v.size());
  parts.emplace_back(payload.data(), payload.size());
  impl_->send_command(parts);
}

bool Publisher::wait_for_subscriber(std::string_view topic, std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->state_mutex);
  return impl_->state_cv.wait_for(lock, timeout, [&] {
    return impl_->subscribed.find(topic) != impl_->subscribed.end() || !impl_->failure.empty();
  }) && impl_->subscribed.find(topic) != impl_->subscribed.end();
}

PublisherCounters Publisher::counters() const {
  return PublisherCounters{impl_->rejected_frames.load(std::memory_order_relaxed),
                           impl_->handshake_failures.load(std::memory_order_relaxed)};
}

std::vector<std::string> Publisher::endpoints() const {
  std::lock_guard lock(impl_->state_mutex);
  return impl_->endpoints;
}

}  // namespace spotlight::bus
