#include "common/run/plan_record.hpp"

#include <nlohmann/json.hpp>

namespace spotlight::run {

std::string plan_key(std::int64_t iteration) {
  return "planner:plan:" + std::to_string(iteration);
}

std::optional<PlanRecord> parse_plan_record(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  for (const char* field : {"iteration", "candidates", "steps"}) {
    if (!json.contains(field) || !json[field].is_number_integer()) return std::nullopt;
  }
  PlanRecord r;
  r.iteration = json["iteration"].get<std::int64_t>();
  r.candidates = json["candidates"].get<int>();
  r.steps = json["steps"].get<int>();
  if (r.candidates < 0 || r.steps < 0) return std::nullopt;
  return r;
}

}  // namespace spotlight::run
