// spotlight-sim: the cluster-scale simulator (tools/simulator/simulation.hpp).
//
//   spotlight-sim [--hardware H100|H200] [--sizes 16,32,64,128] [--seeds 3] [--reserved 32]
//                 [--kappa K] [--signal std|informative] [--out FILE.md]
//                 [--measured RESULTS.json | --estimate] [TRACE.json ...]
//   (traces default: deploy/traces/availability_*.json; kappa: how polarised prompts are;
//    t, the per-sample-step time: --measured, else deploy/gpu/<hardware>.json when it exists
//    (scripts/gpu-check's results), else the FLOP estimate; --estimate forces the estimate)
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "common/log/log.hpp"
#include "tools/simulator/report.hpp"

namespace {

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');)
    out.push_back(std::stoi(item));
  return out;
}

int usage() {
  std::cerr << "usage: spotlight-sim [--hardware H100|H200] [--sizes 16,32,64,128] [--seeds N] "
               "[--reserved GPUS] [--kappa K] [--signal std|informative] [--max-iterations N] "
               "[--out FILE.md] [--measured RESULTS.json | --estimate] [TRACE.json ...]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spotlight::simulator;
  try {
    // The reaper reports every simulated preemption; the report says what matters.
    spotlight::log::set_level(spotlight::log::Level::kError);
    StudyOptions o;
    std::string out_path;
    std::vector<std::string> traces;
    std::optional<std::filesystem::path> measured;
    bool estimate = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--hardware") {
        o.sim.hardware = value();
        if (o.sim.hardware == "H100") {
          o.sim.seconds_per_sample_step = 0.83;
        } else if (o.sim.hardware == "H200") {
          o.sim.seconds_per_sample_step = 0.74;
        } else {
          throw std::invalid_argument("--hardware must be H100 or H200");
        }
      } else if (a == "--sizes") {
        o.spot_sizes = parse_list(value());
      } else if (a == "--seeds") {
        o.seeds = std::stoi(value());
      } else if (a == "--reserved") {
        o.sim.reserved_gpus = std::stoi(value());
      } else if (a == "--max-iterations") {
        o.sim.max_iterations = std::stoi(value());
      } else if (a == "--kappa") {
        o.sim.kappa = std::stod(value());
        if (!(o.sim.kappa > 0)) throw std::invalid_argument("--kappa must be > 0");
      } else if (a == "--signal") {
        o.sim.signal = value();
        if (o.sim.signal != "std" && o.sim.signal != "informative")
          throw std::invalid_argument("--signal must be std or informative");
      } else if (a == "--out") {
        out_path = value();
      } else if (a == "--measured") {
        measured = value();
      } else if (a == "--estimate") {
        estimate = true;
      } else if (a == "--help" || a == "-h") {
        return usage();
      } else if (!a.empty() && a[0] == '-') {
        std::cerr << "unknown option " << a << "\n";
        return usage();
      } else {
        traces.push_back(a);
      }
    }
    const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
    const std::filesystem::path source_dir(src ? src : ".");
    if (measured && estimate)
      throw std::invalid_argument("--measured and --estimate exclude each other");
    if (!measured && !estimate) measured = measured_results_for(o.sim.hardware, source_dir);
    if (measured) {
      o.sim.measured_step_time = read_measured_step_time(*measured, o.sim.hardware);
      o.sim.seconds_per_sample_step = o.sim.measured_step_time->seconds_per_sample_step;
      std::cerr << "t = " << o.sim.seconds_per_sample_step << " s per sample-step, measured on "
                << o.sim.measured_step_time->device << " (" << measured->string() << ")\n";
    } else {
      std::cerr << "t = " << o.sim.seconds_per_sample_step
                << " s per sample-step, the FLOP estimate for " << o.sim.hardware << "\n";
    }
    if (traces.empty()) {
      const std::filesystem::path dir = source_dir / "deploy" / "traces";
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("availability_", 0) == 0)
          traces.push_back(entry.path().string());
      }
      std::sort(traces.begin(), traces.end());
    }
    if (traces.empty() || o.spot_sizes.empty() || o.seeds < 1 || o.sim.reserved_gpus < 1)
      return usage();
    for (const auto& t : traces)
      o.traces.push_back(Trace::load(t));
    std::ostringstream report;
    run_study(o, report);
    std::cout << report.str();
    if (!out_path.empty()) {
      std::ofstream(out_path) << report.str();
      std::cerr << "wrote " << out_path << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n";
    return 1;
  }
}
