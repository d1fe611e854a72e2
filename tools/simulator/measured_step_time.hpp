#pragma once
// The simulator's per-sample-step time t from a GPU measurement instead of its FLOP estimate.
//
// scripts/gpu-check writes results.json on a GPU machine (docs/gpu.md); kept in the repository as
// deploy/gpu/<hardware>.json (e.g. deploy/gpu/h200.json), it is what `spotlight-sim --hardware
// H200` uses for t. The fields read:
//   {"mode": "device",                          a CPU dry run ("cpu") is refused
//    "when": "2025-01-01T00:00:00Z",
//    "device": {"name": "NVIDIA H200", ...},   must name the simulated hardware
//    "simulator": {"seconds_per_sample_step": 0.7, "basis": "how it was derived"}}

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace spotlight::simulator {

struct MeasuredStepTime {
  double seconds_per_sample_step = 0.0;
  std::string device;  // "NVIDIA H200"
  std::string when;    // when gpu-check ran (UTC, ISO 8601)
  std::string basis;   // how gpu-check derived t from what it measured
  std::filesystem::path source;
};

// The results file is unreadable, not JSON, lacks a field, is a CPU dry run, or was measured on
// other hardware; the message names the file and the field.
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

}  // namespace spotlight::simulator
