// XXH64 against the reference vectors of the xxHash project, and streaming == one-shot.

#include "common/store/checksum.hpp"

#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace spotlight::store {
namespace {

// The sanity buffer of xxHash's own self-test (xsum_sanity_check / bench): bytes of a
// squared-prime sequence.
std::string sanity_buffer(std::size_t size) {
  std::string buffer(size, '\0');
  std::uint32_t gen = 2654435761U;
  for (std::size_t i = 0; i < size; ++i) {
    buffer[i] = static_cast<char>(gen >> 24);
    gen *= gen;
  }
  return buffer;
}

TEST(Xxh64Test, MatchesReferenceVectors) {
  EXPECT_EQ(xxh64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxh64("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(xxh64("abc"), 0x44BC2CF5AD770999ULL);
  EXPECT_EQ(xxh64("Nobody inspects the spammish repetition"), 0xFBCEA83C8A378BF1ULL);
  constexpr std::uint64_t kPrime = 2654435761U;
  const std::string buffer = sanity_buffer(101);
  EXPECT_EQ(xxh64("", kPrime), 0xAC75FDA2929B17EFULL);
  EXPECT_EQ(xxh64(buffer.substr(0, 1)), 0x4FCE394CC88952D8ULL);
  EXPECT_EQ(xxh64(buffer.substr(0, 1), kPrime), 0x739840CB819FA723ULL);
  EXPECT_EQ(xxh64(buffer.substr(0, 14)), 0xCFFA8DB881BC3A3DULL);
  EXPECT_EQ(xxh64(buffer.substr(0, 14), kPrime), 0x5B9611585EFCC9CBULL);
  EXPECT_EQ(xxh64(buffer), 0x0EAB543384F878ADULL);
  EXPECT_EQ(xxh64(buffer, kPrime), 0xCAA65939306F1E21ULL);
}

TEST(Xxh64Test, StreamingInAnyPiecesEqualsOneShot) {
  std::mt19937_64 rng(7);
  std::string data(1000, '\0');
  for (auto& c : data)
    c = static_cast<char>(rng());
  for (std::size_t size : {0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 100, 999, 1000}) {
    const std::string_view whole(data.data(), size);
    const std::uint64_t expected = xxh64(whole, 42);
    for (int trial = 0; trial < 20; ++trial) {
      Xxh64 h(42);
      std::size_t at = 0;
      while (at < size) {
        const std::size_t piece = std::min<std::size_t>(size - at, rng() % 40);
        h.update(whole.substr(at, piece));
        at += piece;
      }
      ASSERT_EQ(h.digest(), expected) << "size " << size << " trial " << trial;
    }
  }
}

TEST(Xxh64Test, EveryFlippedBitChangesTheDigest) {
  std::string data = sanity_buffer(200);
  const std::uint64_t clean = xxh64(data);
  for (std::size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] = static_cast<char>(data[i] ^ (1 << bit));
      ASSERT_NE(xxh64(data), clean) << "byte " << i << " bit " << bit;
      data[i] = static_cast<char>(data[i] ^ (1 << bit));
    }
  }
}

TEST(Xxh64Test, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(to_hex(0xEF46DB3751D8E999ULL), "ef46db3751d8e999");
  EXPECT_EQ(to_hex(0), "0000000000000000");
  EXPECT_EQ(to_hex(0x1ULL), "0000000000000001");
}

}  // namespace
}  // namespace spotlight::store
