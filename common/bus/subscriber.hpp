#pragma once
// Subscriber: receives notices of chosen topics (a ZeroMQ SUB socket).
//
//   bus::Subscriber sub;
//   sub.connect(endpoint);
//   sub.subscribe("weights");
//   if (!sub.wait_live(5s)) { /* publisher unreachable: rely on the snapshot for now */ }
//   while (auto n = sub.receive(100ms)) handle(*n);
//
// Contract:
// - Publishers must be bus::Publisher: it answers the confirmations of wait_live() (a plain
//   ZeroMQ PUB delivers notices but never confirms).
// - Not thread-safe: use one Subscriber from one thread at a time.
// - Topics match exactly (ZeroMQ filters by prefix; this class drops the other matches).
// - A subscription is live only once the publisher has processed it (the "slow joiner"
//   problem): notices published before that are not delivered. wait_live() confirms it.
// - Best-effort: notices may be missed (before the subscription is live, at the high-water mark,
//   while reconnecting after a publisher restart or an oversized frame). Never the only copy of
//   anything: use VersionedFollower to recover state from the snapshot source.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/bus/notice.hpp"
#include "common/bus/options.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::bus {

struct SubscriberOptions {
  zmqio::CurveOptions curve;  // usually curve.client on the side that connects
  // ZMQ_MAXMSGSIZE: a publisher that sends a larger frame is disconnected; the oversized notice
  // and whatever was in flight are lost, then the subscriber reconnects (during receive() or
  // wait_live()). At least zmqio::kMinMaxMessageSize; negative: unlimited.
  std::int64_t max_message_size = kDefaultMaxMessageSize;
  int receive_high_water_mark = kDefaultHighWaterMark;  // ZMQ_RCVHWM
  // Pause between reconnects of one endpoint (also ZMQ_RECONNECT_IVL).
  std::chrono::milliseconds reconnect_interval = kDefaultReconnectInterval;
};

struct SubscriberCounters {
  std::uint64_t received = 0;    // notices returned by receive()
  std::uint64_t malformed = 0;   // messages without the 3 notice frames or an 8-byte version
  std::uint64_t filtered = 0;    // prefix matches of another topic, dropped
  std::uint64_t reconnects = 0;  // connections re-established after they were lost
};

class Subscriber {
 public:
  explicit Subscriber(SubscriberOptions options = {});
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Connects to a publisher, which does not have to be up yet. A lost connection (publisher
  // restart, oversized frame, failed handshake) is re-established, at most once per
  // reconnect_interval and only while receive() or wait_live() runs; subscriptions are re-sent.
  // Throws BusError.
  void connect(const std::string& endpoint);
  // Listens for publishers that connect (the reverse topology). Returns the resolved endpoint.
  std::string bind(const std::string& endpoint);

  // Idempotent. Throws InvalidTopic for an empty topic or one starting with byte 0xFF.
  void subscribe(std::string_view topic);
  void unsubscribe(std::string_view topic);

  // Waits until `publishers` distinct publishers (0: the number of connect() calls, at least 1)
  // have confirmed every subscription made before this call. Equivalent to:
  //
  //   token = fresh unique control topic;  subscribe(token)   // queued after all subscriptions
  //   until timeout: each publisher that processes the token answers with its instance id
  //   return number of distinct answering publishers >= publishers
  //
  // Notices received while waiting are kept for receive(). A publisher that restarts later
  // answers again, but only a new wait_live() call looks at it.
  bool wait_live(std::chrono::milliseconds timeout, std::size_t publishers = 0);

  // The next notice of a subscribed topic, or std::nullopt after `timeout`.
  std::optional<Notice> receive(std::chrono::milliseconds timeout);

  SubscriberCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::bus
