#include "tools/chaos/trace.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace spotlight::chaos {

int AvailabilityTrace::peak() const {
  return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

std::size_t AvailabilityTrace::drops() const {
  std::size_t n = 0;
  for (std::size_t i = 1; i < counts.size(); ++i)
    n += counts[i] < counts[i - 1] ? 1 : 0;
  return n;
}

std::size_t AvailabilityTrace::lost_instances() const {
  std::size_t n = 0;
  for (std::size_t i = 1; i < counts.size(); ++i)
    n += counts[i] < counts[i - 1] ? static_cast<std::size_t>(counts[i - 1] - counts[i]) : 0;
  return n;
}

AvailabilityTrace parse_trace(std::string_view text) {
  const auto bad = [](const std::string& why) { return std::invalid_argument("trace: " + why); };
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) throw bad("not a JSON object");
  AvailabilityTrace trace;
  if (!json.contains("metadata") || !json["metadata"].is_object() ||
      !json["metadata"].contains("gap_seconds") || !json["metadata"]["gap_seconds"].is_number()) {
    throw bad("field 'metadata.gap_seconds': missing or not a number");
  }
  trace.gap_seconds = json["metadata"]["gap_seconds"].get<double>();
  if (!(trace.gap_seconds > 0)) throw bad("field 'metadata.gap_seconds': must be > 0");
  if (!json.contains("data") || !json["data"].is_array()) {
    throw bad("field 'data': missing or not a list");
  }
  for (std::size_t i = 0; i < json["data"].size(); ++i) {
    const auto& v = json["data"][i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1'000'000) {
      throw bad("field 'data[" + std::to_string(i) + "]': not an instance count");
    }
    trace.counts.push_back(static_cast<int>(v.get<std::int64_t>()));
  }
  if (trace.counts.empty()) throw bad("field 'data': empty");
  return trace;
}

AvailabilityTrace load_trace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read trace " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse_trace(text.str());
}

}  // namespace spotlight::chaos
