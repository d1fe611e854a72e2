#include "common/store/checksum.hpp"

#include <new>

#include <xxhash.h>

namespace spotlight::store {

void Xxh64::Free::operator()(XXH64_state_s* state) const {
  XXH64_freeState(state);
}

Xxh64::Xxh64(std::uint64_t seed) : state_(XXH64_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH64_reset(state_.get(), seed);
}

void Xxh64::update(const void* data, std::size_t size) {
  if (size > 0) XXH64_update(state_.get(), data, size);
}

std::uint64_t Xxh64::digest() const {
  return XXH64_digest(state_.get());
}

std::uint64_t xxh64(std::string_view data, std::uint64_t seed) {
  return XXH64(data.data(), data.size(), seed);
}

std::string to_hex(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    out[i] = kDigits[value & 0xf];
  return out;
}

}  // namespace spotlight::store
