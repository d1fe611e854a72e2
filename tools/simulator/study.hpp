#pragma once
// The cluster study: every mode of cluster_model.hpp under each calibration of the learning
// model, for each availability trace and reserved:spot ratio, at `offsets` evenly spaced starting
// points of the trace (run i starts at i/offsets of the trace and uses learning seed i, so runs
// of different modes with the same i are paired). Writes one JSON line per run; the tables and
// plots are made from them (scripts/sim_report.py).
//
//   per calibration: none (and sync) on the reserved GPUs alone (offsets runs each);
//   per trace x ratio x spot start-up: offload, offload-pipelined, async (and async-reuse) at each
//     offset, then none-matched on the reserved GPUs that cost what async's reserved + spot GPUs
//     cost on average there;
//   the selection gain as an input, per trace x ratio x start-up: async stopped after
//     iterations(none) / g iterations for each gain g of selection in iterations to the target:
//     its time and cost against each alternative's say at which g async breaks even
//     (scripts/sim_report.py; the spot price enters there, as every run records its GPU-hours).

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/simulator/cluster_model.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {

struct Calibration {
  std::string name;   // "embedded", "published"
  std::string about;  // where its parameters come from
  LearningParams learning;
  double target_score = 0;
  std::vector<int> candidates;  // async's bandit arms N (its steps: StudyOptions::steps)
  int sync_candidates = 0;
};

struct StudyOptions {
  ClusterOptions base;  // R, P, G, steps, costs, bandit options; learning/target per calibration
  std::vector<Calibration> calibrations;
  std::vector<Trace> traces;
  std::vector<double> ratios{0.5, 1, 2, 4};
  int offsets = 30;
  std::vector<double> gains{1, 1.25, 1.5, 2, 3, 4};
  std::vector<double> startups{30, 120, 600};  // spot GPU start-up seconds
  std::vector<std::string> modes{"none", "offload", "offload-pipelined", "async", "none-matched"};
  // Threads that run the offsets of one configuration at once; the output is the same for any
  // number (every run depends only on its options, lines are written in offset order).
  int jobs = 1;
};

// Runs everything and writes one JSON object per line to `out`; `progress` sees a line per
// finished configuration.
void run_study(const StudyOptions& options, std::ostream& out,
               const std::function<void(const std::string&)>& progress = {});

// The study's fixed description (costs, shape, calibrations) as a JSON object on one line.
std::string describe_study(const StudyOptions& options);

}  // namespace spotlight::simulator
