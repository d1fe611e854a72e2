// The calibration check: the committed fit (deploy/sim/calibration/fitted.json) replayed in the
// embedded benchmark's configuration reproduces every measured configuration with at least
// kMinRunsToCheck runs (deploy/sim/calibration/measured.json, made from our runs by
// scripts/sim-calibrate): its iterations-to-target within the bootstrap 95% interval and its
// progress at the end of the run within two standard errors, so the selection effect (sync and
// async against none) as measured. A mis-fitted model, and one in which selection buys nothing,
// fail the same check.
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

TEST(Calibration, TheFitReproducesTheMeasuredRuns) {
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
    EXPECT_TRUE(c.progress_within)
        << c.label << ": simulated end progress " << c.simulated_progress << " against "
        << c.measured_progress << " +- " << c.measured_progress_se << " measured";
  }
  // Plain GRPO and at least one selecting configuration: the selection effect is checked.
  EXPECT_GE(checked, 2);
}

// Held-out data: the six-mode study (deploy/benchmark/study-6-modes, measured by
// scripts/sim-calibrate into calibration/study-6-modes/) was not used by the committed fit. The fit
// predicts every configuration's iterations-to-target interval there, and the end progress of
// none, sync and async within two standard errors. sync-stale is the exception, and a known one:
// the model gives it async's learning (selection on observations one version stale, the same N
// and S), so it predicts both alike, while the study measured async 0.0400 +- 0.0041 and
// sync-stale 0.0315 +- 0.0030 apart; the fit cannot meet both.
TEST(Calibration, TheFitPredictsTheSixModeStudy) {
  const Measured measured = load_measured(calibration_dir() / "study-6-modes" / "measured.json");
  const LearningParams fitted = load_fitted(calibration_dir() / "fitted.json");
  const auto checks = check(measured, fitted, 400);
  int progress_checked = 0;
  for (const auto& c : checks) {
    ASSERT_TRUE(c.checked) << c.label << ": " << c.measured_runs << " runs";
    EXPECT_TRUE(c.within) << c.label << ": simulated median " << c.simulated_median
                          << " outside the measured interval [" << c.ci_low << ", " << c.ci_high
                          << "]";
    if (c.label.rfind("sync-stale", 0) == 0) continue;
    ++progress_checked;
    EXPECT_TRUE(c.progress_within)
        << c.label << ": simulated end progress " << c.simulated_progress << " against "
        << c.measured_progress << " +- " << c.measured_progress_se << " measured";
  }
  EXPECT_EQ(progress_checked, 3);  // none, sync, async
}

TEST(Calibration, AModelInWhichSelectionBuysNothingFailsTheCheck) {
  const Measured measured = load_measured(calibration_dir() / "measured.json");
  const LearningParams fitted = load_fitted(calibration_dir() / "fitted.json");
  const auto none_progress = [&](const LearningParams& p) {
    for (const auto& c : check(measured, p, 200))
      if (c.label == "none") return c.simulated_progress;
    ADD_FAILURE() << "no plain GRPO configuration measured";
    return 0.0;
  };
  // Every update points the true way (rho = 1) whatever the groups' contrast, so selection
  // cannot help; eta is scaled so that plain GRPO still progresses as fitted.
  LearningParams flat = fitted;
  flat.noise = 0;
  flat.eta *= none_progress(fitted) / none_progress(flat);
  const auto checks = check(measured, flat, 200);
  int outside = 0;
  for (const auto& c : checks)
    outside += (c.checked && c.label != "none" && !c.progress_within) ? 1 : 0;
  EXPECT_GT(outside, 0);
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

// The contrast law (deploy/sim/calibration/contrast/fitted.json), fitted by
// `spotlight-sim fit --law contrast --categories 4` on the ten-seed study (none, sync, async), is
// checked on the gain of selection itself: each selecting configuration's end progress over plain
// GRPO's, measured with a paired bootstrap interval over seeds. The six-mode study was held out,
// sync-stale with it (a mode the fit never saw).
LearningParams contrast_fit() {
  const LearningParams p = load_fitted(calibration_dir() / "contrast" / "fitted.json");
  EXPECT_EQ(p.law, Law::kContrast);
  return p;
}

TEST(ContrastCalibration, TheFitsGainsAreWithinTheMeasuredIntervalsFittedAndHeldOut) {
  const LearningParams fitted = contrast_fit();
  int checked = 0;
  for (const auto* file : {"measured.json", "study-6-modes/measured.json"}) {
    const Measured measured = load_measured(calibration_dir() / file);
    for (const auto& g : check_gains(measured, fitted, 400)) {
      ++checked;
      EXPECT_TRUE(g.within()) << file << " " << g.label << ": simulated gain " << g.simulated_gain
                              << " outside [" << g.ci_low << ", " << g.ci_high << "] around "
                              << g.measured_gain;
    }
  }
  EXPECT_EQ(checked, 5);  // async and sync, then async, sync and sync-stale held out
}

// The check rejects a law that gives selection too little: selected groups teaching half of what
// the fit says (gain below 1).
TEST(ContrastCalibration, TooLittleGainFailsTheCheck) {
  LearningParams weak = contrast_fit();
  weak.selection_efficiency *= 0.6;
  int too_little = 0;
  for (const auto* file : {"measured.json", "study-6-modes/measured.json"}) {
    for (const auto& g : check_gains(load_measured(calibration_dir() / file), weak, 200)) {
      too_little += g.too_little ? 1 : 0;
      EXPECT_FALSE(g.too_much) << g.label;
    }
  }
  EXPECT_GT(too_little, 0);
}

// ... and one that gives it too much: selected groups teaching three times as much.
TEST(ContrastCalibration, TooMuchGainFailsTheCheck) {
  LearningParams strong = contrast_fit();
  strong.selection_efficiency *= 3;
  int too_much = 0;
  for (const auto* file : {"measured.json", "study-6-modes/measured.json"}) {
    for (const auto& g : check_gains(load_measured(calibration_dir() / file), strong, 200)) {
      too_much += g.too_much ? 1 : 0;
      EXPECT_FALSE(g.too_little) << g.label;
    }
  }
  EXPECT_GT(too_much, 0);
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
