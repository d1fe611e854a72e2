#include "common/bus/publisher.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/run/run_config.hpp"
#include "common/zmq/curve.hpp"

#ifdef SPOTLIGHT_RUN_SERVICES
#include "common/zmq/curve_config.hpp"
#endif

namespace spotlight::run {

using config::Entry;

const config::Schema& bus_schema() {
  static const config::Schema schema{
      Entry::string("bus.trainer_endpoint", "tcp://127.0.0.1:5560",
                    "ZeroMQ PUB endpoint the trainer binds (weights, iteration notices)."),
      Entry::string("bus.subscribe_endpoint", "",
                    "Where the planner and explorers connect to the trainer's bus (empty: "
                    "bus.trainer_endpoint; set it when the trainer binds a wildcard address). "
                    "Unreachable: they follow Redis alone."),
      Entry::boolean("bus.subscribe", true,
                     "Planner and explorers follow the trainer's notices (the planner plans on "
                     "iteration events, explorers prefetch each new weights version) and the "
                     "trainer waits on the result bell; false: all of them poll Redis."),
      Entry::integer("bus.resync_ms", 1000,
                     "Recovery period of every notice: a subscriber re-reads the state from Redis "
                     "when it has heard nothing this long, and the trainer re-reads the results "
                     "at least this often while it waits on the result bell.")
          .range(10, 600000),
      Entry::integer("bus.max_message_bytes", bus::kDefaultMaxMessageSize,
                     "Largest ZeroMQ frame of the trainer's bus, either way (ZMQ_MAXMSGSIZE).")
          .range(zmqio::kMinMaxMessageSize, std::int64_t{1} << 30),
      Entry::integer("bus.handshake_timeout_ms", zmqio::kDefaultHandshakeTimeout.count(),
                     "Peers of the trainer's bus that do not complete the ZeroMQ (CURVE) "
                     "handshake in this time are dropped.")
          .range(1, 600000),
      Entry::string("bus.curve.server_secret_file", "",
                    "zcert key pair file (spotlight-keygen): the trainer's bus is CURVE-encrypted; "
                    "empty: plain text."),
      Entry::string("bus.curve.server_public_file", "",
                    "Planner, explorers: zcert file with the trainer bus's public key (set when "
                    "the bus is CURVE-encrypted)."),
      Entry::string("bus.curve.client_secret_file", "",
                    "Planner, explorers: zcert key pair of this subscriber (empty: an "
                    "ephemeral pair)."),
  };
  return schema;
}

// The readers open ZeroMQ sockets: not part of a core-only build.
#ifdef SPOTLIGHT_RUN_SERVICES
bus::PublisherOptions trainer_bus_options(const config::Config& c) {
  bus::PublisherOptions o;
  o.max_message_size = c.get_int("bus.max_message_bytes");
  o.curve = zmqio::curve_server_options(c, "bus.curve.server_secret_file");
  o.handshake_timeout = std::chrono::milliseconds(c.get_int("bus.handshake_timeout_ms"));
  return o;
}

std::optional<BusSubscription> bus_subscription(const config::Config& c) {
  if (!c.get_bool("bus.subscribe")) return std::nullopt;
  BusSubscription s;
  s.endpoint = c.get_string("bus.subscribe_endpoint");
  if (s.endpoint.empty()) s.endpoint = c.get_string("bus.trainer_endpoint");
  if (s.endpoint.empty()) return std::nullopt;
  s.subscriber.max_message_size = c.get_int("bus.max_message_bytes");
  s.subscriber.curve = zmqio::curve_client_options(c, "bus.curve.server_public_file",
                                                   "bus.curve.client_secret_file");
  s.follower.follower.resync_interval = std::chrono::milliseconds(c.get_int("bus.resync_ms"));
  return s;
}

#endif

}  // namespace spotlight::run
