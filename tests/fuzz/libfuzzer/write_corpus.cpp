// write_corpus DIR: writes the seed corpus of every fuzz target to DIR/<target>/seed-<i>.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/fuzz/fuzz_targets.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_corpus DIR\n");
    return 2;
  }
  for (const auto& target : spotlight::fuzz::fuzz_targets()) {
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / std::string(target.name);
    std::filesystem::create_directories(dir);
    int i = 0;
    for (const std::string& seed : target.seeds()) {
      std::ofstream(dir / ("seed-" + std::to_string(i++)), std::ios::binary) << seed;
    }
  }
  return 0;
}
