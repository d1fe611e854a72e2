#include "common/parallel/shared_weights.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace spotlight::parallel {
namespace {

std::string unique_name(const char* what) {
  return std::string("spotlight-test-") + what + "-" + std::to_string(getpid());
}

TEST(SharedWeights, RoundTripsAndReplaces) {
  const auto name = unique_name("roundtrip");
  EXPECT_FALSE(read_shared_weights(name).has_value());
  std::string bytes(1 << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 31 + 7);
  publish_shared_weights(name, bytes);
  EXPECT_EQ(read_shared_weights(name), bytes);
  publish_shared_weights(name, "second");
  EXPECT_EQ(read_shared_weights(name), "second");
  remove_shared_weights(name);
  EXPECT_FALSE(read_shared_weights(name).has_value());
}

TEST(SharedWeights, CorruptionIsDetected) {
  const auto name = unique_name("corrupt");
  publish_shared_weights(name, std::string(4096, 'w'));
  {  // flip one byte of the payload behind the writer's back
    const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    char c = 'x';
    ASSERT_EQ(pwrite(fd, &c, 1, 16 + 100), 1);
    close(fd);
  }
  EXPECT_THROW(read_shared_weights(name), SharedWeightsError);
  {  // truncate it
    const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 1000), 0);
    close(fd);
  }
  EXPECT_THROW(read_shared_weights(name), SharedWeightsError);
  remove_shared_weights(name);
  EXPECT_THROW(publish_shared_weights("bad/name", "x"), std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::parallel
