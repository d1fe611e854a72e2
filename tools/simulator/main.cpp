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

#include "common/config/arguments.hpp"
#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/report/html.hpp"
#include "tools/simulator/report.hpp"

namespace {

std::vector<int> parse_list(const std::string& option, const std::string& text) {
  std::vector<int> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      std::size_t used = 0;
      out.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw spotlight::config::ConfigError(
          "", spotlight::log::format("option --{}: '{}' is not an integer", option, item));
    }
  }
  return out;
}

spotlight::config::ArgumentParser command_line() {
  spotlight::config::ArgumentParser p(
      "usage: spotlight-sim [options] [TRACE.json ...]\n"
      "Simulates a Qwen-Image-like run on reserved GPUs plus a spot pool that follows the\n"
      "availability traces (default: deploy/traces/availability_*.json) and reports time and cost\n"
      "to a target score against the none and sync baselines.");
  p.option("hardware", "H100|H200", "per-step times of this GPU", "H100")
      .option("sizes", "N,N,...", "spot pool sizes", "16,32,64,128")
      .option("seeds", "N", "seeds per configuration", "3")
      .option("reserved", "GPUS", "reserved GPUs of the trainer", "32")
      .option("max-iterations", "N", "iterations per simulated run")
      .option("kappa", "K", "how polarised prompts are (> 0)")
      .option("signal", "std|informative", "what the bandit's reward measures")
      .option("out", "FILE.md", "also write the report to this file")
      .option("html", "FILE.html", "also write the study as a self-contained HTML page")
      .option("measured", "RESULTS.json",
              "per-sample-step time measured by scripts/gpu-check (default: "
              "deploy/gpu/<hardware>.json when it exists)")
      .flag("estimate", "use the FLOP estimate of the per-sample-step time, not a measurement");
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spotlight::simulator;
  const auto parser = command_line();
  try {
    // The reaper reports every simulated preemption; the report says what matters.
    spotlight::log::set_level(spotlight::log::Level::kError);
    const auto args = parser.parse(argc, argv);
    if (args.help()) {
      std::cout << parser.help();
      return 0;
    }
    StudyOptions o;
    o.sim.hardware = args.text("hardware");
    if (o.sim.hardware == "H100") {
      o.sim.seconds_per_sample_step = 0.83;
    } else if (o.sim.hardware == "H200") {
      o.sim.seconds_per_sample_step = 0.74;
    } else {
      throw spotlight::config::ConfigError("", "option --hardware: must be H100 or H200");
    }
    o.spot_sizes = parse_list("sizes", args.text("sizes"));
    o.seeds = static_cast<int>(args.integer("seeds"));
    o.sim.reserved_gpus = static_cast<int>(args.integer("reserved"));
    if (args.given("max-iterations")) {
      o.sim.max_iterations = static_cast<int>(args.integer("max-iterations"));
    }
    if (args.given("kappa")) {
      o.sim.kappa = args.real("kappa");
      if (!(o.sim.kappa > 0))
        throw spotlight::config::ConfigError("", "option --kappa: must be > 0");
    }
    if (args.given("signal")) {
      o.sim.signal = args.text("signal");
      if (o.sim.signal != "std" && o.sim.signal != "informative") {
        throw spotlight::config::ConfigError("", "option --signal: must be std or informative");
      }
    }
    const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
    const std::filesystem::path source_dir(src ? src : ".");
    std::optional<std::filesystem::path> measured;
    if (const auto file = args.value("measured")) measured = *file;
    const bool estimate = args.flag("estimate");
    if (measured && estimate) {
      throw spotlight::config::ConfigError("",
                                           "options --measured and --estimate exclude each other");
    }
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
    std::vector<std::string> traces = args.positional();
    traces.insert(traces.end(), args.rest().begin(), args.rest().end());
    if (traces.empty()) {
      const std::filesystem::path dir = source_dir / "deploy" / "traces";
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("availability_", 0) == 0)
          traces.push_back(entry.path().string());
      }
      std::sort(traces.begin(), traces.end());
    }
    if (traces.empty() || o.spot_sizes.empty() || o.seeds < 1 || o.sim.reserved_gpus < 1) {
      std::cerr << parser.help();
      return 2;
    }
    for (const auto& t : traces)
      o.traces.push_back(Trace::load(t));
    std::ostringstream report;
    const auto html_path = args.value("html");
    spotlight::report::Page page;
    run_study(o, report, html_path ? &page : nullptr);
    std::cout << report.str();
    if (const auto out_path = args.value("out")) {
      std::ofstream(*out_path) << report.str();
      std::cerr << "wrote " << *out_path << "\n";
    }
    if (html_path) {
      spotlight::report::write_html(*html_path, page);
      std::cerr << "wrote " << *html_path << "\n";
    }
    return 0;
  } catch (const spotlight::config::ConfigError& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n(--help lists the options)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spotlight-sim: " << e.what() << "\n";
    return 1;
  }
}
