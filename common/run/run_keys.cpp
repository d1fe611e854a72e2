#include "common/run/run_keys.hpp"

namespace spotlight::run {
namespace {

constexpr std::string_view kHeartbeatHead = "explorer:";
constexpr std::string_view kHeartbeatTail = ":heartbeat";

}  // namespace

RunKeys::RunKeys(const std::string& run_id)
    : prefix("spotlight:" + run_id),
      explore_queue(prefix + ":explore"),
      weights(prefix + ":weights"),
      trajectories(prefix + ":trajectory") {}

std::string RunKeys::plan(std::int64_t iteration) {
  return "planner:plan:" + std::to_string(iteration);
}

std::string RunKeys::prompt_posterior(std::string_view prompt_text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (const unsigned char c : prompt_text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "planner:prompt:";
  for (int shift = 60; shift >= 0; shift -= 4)
    out.push_back(kHex[(h >> shift) & 0xf]);
  return out;
}

std::string RunKeys::explorer_heartbeat(std::string_view id) {
  return std::string(kHeartbeatHead).append(id).append(kHeartbeatTail);
}

std::string RunKeys::inflight(std::string_view task_id) {
  return std::string("inflight:").append(task_id);
}

std::string RunKeys::explored_image(std::int64_t iteration, std::int64_t prompt,
                                    std::uint64_t seed) {
  return "explored-image:" + std::to_string(iteration) + ":" + std::to_string(prompt) + ":" +
         std::to_string(seed);
}

std::string RunKeys::cost_ledger(std::string_view device_class, bool busy) {
  return std::string("cost:").append(device_class).append(busy ? ":busy_ms" : ":idle_ms");
}

std::string RunKeys::explorer_heartbeat_pattern() const {
  // SCAN MATCH is a glob: escape its special characters in the prefix (run ids are free text).
  std::string out;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + ":" + explorer_heartbeat("*");
}

std::optional<std::string> RunKeys::explorer_of_heartbeat(std::string_view key) const {
  const std::string head = prefix + ":" + std::string(kHeartbeatHead);
  if (key.size() < head.size() + kHeartbeatTail.size() || !key.starts_with(head) ||
      !key.ends_with(kHeartbeatTail)) {
    return std::nullopt;
  }
  return std::string(key.substr(head.size(), key.size() - head.size() - kHeartbeatTail.size()));
}

std::string RunKeys::absolute(std::string_view relative) const {
  return prefix + ":" + std::string(relative);
}

}  // namespace spotlight::run
