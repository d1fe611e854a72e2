// RedisKeyValueStore and RedisWeightStore against a real redis-server.

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/redis/client.hpp"
#include "common/store/checksum.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_trajectory_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::store {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;

class StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (RedisServer::find_executable()) {
      testing::RedisServerOptions o;
      o.appendfsync = "everysec";  // multi-MB values; durability is tested on its own server
      server_ = std::make_unique<RedisServer>(o);
    }
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { SPOTLIGHT_REQUIRE_REDIS_SERVER(); }

  static std::string prefix() {
    return std::string("test:") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  static RedisKeyValueStore kv() { return RedisKeyValueStore(server().client_options(), prefix()); }
  static RedisWeightStore weights(std::uint64_t chunk_bytes = kDefaultChunkBytes) {
    WeightStoreOptions o;
    o.key_prefix = prefix();
    o.chunk_bytes = chunk_bytes;
    return RedisWeightStore(server().client_options(), o);
  }
  static std::string random_bytes(std::size_t size, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string out(size, '\0');
    for (std::size_t i = 0; i + 8 <= size; i += 8) {
      const std::uint64_t v = rng();
      std::memcpy(out.data() + i, &v, 8);
    }
    for (std::size_t i = size & ~std::size_t{7}; i < size; ++i)
      out[i] = static_cast<char>(rng());
    return out;
  }

  static RedisServer& server() { return *server_; }

 private:
  static std::unique_ptr<RedisServer> server_;
};

std::unique_ptr<RedisServer> StoreTest::server_;

// ---- KeyValueStore ----

TEST_F(StoreTest, PutGetEraseWithAbsenceAsNullopt) {
  auto s = kv();
  EXPECT_EQ(s.get("k"), std::nullopt);
  const std::string bytes("v\0\r\n", 4);
  s.put("k", bytes);
  EXPECT_EQ(s.get("k"), bytes);
  EXPECT_FALSE(s.put_if_absent("k", "other"));
  EXPECT_EQ(s.get("k"), bytes);
  EXPECT_TRUE(s.put_if_absent("k2", "first"));
  EXPECT_TRUE(s.erase("k"));
  EXPECT_FALSE(s.erase("k"));
  EXPECT_EQ(s.get("k"), std::nullopt);
  // Keys live under the prefix only.
  redis::RedisClient raw(server().client_options());
  EXPECT_EQ(raw.command({"GET", prefix() + ":k2"}).as_string(), "first");
  EXPECT_EQ(s.redis_key("k2"), prefix() + ":k2");
}

TEST_F(StoreTest, CountersAreAtomicAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto s = kv();  // one store per thread
      for (int i = 0; i < kAdds; ++i)
        s.add("n", 1);
    });
  }
  for (auto& t : threads)
    t.join();
  auto s = kv();
  EXPECT_EQ(s.counter("n"), kThreads * kAdds);
  EXPECT_EQ(s.add("n", -kThreads * kAdds), 0);
  EXPECT_EQ(s.counter("absent"), 0);
  s.put("text", "abc");
  try {
    s.add("text", 1);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(prefix() + ":text"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.counter("text"), StoreError);
}

TEST_F(StoreTest, WaitReturnsWhenKeysAppearOrTimesOut) {
  auto s = kv();
  const std::vector<std::string> keys = {"a", "b"};
  EXPECT_FALSE(s.wait(keys, milliseconds(50)));
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    auto w = kv();
    w.put("a", "1");
    w.put("b", "2");
    wrote = true;
  });
  EXPECT_TRUE(s.wait(keys, milliseconds(10000)));
  writer.join();
  EXPECT_TRUE(wrote.load());
  EXPECT_TRUE(s.wait(std::vector<std::string>{}, milliseconds(0)));
}

TEST_F(StoreTest, EmptyPrefixIsRejected) {
  EXPECT_THROW(RedisKeyValueStore(redis::RedisOptions{}, ""), InvalidStoreOptions);
  WeightStoreOptions o;
  o.chunk_bytes = 10;
  try {
    o.validate();
    FAIL();
  } catch (const InvalidStoreOptions& e) {
    EXPECT_EQ(e.field(), "chunk_bytes");
  }
}

// ---- WeightStore ----

