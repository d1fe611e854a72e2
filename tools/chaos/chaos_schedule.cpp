#include "tools/chaos/chaos_schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace spotlight::chaos {

void ScheduleOptions::validate() const {
  if (max_explorers < 1) throw std::invalid_argument("ScheduleOptions.max_explorers: must be >= 1");
  if (min_explorers < 0 || min_explorers > max_explorers) {
    throw std::invalid_argument("ScheduleOptions.min_explorers: must be in [0, max_explorers]");
  }
  if (!(kill_ratio >= 0.0 && kill_ratio <= 1.0)) {
    throw std::invalid_argument("ScheduleOptions.kill_ratio: must be in [0, 1]");
  }
}

std::string_view to_string(ActionKind kind) {
  switch (kind) {
    case ActionKind::kStart:
      return "start";
    case ActionKind::kTerm:
      return "term";
    case ActionKind::kKill:
      return "kill";
  }
  return "?";
}

ChaosSchedule::ChaosSchedule(AvailabilityTrace trace, ScheduleOptions options)
    : trace_(std::move(trace)), options_(options), state_(options.seed) {
  options_.validate();
  if (trace_.counts.empty()) throw std::invalid_argument("ChaosSchedule: empty trace");
}

int ChaosSchedule::target(std::size_t tick) const {
  const int peak = trace_.peak();
  if (peak == 0) return options_.min_explorers;
  const long long count = trace_.counts[tick % trace_.counts.size()];
  return std::max(options_.min_explorers,
                  static_cast<int>((count * options_.max_explorers + peak / 2) / peak));
}

std::vector<Action> ChaosSchedule::plan(std::size_t tick,
                                        const std::vector<std::int64_t>& running) {
  const int want = target(tick);
  const int have = static_cast<int>(running.size());
  std::vector<Action> actions;
  if (have > want) {
    std::vector<std::int64_t> pool = running;
    for (int i = 0; i < have - want; ++i) {
      const std::size_t pick = static_cast<std::size_t>(next() % pool.size());
      Action a;
      a.victim = pool[pick];
      a.kind = uniform() < options_.kill_ratio ? ActionKind::kKill : ActionKind::kTerm;
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick));
      actions.push_back(a);
    }
  }
  for (int i = have; i < want; ++i)
    actions.push_back(Action{ActionKind::kStart, -1});
  return actions;
}

std::uint64_t ChaosSchedule::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double ChaosSchedule::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

}  // namespace spotlight::chaos
