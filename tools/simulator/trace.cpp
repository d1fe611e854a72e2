#include "tools/simulator/trace.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace spotlight::simulator {

Trace Trace::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("trace " + path + ": cannot open");
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("data") || !json["data"].is_array()) {
    throw std::runtime_error("trace " + path + ": expected {\"metadata\": ..., \"data\": [...]}");
  }
  Trace t;
  t.name = std::filesystem::path(path).filename().string();
  if (json.contains("metadata") && json["metadata"].contains("gap_seconds") &&
      json["metadata"]["gap_seconds"].is_number()) {
    t.gap_seconds = json["metadata"]["gap_seconds"].get<double>();
  }
  for (const auto& v : json["data"]) {
    if (!v.is_number_integer() || v.get<int>() < 0) {
      throw std::runtime_error("trace " + path + ": data must be non-negative integers");
    }
    t.data.push_back(v.get<int>());
  }
  if (t.data.empty() || t.gap_seconds <= 0 || t.peak() == 0) {
    throw std::runtime_error("trace " + path + ": empty, all zero, or gap_seconds <= 0");
  }
  return t;
}

int Trace::peak() const {
  return data.empty() ? 0 : *std::max_element(data.begin(), data.end());
}

int Trace::available(double seconds, int cluster_size) const {
  const auto tick = static_cast<std::size_t>(std::max(0.0, seconds) / gap_seconds) % data.size();
  return static_cast<int>(
      std::lround(static_cast<double>(data[tick]) * cluster_size / static_cast<double>(peak())));
}

}  // namespace spotlight::simulator
