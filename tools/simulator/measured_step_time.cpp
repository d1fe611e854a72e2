#include "tools/simulator/measured_step_time.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

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
  const Json& tokens = field(sim, "image_tokens", "simulator.image_tokens");
  if (!tokens.is_number_integer() || tokens.get<int64_t>() != kStepCostImageTokens) {
    throw MeasurementError(where + ": 'simulator.image_tokens' is " + tokens.dump() +
                           ", the simulator's t is for " + std::to_string(kStepCostImageTokens) +
                           " image tokens (512x512)");
  }
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

StepCosts step_costs_for(const std::string& hardware, const StepTimeChoice& choice) {
  if (choice.results && choice.estimate) {
    throw std::invalid_argument(
        "step costs: a measured results file and the estimate exclude "
        "each other");
  }
  StepCosts costs = estimated_step_costs(hardware);
  std::optional<std::filesystem::path> results = choice.results;
  if (!results && !choice.estimate) results = measured_results_for(hardware, choice.source_dir);
  if (!results) return costs;
  const MeasuredStepTime m = read_measured_step_time(*results, hardware);
  std::ostringstream source;
  source << "measured on " << m.device << " by scripts/gpu-check at " << m.when << " ("
         << m.source.filename().string() << "): " << m.basis << "; in place of the estimate, "
         << costs.seconds_per_sample_step << " s";
  return with_measured_step_time(std::move(costs), m.seconds_per_sample_step, source.str());
}

}  // namespace spotlight::simulator
