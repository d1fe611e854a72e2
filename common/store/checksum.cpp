#include "common/store/checksum.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace spotlight::store {
namespace {

constexpr std::uint64_t kP1 = 11400714785074694791ULL;
constexpr std::uint64_t kP2 = 14029467366897019727ULL;
constexpr std::uint64_t kP3 = 1609587929392839161ULL;
constexpr std::uint64_t kP4 = 9650029242287828579ULL;
constexpr std::uint64_t kP5 = 2870177450012600261ULL;

inline std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

inline std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

inline std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
  acc += input * kP2;
  acc = std::rotl(acc, 31);
  return acc * kP1;
}

inline std::uint64_t merge_round(std::uint64_t acc, std::uint64_t value) {
  acc ^= round(0, value);
  return acc * kP1 + kP4;
}

// Consumes whole 32-byte stripes from p; returns the bytes consumed.
inline std::size_t stripes(std::uint64_t* acc, const unsigned char* p, std::size_t size) {
  std::uint64_t v1 = acc[0], v2 = acc[1], v3 = acc[2], v4 = acc[3];
  const unsigned char* const end = p + (size & ~std::size_t{31});
  const unsigned char* q = p;
  for (; q < end; q += 32) {
    v1 = round(v1, read64(q));
    v2 = round(v2, read64(q + 8));
    v3 = round(v3, read64(q + 16));
    v4 = round(v4, read64(q + 24));
  }
  acc[0] = v1, acc[1] = v2, acc[2] = v3, acc[3] = v4;
  return static_cast<std::size_t>(q - p);
}

}  // namespace

Xxh64::Xxh64(std::uint64_t seed)
    : seed_(seed), acc_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, buffer_{} {}

void Xxh64::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (buffered_ > 0) {
    const std::size_t take = std::min(size, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < sizeof(buffer_)) return;
    stripes(acc_, buffer_, sizeof(buffer_));
    buffered_ = 0;
  }
  const std::size_t done = stripes(acc_, p, size);
  std::memcpy(buffer_, p + done, size - done);
  buffered_ = size - done;
}

std::uint64_t Xxh64::digest() const {
  std::uint64_t h;
  if (total_ >= 32) {
    h = std::rotl(acc_[0], 1) + std::rotl(acc_[1], 7) + std::rotl(acc_[2], 12) +
        std::rotl(acc_[3], 18);
    for (const std::uint64_t v : acc_)
      h = merge_round(h, v);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const unsigned char* p = buffer_;
  const unsigned char* const end = buffer_ + buffered_;
  for (; p + 8 <= end; p += 8) {
    h ^= round(0, read64(p));
    h = std::rotl(h, 27) * kP1 + kP4;
  }
  if (p + 4 <= end) {
    h ^= static_cast<std::uint64_t>(read32(p)) * kP1;
    h = std::rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= static_cast<std::uint64_t>(*p) * kP5;
    h = std::rotl(h, 11) * kP1;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::uint64_t xxh64(std::string_view data, std::uint64_t seed) {
  Xxh64 h(seed);
  h.update(data);
  return h.digest();
}

std::string to_hex(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    out[i] = kDigits[value & 0xf];
  return out;
}

}  // namespace spotlight::store