TEST_F(StoreTest, WeightsRoundTripInChunks) {
  auto w = weights();                                            // 4 MiB chunks
  const std::string blob = random_bytes((9u << 20) + 12345, 1);  // 3 chunks, the last short
  EXPECT_EQ(w.latest_version(), std::nullopt);
  EXPECT_EQ(w.fetch(1), std::nullopt);
  const WeightManifest m = w.publish(1, blob);
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.bytes, blob.size());
  EXPECT_EQ(m.chunks, 3u);
  EXPECT_EQ(m.chunk_bytes, kDefaultChunkBytes);
  EXPECT_EQ(m.checksum, to_hex(xxh64(blob)));
  EXPECT_EQ(m.algorithm, "xxh64");
  EXPECT_GT(m.published_unix_ms, 0);
  EXPECT_EQ(w.manifest(1), m);
  EXPECT_EQ(w.latest_version(), 1);

  const auto fetched = w.fetch(1);
  ASSERT_TRUE(fetched.has_value());
  EXPECT_TRUE(*fetched == blob);

  redis::RedisClient raw(server().client_options());
  EXPECT_EQ(raw.command({"STRLEN", w.chunk_key(1, 0)}).as_integer(),
            static_cast<std::int64_t>(kDefaultChunkBytes));
  EXPECT_EQ(raw.command({"STRLEN", w.chunk_key(1, 2)}).as_integer(),
            static_cast<std::int64_t>(blob.size() - 2 * kDefaultChunkBytes));
  EXPECT_TRUE(raw.command({"EXISTS", w.chunk_key(1, 3)}).as_integer() == 0);
}

TEST_F(StoreTest, EmptyAndExactMultipleBlobs) {
  auto w = weights(1024);
  EXPECT_EQ(w.publish(0, "").chunks, 0u);
  EXPECT_EQ(w.fetch(0), std::string());
  const std::string exact = random_bytes(4096, 2);
  EXPECT_EQ(w.publish(1, exact).chunks, 4u);
  EXPECT_EQ(w.fetch(1), exact);
}

TEST_F(StoreTest, LatestOnlyMovesForwardAndRepublishIsIdempotent) {
  auto w = weights(1024);
  w.publish(5, "five");
  w.publish(3, "three");  // late publish of an older version
  EXPECT_EQ(w.latest_version(), 5);
  EXPECT_EQ(w.fetch(3), "three");
  const WeightManifest again = w.publish(5, "five");
  EXPECT_EQ(again, *w.manifest(5));
  try {
    w.publish(5, "FIVE");
    FAIL() << "expected VersionConflict";
  } catch (const VersionConflict& e) {
    EXPECT_EQ(e.version(), 5);
  }
  EXPECT_EQ(w.fetch(5), "five");
  EXPECT_EQ(w.versions(), (std::vector<std::int64_t>{3, 5}));
  EXPECT_THROW(w.publish(-1, "x"), StoreError);
}

TEST_F(StoreTest, CorruptedChunkIsAChecksumMismatchNamingTheVersion) {
  auto w = weights(64 << 10);
  const std::string blob = random_bytes(3 << 20, 3);  // 48 chunks of 64 KiB
  w.publish(7, blob);
  redis::RedisClient raw(server().client_options());
  // Flip one byte in the middle of chunk 20, keeping its length.
  const std::string key = w.chunk_key(7, 20);
  const std::string original = raw.command({"GETRANGE", key, "1000", "1000"}).as_string();
  const std::string flipped(1, static_cast<char>(original[0] ^ 0x01));
  raw.command({"SETRANGE", key, "1000", flipped});
  try {
    w.fetch(7);
    FAIL() << "expected ChecksumMismatch";
  } catch (const ChecksumMismatch& e) {
    EXPECT_EQ(e.version(), 7);
    EXPECT_NE(std::string(e.what()).find("version 7"), std::string::npos) << e.what();
    EXPECT_EQ(e.expected(), to_hex(xxh64(blob)));
    EXPECT_NE(e.actual(), e.expected());
  }
  raw.command({"SETRANGE", key, "1000", original});  // repaired: verifies again
  EXPECT_TRUE(w.fetch(7) == blob);

  raw.command({"APPEND", key, "x"});  // wrong length
  EXPECT_THROW(w.fetch(7), CorruptWeights);
  raw.command({"DEL", key});  // missing chunk
  try {
    w.fetch(7);
    FAIL() << "expected CorruptWeights";
  } catch (const CorruptWeights& e) {
    EXPECT_EQ(e.version(), 7);
    EXPECT_NE(std::string(e.what()).find("chunk 20"), std::string::npos) << e.what();
  }
}

