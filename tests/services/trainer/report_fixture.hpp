#pragma once
// A run directory as a finished async run leaves it (six iterations, validation grids,
// exploration samples, one torn metrics line), written without LibTorch: the fixture of the run
// report's tests (run_report_test, and report_browser_test through the
// spotlight_test_write_report_fixture program).

#include <filesystem>

namespace spotlight::testing {

struct ReportFixture {
  int iterations = 6;
  int validation_grids = 4;     // after 0, 2, 4 and 6 iterations
  int exploration_samples = 2;  // iterations 0 and 5
  int torn_lines = 1;           // in metrics.jsonl
};

// Writes the fixture into `dir` (created) and returns what it holds.
ReportFixture write_report_fixture(const std::filesystem::path& dir);

}  // namespace spotlight::testing
