// The calibration check: the committed fit (deploy/sim/calibration/fitted.json) replayed in the
// embedded benchmark's configuration reproduces every measured iterations-to-target with at least
// kMinRunsToCheck runs (deploy/sim/calibration/measured.json, made from our runs by
// scripts/sim-calibrate) within its bootstrap 95% interval; and a mis-fitted model does not, so
// the check can fail.
#include "tools/simulator/calibration.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace spotlight::simulator {
namespace {

std::filesystem::path calibration_dir() {
  const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "deploy" / "sim" / "calibration";
}

TEST(Calibration, TheFitReproducesTheMeasuredIterationsToTarget) {
  const Measured measured = load_measured(calibration_dir() / "measured.json");
  const LearningParams fitted = load_fitted(calibration_dir() / "fitted.json");
  ASSERT_FALSE(measured.configs.empty());
  const auto checks = check(measured, fitted, 400);
  int checked = 0;
  for (const auto& c : checks) {
    if (!c.checked) continue;  // too few runs for an interval (kMinRunsToCheck)
    ++checked;
    EXPECT_TRUE(c.within) << c.label << ": simulated median " << c.simulated_median
                          << " outside the measured interval [" << c.ci_low << ", " << c.ci_high
                          << "] around " << c.measured_median;
  }
  EXPECT_GT(checked, 0);
}

TEST(Calibration, AMisFittedModelFailsTheCheck) {
  const Measured measured = load_measured(calibration_dir() / "measured.json");
  LearningParams wrong = load_fitted(calibration_dir() / "fitted.json");
  wrong.eta *= 8;  // learning eight times faster
  const auto checks = check(measured, wrong, 200);
  int outside = 0;
  for (const auto& c : checks)
    outside += (c.checked && !c.within) ? 1 : 0;
  EXPECT_GT(outside, 0);
}

TEST(Calibration, RejectsAMeasuredFileWithoutItsFields) {
  const auto dir = std::filesystem::temp_directory_path() / "spotlight-calibration-test";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "partial.json") << R"({"base_score": 0.5, "recipe": {"prompts": 8}})"; }
  try {
    load_measured(dir / "partial.json");
    FAIL() << "accepted a file without its fields";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("group_size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_measured(dir / "absent.json"), CalibrationError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::simulator
