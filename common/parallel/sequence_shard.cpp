#include "common/parallel/sequence_shard.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace spotlight::parallel {

std::int64_t SequenceShard::text_count() const {
  return std::clamp<std::int64_t>(text_len - text_begin(), 0, text_block());
}

std::int64_t SequenceShard::image_count() const {
  return std::clamp<std::int64_t>(image_len - image_begin(), 0, image_block());
}

std::vector<bool> SequenceShard::gathered_valid() const {
  std::vector<bool> valid;
  valid.reserve(static_cast<std::size_t>(size * local_len()));
  for (int r = 0; r < size; ++r) {
    SequenceShard other = *this;
    other.rank = r;
    for (std::int64_t i = 0; i < text_block(); ++i)
      valid.push_back(i < other.text_count());
    for (std::int64_t i = 0; i < image_block(); ++i)
      valid.push_back(i < other.image_count());
  }
  return valid;
}

SequenceShard make_sequence_shard(std::int64_t text_len, std::int64_t image_len, std::int64_t heads,
                                  int rank, int size) {
  if (size < 1) throw std::invalid_argument("sp: size must be >= 1, got " + std::to_string(size));
  if (rank < 0 || rank >= size) {
    throw std::invalid_argument("sp: rank " + std::to_string(rank) + " out of range for size " +
                                std::to_string(size));
  }
  if (heads % size != 0) {
    throw std::invalid_argument("sp: attention heads (" + std::to_string(heads) +
                                ") must divide by the SP size (" + std::to_string(size) + ")");
  }
  if (text_len < 1 || image_len < 1) {
    throw std::invalid_argument("sp: text_len and image_len must be >= 1");
  }
  return SequenceShard{rank, size, text_len, image_len};
}

}  // namespace spotlight::parallel
