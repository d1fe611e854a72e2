#include "common/parallel/sequence_shard.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

namespace spotlight::parallel {
namespace {

TEST(SequenceShard, BlocksCoverEveryTokenOnceWithPaddingOnlyAtTheEnd) {
  for (int size : {1, 2, 3, 4, 5}) {
    for (std::int64_t text : {1, 7, 12}) {
      for (std::int64_t image : {4, 16, 17}) {
        std::int64_t text_seen = 0, image_seen = 0;
        for (int rank = 0; rank < size; ++rank) {
          const auto shard = make_sequence_shard(text, image, 60, rank, size);
          if (shard.text_count() > 0) {
            EXPECT_EQ(shard.text_begin(), text_seen);
          }
          if (shard.image_count() > 0) {
            EXPECT_EQ(shard.image_begin(), image_seen);
          }
          text_seen += shard.text_count();
          image_seen += shard.image_count();
          EXPECT_LE(shard.text_count(), shard.text_block());
          EXPECT_EQ(shard.local_len(), shard.text_block() + shard.image_block());
        }
        EXPECT_EQ(text_seen, text) << size;
        EXPECT_EQ(image_seen, image) << size;
        const auto valid = make_sequence_shard(text, image, 60, 0, size).gathered_valid();
        std::int64_t real = 0;
        for (bool v : valid)
          real += v;
        EXPECT_EQ(real, text + image);
        EXPECT_EQ(static_cast<std::int64_t>(valid.size()),
                  size * make_sequence_shard(text, image, 60, 0, size).local_len());
      }
    }
  }
}

TEST(SequenceShard, HeadsMustDivideBySize) {
  try {
    make_sequence_shard(12, 16, 2, 0, 4);
    FAIL() << "heads 2 with size 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("heads (2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_sequence_shard(12, 16, 4, 4, 4), std::invalid_argument);
  EXPECT_THROW(make_sequence_shard(12, 16, 4, 0, 0), std::invalid_argument);
  EXPECT_NO_THROW(make_sequence_shard(12, 16, 4, 3, 4));
}

}  // namespace
}  // namespace spotlight::parallel
