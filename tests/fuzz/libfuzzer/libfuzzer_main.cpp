// The libFuzzer entry point of one target, chosen at compile time by SPOTLIGHT_FUZZ_TARGET
// (a string literal, e.g. "wire_seed_task").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/fuzz_targets.hpp"

namespace {

const spotlight::fuzz::FuzzTarget& target() {
  static const spotlight::fuzz::FuzzTarget* const t = [] {
    const auto* found = spotlight::fuzz::find_fuzz_target(SPOTLIGHT_FUZZ_TARGET);
    if (found == nullptr) {
      std::fprintf(stderr, "no fuzz target '%s'\n", SPOTLIGHT_FUZZ_TARGET);
      std::abort();
    }
    return found;
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  target().run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
