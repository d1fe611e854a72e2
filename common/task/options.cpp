#include "common/task/options.hpp"

#include <cmath>
#include <string>

#include "common/task/errors.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::task {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw TaskError("invalid TaskOptions: " + what);
}

std::string range(int lo, int hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

void check_weight(double weight, const char* field) {
  if (!(std::isfinite(weight) && weight >= 0.0)) {
    fail(std::string("weights.") + field + " must be finite and >= 0, got " +
         std::to_string(weight));
  }
}

}  // namespace

std::string_view name(RewardKind kind) {
  return kind == RewardKind::kStrict ? "strict" : "partial";
}

RewardKind parse_reward_kind(std::string_view text) {
  if (text == "partial") return RewardKind::kPartial;
  if (text == "strict") return RewardKind::kStrict;
  throw TaskError("reward kind must be partial or strict, got '" + std::string(text) + "'");
}

// Called on every render/score: messages are only built on failure.
void TaskOptions::validate() const {
  if (image_size < 32 || image_size > 256) {
    fail("image_size must be in " + range(32, 256) + ", got " + std::to_string(image_size));
  }
  check_weight(weights.single_object, "single_object");
  check_weight(weights.two_object, "two_object");
  check_weight(weights.counting, "counting");
  check_weight(weights.position, "position");
  check_weight(weights.text, "text");
  if (!(weights.single_object + weights.two_object + weights.counting + weights.position +
            weights.text >
        0.0)) {
    fail("weights must have at least one positive entry");
  }
  if (max_count < 2 || max_count > kMaxObjectCount) {
    fail("max_count must be in " + range(2, kMaxObjectCount) + ", got " +
         std::to_string(max_count));
  }
  if (min_digits < 1 || min_digits > kMaxDigits) {
    fail("min_digits must be in " + range(1, kMaxDigits) + ", got " + std::to_string(min_digits));
  }
  if (max_digits < min_digits || max_digits > kMaxDigits) {
    fail("max_digits must be in [min_digits, " + std::to_string(kMaxDigits) + "], got " +
         std::to_string(max_digits));
  }
  if (!(held_out_fraction > 0.0 && held_out_fraction <= 0.5)) {
    fail("held_out_fraction must be in (0, 0.5], got " + std::to_string(held_out_fraction));
  }
}

}  // namespace spotlight::task
