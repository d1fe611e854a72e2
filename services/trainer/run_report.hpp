#pragma once
// The run report: one self-contained report.html in the run directory, written at the end of
// every `spotlight-trainer train` and on demand (`spotlight-trainer report RUN_DIR`). It reads
// only the files the run wrote, so it also works on a copied or unfinished run directory:
//
//   summary.json               mode, scores, queue accounting, cost totals (absent while running)
//   metrics.jsonl              per iteration: rewards, time split, validation, staleness audit
//   validation.jsonl           deferred validation scores (validation.defer; `validate`)
//   cost.jsonl                 per iteration: cost so far by device class
//   validation/grids.jsonl     per validation grid: its PNG, scores and timings
//   exploration/samples.jsonl  per exploration sample: its PNG, the candidates' rewards
//   config.yaml                the effective configuration
//
// Sections (HTML ids): overview, scores (against iterations and training wall time), time (split
// per phase), cost, queue, staleness (Kendall tau), grids (the first against the last validation
// grid, the ones in between behind a fold), exploration (what seed selection chose), config. A
// section whose files are missing says so. Unreadable lines are skipped and counted in the
// overview.

#include <filesystem>

#include "common/report/page.hpp"

namespace spotlight::trainer {

// The page for `run_dir`. Throws std::invalid_argument if `run_dir` is not a directory.
report::Page run_report(const std::filesystem::path& run_dir);

// Writes run_report(run_dir) to `out` (default <run_dir>/report.html); returns the path written.
std::filesystem::path write_run_report(const std::filesystem::path& run_dir,
                                       const std::filesystem::path& out = {});

}  // namespace spotlight::trainer
