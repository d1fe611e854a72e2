#pragma once
// Publisher: sends notices over ZeroMQ (an XPUB socket owned by an internal I/O thread).
//
//   bus::Publisher pub(bus::PublisherOptions{});
//   std::string ep = pub.bind("tcp://127.0.0.1:*");   // "tcp://127.0.0.1:40123"
//   pub.publish("weights", 7, payload);
//
// Contract:
// - Thread-safe: every method may be called from any thread. Notices published from one thread
//   leave in the order publish() was called.
// - publish() returns once the notice is handed to the I/O thread. Delivery is best-effort: a
//   subscriber that is not connected yet, or that lags more than send_high_water_mark notices,
//   misses notices. Followers recover from the snapshot source (versioned_follower.hpp).
// - The I/O thread answers subscription confirmations (Subscriber::wait_live) as soon as they
//   arrive, whether or not anything is being published.
// - Binds only the addresses passed to bind(); nothing listens by default.
// - Destruction flushes the notices already published for up to `linger`, in the background.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/bus/options.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::bus {

struct PublisherOptions {
  zmqio::CurveOptions curve;  // usually curve.server on the side that binds
  // Largest topic or payload frame publish() accepts (MessageTooLarge otherwise), and the largest
  // frame accepted from subscribers (ZMQ_MAXMSGSIZE). At least zmqio::kMinMaxMessageSize; negative:
  // unlimited. Keep it <= the subscribers' limit: they drop the connection on a larger frame.
  std::int64_t max_message_size = kDefaultMaxMessageSize;
  int send_high_water_mark = kDefaultHighWaterMark;  // ZMQ_SNDHWM: notices queued per subscriber
  // Peers that do not complete the ZMTP/CURVE handshake in this time are dropped (counted in
  // handshake_failures). > 0.
  std::chrono::milliseconds handshake_timeout = zmqio::kDefaultHandshakeTimeout;
  std::chrono::milliseconds linger = kDefaultLinger;  // flush time after destruction
};

struct PublisherCounters {
  // Frames from subscribers that are not (un)subscriptions (a broken or hostile peer); dropped.
  std::uint64_t rejected_frames = 0;
  // Connections that failed the ZMTP/CURVE handshake (wrong key, not ZMTP, hung up early).
  std::uint64_t handshake_failures = 0;
};

class Publisher {
 public:
  explicit Publisher(PublisherOptions options = {});
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Listens on `endpoint` and returns the resolved address ("tcp://127.0.0.1:*" gets its port).
  // Throws BusError naming the endpoint.
  std::string bind(const std::string& endpoint);
  // Connects to a subscriber (or proxy) that binds. Throws BusError.
  void connect(const std::string& endpoint);

  // Sends {topic, version, payload}. Throws InvalidTopic for an empty topic or one starting with
  // byte 0xFF (reserved), MessageTooLarge when a frame exceeds max_message_size, BusError when the
  // I/O thread has failed.
  void publish(std::string_view topic, std::uint64_t version, std::string_view payload);

  // Waits until at least one subscriber subscribes to exactly `topic` (ZeroMQ reports the first
  // subscription of a topic and the last unsubscription). True when one is subscribed.
  bool wait_for_subscriber(std::string_view topic, std::chrono::milliseconds timeout);

  // Thread-safe snapshot.
  PublisherCounters counters() const;

  // The resolved endpoints of every successful bind(), in order.
  std::vector<std::string> endpoints() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::bus
