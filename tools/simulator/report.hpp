#pragma once
// The simulator's study: none and sync baselines (reserved GPUs only) against async (the same
// reserved GPUs plus a spot pool following each trace) for several pool sizes, averaged over
// seeds; written as markdown with the assumptions beside the results.

#include <ostream>
#include <string>
#include <vector>

#include "common/report/page.hpp"
#include "tools/simulator/simulation.hpp"
#include "tools/simulator/trace.hpp"

namespace spotlight::simulator {

struct StudyOptions {
  SimOptions sim;
  std::vector<Trace> traces;
  std::vector<int> spot_sizes{16, 32, 64, 128};
  int seeds = 3;
};

// Runs every simulation and writes the markdown report to `out`; with `page`, also the same
// results as a report page (tables, speed-up and cost charts against the spot pool size, the
// assumptions) for report::write_html.
void run_study(const StudyOptions& options, std::ostream& out, report::Page* page = nullptr);

}  // namespace spotlight::simulator
