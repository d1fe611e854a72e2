#pragma once
// Which tokens of the joint (text + image) sequence an SP rank holds.
//
// Text and image tokens are split separately into `size` equal contiguous blocks of
// ceil(len / size) tokens; the last blocks are padded at the end (padding is never attended to).
// A rank's local sequence is its text block followed by its image block, which is the order the
// MMDiT's joint attention concatenates streams in. After the Ulysses all-to-all the gathered
// sequence is rank-major: rank 0's local sequence, then rank 1's, ...

#include <cstdint>
#include <vector>

namespace spotlight::parallel {

struct SequenceShard {
  int rank = 0;
  int size = 1;
  std::int64_t text_len = 0;
  std::int64_t image_len = 0;

  std::int64_t text_block() const { return (text_len + size - 1) / size; }
  std::int64_t image_block() const { return (image_len + size - 1) / size; }
  std::int64_t local_len() const { return text_block() + image_block(); }
  std::int64_t text_begin() const { return rank * text_block(); }
  std::int64_t image_begin() const { return rank * image_block(); }
  std::int64_t text_count() const;   // real (unpadded) text tokens of this rank
  std::int64_t image_count() const;  // real image tokens of this rank
  bool padded() const {
    return text_block() * size != text_len || image_block() * size != image_len;
  }
  // For each of the size() * local_len() positions of the gathered sequence: a real token?
  std::vector<bool> gathered_valid() const;
};

// Throws std::invalid_argument naming the field when heads do not divide by size, size < 1,
// rank is out of range or a stream is empty.
SequenceShard make_sequence_shard(std::int64_t text_len, std::int64_t image_len, std::int64_t heads,
                                  int rank, int size);

}  // namespace spotlight::parallel
