#pragma once
// The simulator's per-sample-step time t from a GPU measurement instead of its estimate.
//
// scripts/gpu-check writes results.json on a GPU machine (docs/gpu.md); kept in the repository as
// deploy/gpu/<hardware>.json (e.g. deploy/gpu/h200.json), it is what `spotlight-sim study
// --hardware H200` uses for t (StepCosts::seconds_per_sample_step). The fields read:
//   {"mode": "device",                          a CPU dry run ("cpu") is refused
//    "when": "2025-01-01T00:00:00Z",
//    "device": {"name": "NVIDIA H200", ...},   must name the simulated hardware
//    "simulator": {"seconds_per_sample_step": 0.1,
//                  "image_tokens": 1024,       must be kStepCostImageTokens
//                  "basis": "how it was derived"}}

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "tools/simulator/step_costs.hpp"

namespace spotlight::simulator {

// The image tokens of the sample StepCosts' t is defined for: 512x512 at the training resolution,
// a VAE that downsamples 8x and patches of 2 (32 x 32 tokens).
inline constexpr int64_t kStepCostImageTokens = 1024;

struct MeasuredStepTime {
  double seconds_per_sample_step = 0.0;
  std::string device;  // "NVIDIA H200"
  std::string when;    // when gpu-check ran (UTC, ISO 8601)
  std::string basis;   // how gpu-check derived t from what it measured
  std::filesystem::path source;
};

// The results file is unreadable, not JSON, lacks a field, is a CPU dry run, was measured on
// other hardware or at another resolution; the message names the file and the field.
class MeasurementError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads `results` for `hardware` ("H100", "H200": must appear in device.name). Throws
// MeasurementError.
MeasuredStepTime read_measured_step_time(const std::filesystem::path& results,
                                         const std::string& hardware);

// "<hardware in lower case>.json": the file's name under deploy/gpu/.
std::string measured_file_name(const std::string& hardware);

// deploy/gpu/<hardware in lower case>.json under `source_dir` when that file exists.
std::optional<std::filesystem::path> measured_results_for(const std::string& hardware,
                                                          const std::filesystem::path& source_dir);

// Where the simulator's t comes from.
struct StepTimeChoice {
  std::optional<std::filesystem::path> results;  // this gpu-check results file
  bool estimate = false;                         // the estimate even where a measurement exists
  std::filesystem::path source_dir = ".";        // where deploy/gpu/ is looked for
};

// The step costs of `hardware`: the estimate, with t replaced (with_measured_step_time) by
// choice.results, else by deploy/gpu/<hardware>.json when it exists and choice.estimate is
// false. StepCosts::measured and ::source say which. Throws MeasurementError for an unusable
// results file (an existing deploy/gpu/ file included: a bad measurement is not silently
// ignored), std::invalid_argument for results together with estimate or unknown hardware.
StepCosts step_costs_for(const std::string& hardware, const StepTimeChoice& choice);

}  // namespace spotlight::simulator
