#pragma once
// The fuzz targets of Spotlight's decoders: every wire message type, the wire dispatcher, the RPC
// request and reply framing, the bus notice and subscription framing, and the /metrics HTTP
// request head. Each target is a function of one byte string that returns normally for every
// input, throws FuzzPropertyViolation when a decoder broke one of its documented properties
// (round trips, limits), and lets anything else escape (a crash for libFuzzer and a failure for
// the replay test).
//
// Built twice: by the main build into fuzz_replay_test (gcc; replays seeds, deterministic
// mutations of them and tests/fuzz/regressions/<target>/*), and by tests/fuzz/libfuzzer (clang,
// -fsanitize=fuzzer,address,undefined) into one libFuzzer executable per target.

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spotlight::fuzz {

class FuzzPropertyViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct FuzzTarget {
  std::string_view name;                // e.g. "wire_seed_task"; the executable is fuzz_<name>
  void (*run)(std::string_view input);  // the target
  std::vector<std::string> (*seeds)();  // valid inputs: the seed corpus
};

// Every target, in a fixed order.
std::span<const FuzzTarget> fuzz_targets();
// nullptr when there is no target called `name`.
const FuzzTarget* find_fuzz_target(std::string_view name);

// Multi-frame inputs (ZeroMQ messages) are packed into one byte string:
//   [n = byte0 % 8 frames][len_1]...[len_(n-1)][frame_1 ... frame_(n-1) bytes][frame_n = rest]
// Lengths are one byte each; a length past the end of the input is clipped. Every byte string
// unpacks to some frames, and pack_frames(frames) unpacks to `frames` when every frame but the
// last is shorter than 256 bytes and there are at most 7.
std::vector<std::string_view> unpack_frames(std::string_view input);
std::string pack_frames(const std::vector<std::string>& frames);

}  // namespace spotlight::fuzz