// The checksum detects corruption, not substitution: whoever can write the weight keys can write
// another blob with its own checksum. Manifests signed with the run's key are refused by a reader
// holding the key when they are altered, unsigned, or signed with another key.
TEST_F(StoreTest, SignedManifestsRefuseSubstitutedUnsignedAndOtherKeysWeights) {
  const ManifestKey run_key{"run-key", std::string(32, 'k')};
  const auto with_key = [](std::optional<ManifestKey> key) {
    WeightStoreOptions o;
    o.key_prefix = prefix();
    o.chunk_bytes = 1 << 10;
    o.manifest_key = [key] { return key; };
    return RedisWeightStore(server().client_options(), o);
  };
  auto trainer = with_key(run_key);
  auto explorer = with_key(run_key);
  auto unchecked = weights(1 << 10);
  const std::string blob = random_bytes(1000, 1);
  const WeightManifest published = trainer.publish(1, blob);
  EXPECT_EQ(published.key_id, "run-key");
  EXPECT_EQ(published.signature.size(), 64u);
  EXPECT_EQ(explorer.manifest(1), published);
  EXPECT_TRUE(explorer.fetch(1) == blob);

  // Substitution: another blob of the same size, its checksum written into the manifest.
  const std::string other = random_bytes(1000, 2);
  redis::RedisClient raw(server().client_options());
  raw.command({"SET", trainer.chunk_key(1, 0), other});
  raw.command({"HSET", trainer.manifest_key(1), "checksum", to_hex(xxh64(other))});
  EXPECT_TRUE(unchecked.fetch(1) == other) << "a reader without the key takes the substitute";
  try {
    explorer.fetch(1);
    FAIL() << "expected UntrustedWeights";
  } catch (const UntrustedWeights& e) {
    EXPECT_EQ(e.version(), 1);
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
  }
  EXPECT_THROW(explorer.manifest(1), UntrustedWeights);

  unchecked.publish(2, blob);  // unsigned
  try {
    explorer.fetch(2);
    FAIL() << "expected UntrustedWeights";
  } catch (const UntrustedWeights& e) {
    EXPECT_NE(std::string(e.what()).find("unsigned"), std::string::npos) << e.what();
  }
  with_key(ManifestKey{"another-key", std::string(32, 'x')}).publish(3, blob);
  try {
    explorer.fetch(3);
    FAIL() << "expected UntrustedWeights";
  } catch (const UntrustedWeights& e) {
    EXPECT_NE(std::string(e.what()).find("another-key"), std::string::npos) << e.what();
  }
  EXPECT_THROW(with_key(std::nullopt).fetch(1), UntrustedWeights);    // no key to check with yet
  EXPECT_THROW(with_key(std::nullopt).publish(4, blob), StoreError);  // nor to sign with
  EXPECT_FALSE(explorer.manifest(4));
}

