#include "tools/simulator/measured_step_time.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>

#include <nlohmann/json.hpp>

namespace spotlight::simulator {
namespace {

using Json = nlohmann::json;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

MeasuredStepTime read_measured_step_time(const std::filesystem::path& results,
                                         const std::string& hardware) {
  const std::string where = "measured step time: " + results.string();
  std::ifstream in(results);
  if (!in) throw MeasurementError(where + ": cannot read the file");
  Json json;
  try {
    json = Json::parse(in);
  } catch (const Json::exception& e) {
    throw MeasurementError(where + ": not JSON: " + e.what());
  }
  const auto field = [&](const Json& parent, const char* name,
                         const std::string& path) -> const Json& {
    if (!parent.is_object() || !parent.contains(name)) {
      throw MeasurementError(where + ": no field '" + path + "'");
    }
    return parent.at(name);
  };
  const auto text = [&](const Json& parent, const char* name, const std::string& path) {
    const Json& value = field(parent, name, path);
    if (!value.is_string()) throw MeasurementError(where + ": '" + path + "' must be a string");
    return value.get<std::string>();
  };
  MeasuredStepTime m;
  m.source = results;
  const std::string mode = text(json, "mode", "mode");
  if (mode != "device") {
    throw MeasurementError(where + ": mode is '" + mode +
                           "', not 'device': a dry run measures nothing to simulate with");
  }
  m.when = text(json, "when", "when");
  m.device = text(field(json, "device", "device"), "name", "device.name");
  if (lower(m.device).find(lower(hardware)) == std::string::npos) {
    throw MeasurementError(where + ": measured on '" + m.device + "', not on " + hardware);
  }
  const Json& sim = field(json, "simulator", "simulator");
  const Json& t = field(sim, "seconds_per_sample_step", "simulator.seconds_per_sample_step");
  if (!t.is_number() || !(t.get<double>() > 0)) {
    throw MeasurementError(where +
                           ": 'simulator.seconds_per_sample_step' must be a positive number");
  }
  m.seconds_per_sample_step = t.get<double>();
  m.basis = text(sim, "basis", "simulator.basis");
  return m;
}

std::string measured_file_name(const std::string& hardware) {
  return lower(hardware) + ".json";
}

std::optional<std::filesystem::path> measured_results_for(const std::string& hardware,
                                                          const std::filesystem::path& source_dir) {
  const auto path = source_dir / "deploy" / "gpu" / measured_file_name(hardware);
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

}  // namespace spotlight::simulator
