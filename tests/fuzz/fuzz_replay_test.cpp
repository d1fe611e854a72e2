// Replays every fuzz target (fuzz_targets.hpp) with the main compiler, no libFuzzer needed: its
// seed corpus, deterministic mutations of every seed (each prefix, each byte replaced by 0x00,
// 0xff and its complement, each byte dropped) and every file in tests/fuzz/regressions/<target>/
// (inputs that once crashed a decoder; keep them forever).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/fuzz/fuzz_targets.hpp"

namespace spotlight::fuzz {
namespace {

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes.substr(0, 256)) {
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 0xf]);
  }
  return bytes.size() > 256 ? out + "..." : out;
}

// Runs one input; a failure names the target, the input's origin and its bytes.
bool run_one(const FuzzTarget& target, std::string_view input, const std::string& origin) {
  try {
    target.run(input);
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << target.name << " on " << origin << ": " << e.what()
                  << "\ninput (hex): " << hex(input);
  } catch (...) {
    ADD_FAILURE() << target.name << " on " << origin << ": non-standard exception";
  }
  return false;
}

class FuzzReplay : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(FuzzReplay, SeedsAndTheirMutations) {
  const FuzzTarget& target = GetParam();
  const auto seeds = target.seeds();
  ASSERT_FALSE(seeds.empty()) << target.name << " has no seed corpus";
  std::size_t runs = 0;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const std::string& seed = seeds[s];
    const std::string origin = "seed " + std::to_string(s);
    if (!run_one(target, seed, origin)) return;
    for (std::size_t i = 0; i < seed.size(); ++i) {
      if (!run_one(target, std::string_view(seed).substr(0, i),
                   origin + " prefix " + std::to_string(i))) {
        return;
      }
      std::string dropped = seed;
      dropped.erase(i, 1);
      if (!run_one(target, dropped, origin + " without byte " + std::to_string(i))) return;
      for (const int b : {0x00, 0xff, ~static_cast<unsigned char>(seed[i]) & 0xff}) {
        std::string mutated = seed;
        mutated[i] = static_cast<char>(b);
        if (!run_one(target, mutated,
                     origin + " byte " + std::to_string(i) + " = " + std::to_string(b))) {
          return;
        }
      }
      runs += 5;
    }
  }
  RecordProperty("runs", static_cast<int>(runs));
}

TEST_P(FuzzReplay, Regressions) {
  const FuzzTarget& target = GetParam();
  const char* root = std::getenv("SPOTLIGHT_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "SPOTLIGHT_SOURCE_DIR not set (run through ctest)";
  const auto dir =
      std::filesystem::path(root) / "tests/fuzz/regressions" / std::string(target.name);
  if (!std::filesystem::is_directory(dir)) return;  // no regression inputs for this target
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    run_one(target, bytes.str(), entry.path().string());
  }
}

TEST(FuzzFrames, PackAndUnpackAreInverse) {
  const std::vector<std::string> frames = {"", std::string(9, '\x01'), "payload"};
  const std::string packed = pack_frames(frames);  // the views point into it
  const auto unpacked = unpack_frames(packed);
  ASSERT_EQ(unpacked.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i)
    EXPECT_EQ(unpacked[i], frames[i]);
  EXPECT_TRUE(unpack_frames("").empty());
  EXPECT_EQ(unpack_frames(std::string(1, '\x05')).size(), 5u);  // lengths past the end: empty
}

INSTANTIATE_TEST_SUITE_P(AllTargets, FuzzReplay,
                         ::testing::ValuesIn(fuzz_targets().begin(), fuzz_targets().end()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace spotlight::fuzz