TEST_F(StoreTest, GcKeepsTheNewestAndLatest) {
  auto w = weights(1024);
  for (int v = 1; v <= 5; ++v)
    w.publish(v, random_bytes(3000, v));
  const auto deleted = w.gc(2);
  EXPECT_EQ(deleted, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(w.versions(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(w.fetch(2), std::nullopt);
  EXPECT_EQ(w.manifest(2), std::nullopt);
  EXPECT_EQ(w.fetch(5), random_bytes(3000, 5));
  redis::RedisClient raw(server().client_options());
  EXPECT_EQ(
      raw.command({"EXISTS", w.chunk_key(1, 0), w.chunk_key(2, 1), w.chunk_key(3, 2)}).as_integer(),
      0);
  EXPECT_TRUE(w.gc(2).empty());
  EXPECT_THROW(w.gc(0), StoreError);

  // A partial publish (chunks, no manifest) older than the kept ones is collected too.
  raw.command({"SET", w.chunk_key(0, 0), "orphan"});
  raw.command({"ZADD", prefix() + ":weights:versions", "0", "0"});
  EXPECT_EQ(w.gc(2), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(raw.command({"EXISTS", w.chunk_key(0, 0)}).as_integer(), 0);
}

TEST_F(StoreTest, GcNeverDeletesLatest) {
  auto w = weights(1024);
  w.publish(10, "ten");
  w.publish(1, "one");
  w.publish(2, "two");
  EXPECT_EQ(w.gc(1), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(w.latest_version(), 10);
  EXPECT_EQ(w.fetch(10), "ten");
}

TEST_F(StoreTest, TrajectoriesAreKeptUntilErasedAndExpireAfterTheirTtl) {
  TrajectoryStoreOptions o;
  o.key_prefix = prefix() + ":trajectory";
  o.ttl = milliseconds(60000);
  RedisTrajectoryStore store(server().client_options(), o);
  const std::string blob = random_bytes(123457, 3);
  store.put("i0/p0/c0", blob);
  store.put("i0/p0/c1", "second");
  store.put("i0/p0/c1", "overwritten");
  EXPECT_EQ(store.get("i0/p0/c0"), blob);
  EXPECT_EQ(store.get("i0/p0/c1"), "overwritten");
  EXPECT_EQ(store.get("i0/p0/c2"), std::nullopt);
  EXPECT_EQ(store.redis_key("i0/p0/c0"), o.key_prefix + ":i0/p0/c0");
  // Every write sets the expiry (an overwrite too).
  redis::RedisClient client(server().client_options());
  for (const char* id : {"i0/p0/c0", "i0/p0/c1"}) {
    const std::int64_t ttl = client.command({"PTTL", store.redis_key(id)}).as_integer();
    EXPECT_GT(ttl, 0) << id;
    EXPECT_LE(ttl, 60000) << id;
  }
  const std::vector<std::string> ids{"i0/p0/c0", "i0/p0/c1", "i0/p0/c2"};
  EXPECT_EQ(store.erase(ids), 2);
  EXPECT_EQ(store.get("i0/p0/c0"), std::nullopt);
  EXPECT_EQ(store.erase(ids), 0);
  // More ids than one command deletes.
  std::vector<std::string> many;
  for (int i = 0; i < 1100; ++i) {
    many.push_back("i1/p0/c" + std::to_string(i));
    if (i % 3 == 0) store.put(many.back(), "x");
  }
  EXPECT_EQ(store.erase(many), 367);

  o.ttl = milliseconds(50);
  RedisTrajectoryStore short_lived(server().client_options(), o);
  short_lived.put("i2/p0/c0", "gone soon");
  EXPECT_TRUE(spotlight::testing::wait_for([&] { return !short_lived.get("i2/p0/c0"); },
                                           milliseconds(10000)));
  o.ttl = milliseconds(0);
  EXPECT_THROW(RedisTrajectoryStore(server().client_options(), o), InvalidStoreOptions);
  o.ttl = milliseconds(1);
  o.key_prefix.clear();
  EXPECT_THROW(RedisTrajectoryStore(server().client_options(), o), InvalidStoreOptions);
}

TEST(StoreDurabilityTest, WeightsSurviveRestartAndDeadRedisIsTyped) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  RedisServer server;
  WeightStoreOptions o;
  o.key_prefix = "durable";
  o.chunk_bytes = 1 << 20;
  RedisWeightStore w(server.client_options(), o);
  RedisKeyValueStore kv(server.client_options(), "durable");
  std::string blob(3 << 20, 'w');
  blob[12345] = 'x';
  w.publish(1, blob);
  kv.put("k", "v");
  server.kill();
  try {
    w.fetch(1);
    FAIL() << "expected StoreUnavailable";
  } catch (const StoreUnavailable& e) {
    EXPECT_FALSE(e.is_timeout()) << e.what();
  }
  EXPECT_THROW(kv.get("k"), StoreUnavailable);
  server.start();
  EXPECT_EQ(w.latest_version(), 1);
  EXPECT_TRUE(w.fetch(1) == blob);
  EXPECT_EQ(kv.get("k"), "v");
}

}  // namespace
}  // namespace spotlight::store
