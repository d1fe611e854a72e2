// The run schema's security keys: CURVE key files for the trainer's bus and the reward clients,
// the bus frame limit, and loopback-only defaults for every listening address.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/bus/errors.hpp"
#include "common/bus/publisher.hpp"
#include "common/bus/subscriber.hpp"
#include "common/config/error.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/run/run_config.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/curve_config.hpp"

namespace spotlight::run {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "spotlight-run-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

config::Config load(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  return config::Config::load(run_schema(), sources);
}

TEST(RunSecurity, ListeningAddressesDefaultToLoopback) {
  const auto defaults = load({});
  EXPECT_TRUE(defaults.get_string("bus.trainer_endpoint").starts_with("tcp://127.0.0.1:"));
  const std::string metrics = defaults.get_string("metrics.bind");
  EXPECT_TRUE(metrics.empty() || metrics.starts_with("127.0.0.1:")) << metrics;
  const auto bus = trainer_bus_options(defaults);
  EXPECT_FALSE(bus.curve.enabled());
  EXPECT_EQ(bus.max_message_size, bus::kDefaultMaxMessageSize);
  EXPECT_FALSE(reward::remote_reward_options(defaults).has_value());  // in-process scoring
}

TEST(RunSecurity, CurveKeyFilesEncryptTheTrainerBusAndWrongKeysAreRefused) {
  if (!zmqio::curve_available()) GTEST_SKIP() << "libzmq built without CURVE";
  TempDir dir;
  zmqio::generate_curve_key_files(dir / "bus.key", dir / "bus.pub");
  zmqio::generate_curve_key_files(dir / "other.key", dir / "other.pub");
  const auto trainer =
      load({"bus.curve.server_secret_file=" + dir / "bus.key", "bus.max_message_bytes=4096"});
  const auto options = trainer_bus_options(trainer);
  ASSERT_TRUE(options.curve.server.has_value());
  EXPECT_EQ(options.max_message_size, 4096);
  bus::Publisher pub(options);
  const std::string ep = pub.bind("tcp://127.0.0.1:*");
  EXPECT_THROW(pub.publish("weights", 1, std::string(5000, 'x')), bus::MessageTooLarge);

  // Subscribers configured the way reward clients are: the server's public key file.
  const auto subscriber = [&](const std::string& server_public_file) {
    bus::SubscriberOptions o;
    o.curve = zmqio::curve_client_options(
        load({"reward.curve.server_public_file=" + server_public_file}),
        "reward.curve.server_public_file", "reward.curve.client_secret_file");
    auto sub = std::make_unique<bus::Subscriber>(o);
    sub->connect(ep);
    sub->subscribe("weights");
    return sub;
  };
  auto good = subscriber(dir / "bus.pub");
  ASSERT_TRUE(good->wait_live(5s));
  pub.publish("weights", 1, "v1");
  const auto notice = good->receive(5s);
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->payload, "v1");
  EXPECT_FALSE(subscriber(dir / "other.pub")->wait_live(300ms));  // wrong server key
  bus::Subscriber plain;
  plain.connect(ep);
  plain.subscribe("weights");
  EXPECT_FALSE(plain.wait_live(300ms));
}

// Raw TCP garbage at the trainer's bus never completes a handshake: the publisher drops the peer
// after bus.handshake_timeout_ms and counts it.
TEST(RunSecurity, TrainerBusDropsPeersThatNeverHandshake) {
  const auto options = trainer_bus_options(load({"bus.handshake_timeout_ms=200"}));
  EXPECT_EQ(options.handshake_timeout, 200ms);
  bus::Publisher pub(options);
  const std::string ep = pub.bind("tcp://127.0.0.1:*");
  const int port = std::stoi(ep.substr(ep.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  timeval tv{10, 0};  // bound on the whole wait below
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  const std::string garbage(1000, '\x42');
  ASSERT_EQ(::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(garbage.size()));
  char buffer[256];
  ssize_t n = 0;
  while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) {
  }
  ::close(fd);
  EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "the publisher kept the garbage peer";
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (pub.counters().handshake_failures < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pub.counters().handshake_failures, 1u);
}

TEST(RunSecurity, UnusableKeyFilesAreConfigErrorsNamingTheKey) {
  if (!zmqio::curve_available()) GTEST_SKIP() << "libzmq built without CURVE";
  TempDir dir;
  zmqio::generate_curve_key_files(dir / "k.key", dir / "k.pub");
  std::ofstream(dir / "garbage") << "curve\n    public-key = \"not a key\"\n";
  const auto expect_key = [](const auto& f, const std::string& key) {
    try {
      f();
      ADD_FAILURE() << "accepted, expected an error naming " << key;
    } catch (const config::ConfigError& e) {
      EXPECT_EQ(e.key(), key) << e.what();
    }
  };
  expect_key([&] { trainer_bus_options(load({"bus.curve.server_secret_file=" + dir / "none"})); },
             "bus.curve.server_secret_file");
  // A public-only file cannot be a server's key pair.
  expect_key([&] { trainer_bus_options(load({"bus.curve.server_secret_file=" + dir / "k.pub"})); },
             "bus.curve.server_secret_file");
  expect_key(
      [&] {
        reward::remote_reward_options(load({"reward.curve.server_public_file=" + dir / "garbage"}));
      },
      "reward.curve.server_public_file");
  expect_key(
      [&] {
        reward::remote_reward_options(load({"reward.curve.client_secret_file=" + dir / "k.key"}));
      },
      "reward.curve.client_secret_file");  // a client key without the server's public key
  const auto client = reward::remote_reward_options(load(
      {"reward.endpoint=tcp://127.0.0.1:5557", "reward.curve.server_public_file=" + dir / "k.pub",
       "reward.curve.client_secret_file=" + dir / "k.key"}));
  ASSERT_TRUE(client.has_value());
  const zmqio::CurveOptions& both = client->rpc.curve;
  ASSERT_TRUE(both.client.has_value());
  EXPECT_EQ(both.client->own.public_key, both.client->server_public_key);
}

}  // namespace
}  // namespace spotlight::run
