#include "common/zmq/curve.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/bus/errors.hpp"
#include "common/bus/publisher.hpp"
#include "common/bus/subscriber.hpp"
#include "common/rpc/client.hpp"
#include "common/rpc/errors.hpp"
#include "common/rpc/server.hpp"

namespace spotlight::bus {
namespace {

using namespace std::chrono_literals;
using namespace spotlight::zmqio;

constexpr auto kLong = 5s;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "spotlight-curve-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Polls `condition` until it holds or kLong passes (counters updated by another thread).
template <class Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + kLong;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

#define REQUIRE_CURVE()                                                \
  if (!curve_available())                                              \
  GTEST_SKIP() << "libzmq built without CURVE (zmq_has(\"curve\") is " \
                  "false)"

TEST(Curve, KeyPairFileRoundTrip) {
  REQUIRE_CURVE();
  TempDir dir;
  const auto keys = generate_curve_keypair();
  EXPECT_EQ(keys.public_key.size(), 40u);
  EXPECT_NE(keys.public_key, keys.secret_key);
  const auto file = dir.path() / "server.key";
  save_curve_keypair(file, keys);
  EXPECT_EQ((std::filesystem::status(file).permissions() & std::filesystem::perms::all),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const auto loaded = load_curve_keypair(file);
  EXPECT_EQ(loaded.public_key, keys.public_key);
  EXPECT_EQ(loaded.secret_key, keys.secret_key);
  EXPECT_EQ(load_curve_public_key(file), keys.public_key);
}

TEST(Curve, BadKeyFilesAreNamedInTheError) {
  REQUIRE_CURVE();
  TempDir dir;
  const auto expect_error = [](const std::filesystem::path& file, const std::string& needle) {
    try {
      load_curve_keypair(file);
      ADD_FAILURE() << file << " loaded";
    } catch (const CurveError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  expect_error(dir.path() / "missing.key", "cannot open");

  const auto a = generate_curve_keypair();
  const auto b = generate_curve_keypair();
  const auto mismatched = dir.path() / "mismatched.key";
  std::ofstream(mismatched) << "curve\n  public-key = \"" << a.public_key << "\"\n"
                            << "  secret-key = \"" << b.secret_key << "\"\n";
  expect_error(mismatched, "does not belong");

  const auto short_key = dir.path() / "short.key";
  std::ofstream(short_key) << "public-key = \"abc\"\nsecret-key = \"" << a.secret_key << "\"\n";
  expect_error(short_key, "public-key");

  const auto public_only = dir.path() / "server.pub";
  std::ofstream(public_only) << "curve\n    public-key = \"" << a.public_key << "\"\n";
  expect_error(public_only, "missing secret-key");
  EXPECT_EQ(load_curve_public_key(public_only), a.public_key);
}

TEST(Curve, BothRolesOnOneSocketIsAnError) {
  REQUIRE_CURVE();
  PublisherOptions options;
  options.curve.server = generate_curve_keypair();
  options.curve.client =
      CurveClientKeys{generate_curve_keypair(), options.curve.server->public_key};
  EXPECT_THROW(Publisher{options}, CurveError);
}

TEST(Curve, EncryptedPubSubRoundTrip) {
  REQUIRE_CURVE();
  const auto server = generate_curve_keypair();
  PublisherOptions pub_options;
  pub_options.curve.server = server;
  Publisher pub(pub_options);
  const std::string ep = pub.bind("tcp://127.0.0.1:*");

  SubscriberOptions sub_options;
  sub_options.curve.client = CurveClientKeys{generate_curve_keypair(), server.public_key};
  Subscriber sub(sub_options);
  sub.connect(ep);
  sub.subscribe("weights");
  ASSERT_TRUE(sub.wait_live(kLong));
  pub.publish("weights", 1, "secret blob location");
  const auto n = sub.receive(kLong);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->payload, "secret blob location");

  // A subscriber that expects another server key never completes the handshake.
  SubscriberOptions wrong_options;
  wrong_options.curve.client =
      CurveClientKeys{generate_curve_keypair(), generate_curve_keypair().public_key};
  Subscriber wrong(wrong_options);
  wrong.connect(ep);
  wrong.subscribe("weights");
  EXPECT_FALSE(wrong.wait_live(300ms));
  // It retries at the reconnect interval (100 ms), not in a tight loop.
  EXPECT_LE(wrong.counters().reconnects, 6u);

  // Nor does a plain-text one.
  Subscriber plain;
  plain.connect(ep);
  plain.subscribe("weights");
  EXPECT_FALSE(plain.wait_live(300ms));
}

TEST(Curve, EncryptedRpcRoundTrip) {
  REQUIRE_CURVE();
  const auto server_keys = generate_curve_keypair();
  rpc::RpcServerOptions server_options;
  server_options.curve.server = server_keys;
  rpc::RpcServer server(
      [](std::vector<rpc::RpcRequest> batch) {
        std::vector<rpc::RpcReply> out;
        for (auto& r : batch)
          out.emplace_back("ok:" + r.payload);
        return out;
      },
      server_options);
  const std::string ep = server.bind("tcp://127.0.0.1:*");
  std::jthread loop([&](std::stop_token st) { server.run(st); });

  rpc::RpcClientOptions client_options;
  client_options.curve.client = CurveClientKeys{generate_curve_keypair(), server_keys.public_key};
  rpc::RpcClient client(ep, client_options);
  EXPECT_EQ(client.call("image", kLong), "ok:image");

  rpc::RpcClientOptions wrong_options;
  wrong_options.retries = 0;
  wrong_options.curve.client =
      CurveClientKeys{generate_curve_keypair(), generate_curve_keypair().public_key};
  rpc::RpcClient wrong(ep, wrong_options);
  // The client sees the handshake fail and says so, rather than waiting out its timeout.
  try {
    wrong.call("image", kLong);
    ADD_FAILURE() << "a client with the wrong server key was answered";
  } catch (const rpc::RpcConnectionClosed& e) {
    EXPECT_TRUE(e.handshake_failed()) << e.what();
    EXPECT_NE(std::string(e.what()).find("handshake failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(wrong.counters().timeouts, 0u);
  EXPECT_EQ(server.counters().requests, 1u);
  // The refused handshake is counted as a reject (the run() thread sees the monitor event).
  EXPECT_TRUE(eventually([&] { return server.counters().rejected_handshake >= 1; }));
  EXPECT_EQ(client.call("again", kLong), "ok:again");
}

TEST(Curve, PublisherCountsRefusedHandshakes) {
  REQUIRE_CURVE();
  const auto server = generate_curve_keypair();
  PublisherOptions pub_options;
  pub_options.curve.server = server;
  Publisher pub(pub_options);
  const std::string ep = pub.bind("tcp://127.0.0.1:*");
  Subscriber plain;  // a plain-text peer: mechanism mismatch
  plain.connect(ep);
  plain.subscribe("weights");
  EXPECT_FALSE(plain.wait_live(300ms));
  EXPECT_TRUE(eventually([&] { return pub.counters().handshake_failures >= 1; }));
}

}  // namespace
}  // namespace spotlight::bus
