// The simulator's per-sample-step time from scripts/gpu-check's results (fixtures under
// fixtures/: invented numbers), and the cost table saying which t it used.
#include "tools/simulator/measured_step_time.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tools/simulator/step_costs.hpp"

namespace spotlight::simulator {
namespace {

std::filesystem::path fixture(const std::string& name) {
  const char* src = std::getenv("SPOTLIGHT_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "tests" / "tools" / "simulator" / "fixtures" /
         name;
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("spotlight-measured-" + std::to_string(::getpid()) + "-" +
              testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string error_of(const std::filesystem::path& file, const std::string& hardware) {
  try {
    read_measured_step_time(file, hardware);
  } catch (const MeasurementError& e) {
    return e.what();
  }
  return "";
}

TEST(MeasuredStepTime, ReadsGpuCheckResults) {
  const auto m = read_measured_step_time(fixture("gpu-check-h200.json"), "H200");
  EXPECT_EQ(m.seconds_per_sample_step, 0.5);
  EXPECT_EQ(m.device, "NVIDIA H200");
  EXPECT_EQ(m.when, "2000-01-01T00:00:00Z");
  EXPECT_EQ(m.basis, "fixture basis text");
}

TEST(MeasuredStepTime, RefusesDryRunsOtherHardwareAndMissingFields) {
  EXPECT_NE(error_of(fixture("gpu-check-cpu-dry-run.json"), "H200").find("dry run"),
            std::string::npos);
  EXPECT_NE(error_of(fixture("gpu-check-h200.json"), "H100").find("not on H100"),
            std::string::npos);
  const auto dir = temp_dir();
  std::ofstream(dir / "partial.json")
      << R"({"mode": "device", "when": "x", "device": {"name": "NVIDIA H200"}})";
  EXPECT_NE(error_of(dir / "partial.json", "H200").find("'simulator'"), std::string::npos);
  std::ofstream(dir / "negative.json") << R"({"mode": "device", "when": "x", "device": {"name":
      "NVIDIA H200"}, "simulator": {"seconds_per_sample_step": -1, "basis": "b"}})";
  EXPECT_NE(error_of(dir / "negative.json", "H200").find("positive"), std::string::npos);
  std::ofstream(dir / "garbage.json") << "{not json";
  EXPECT_NE(error_of(dir / "garbage.json", "H200").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(dir / "absent.json", "H200").find("cannot read"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(MeasuredStepTime, FoundUnderDeployGpuByHardwareName) {
  const auto dir = temp_dir();
  EXPECT_FALSE(measured_results_for("H200", dir).has_value());
  std::filesystem::create_directories(dir / "deploy" / "gpu");
  std::filesystem::copy_file(fixture("gpu-check-h200.json"), dir / "deploy" / "gpu" / "h200.json");
  EXPECT_EQ(measured_results_for("H200", dir), dir / "deploy" / "gpu" / "h200.json");
  EXPECT_FALSE(measured_results_for("H100", dir).has_value());
  std::filesystem::remove_all(dir);
}

TEST(MeasuredStepTime, RefusesAnotherResolution) {
  const auto dir = temp_dir();
  std::ofstream(dir / "h200.json") << R"({"mode": "device", "when": "x", "device": {"name":
      "NVIDIA H200"}, "simulator": {"seconds_per_sample_step": 0.4, "image_tokens": 4096,
      "basis": "1024x1024"}})";
  EXPECT_NE(error_of(dir / "h200.json", "H200").find("image_tokens"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(MeasuredStepTime, TheCostTableSaysWhichTimeItUsed) {
  const auto dir = temp_dir();
  StepTimeChoice choice;
  choice.source_dir = dir;  // no deploy/gpu/ there: the estimate
  const StepCosts estimated = step_costs_for("H200", choice);
  EXPECT_FALSE(estimated.measured);
  EXPECT_EQ(estimated.seconds_per_sample_step,
            estimated_step_costs("H200").seconds_per_sample_step);
  std::ostringstream a;
  write_cost_table(a, estimated);
  EXPECT_NE(a.str().find("| assumed | estimate"), std::string::npos) << a.str();

  // A results file under deploy/gpu/ replaces t; the table names the device, file and basis.
  std::filesystem::create_directories(dir / "deploy" / "gpu");
  std::filesystem::copy_file(fixture("gpu-check-h200.json"), dir / "deploy" / "gpu" / "h200.json");
  const StepCosts measured = step_costs_for("H200", choice);
  EXPECT_TRUE(measured.measured);
  EXPECT_EQ(measured.seconds_per_sample_step, 0.5);
  std::ostringstream b;
  write_cost_table(b, measured);
  EXPECT_NE(b.str().find("| 0.5 s | measured | measured on NVIDIA H200 by scripts/gpu-check"),
            std::string::npos)
      << b.str();
  EXPECT_NE(b.str().find("(h200.json): fixture basis text"), std::string::npos) << b.str();

  // --estimate keeps the estimate; the H100 has no file; an explicit file wins; both at once is
  // refused.
  choice.estimate = true;
  EXPECT_FALSE(step_costs_for("H200", choice).measured);
  choice.estimate = false;
  EXPECT_FALSE(step_costs_for("H100", choice).measured);
  StepTimeChoice given;
  given.results = fixture("gpu-check-h200.json");
  given.source_dir = dir / "nowhere";
  EXPECT_EQ(step_costs_for("H200", given).seconds_per_sample_step, 0.5);
  EXPECT_THROW(step_costs_for("H100", given), MeasurementError);
  given.estimate = true;
  EXPECT_THROW(step_costs_for("H200", given), std::invalid_argument);

  // A dry run left under deploy/gpu/ is an error, not silently the estimate.
  std::filesystem::copy_file(fixture("gpu-check-cpu-dry-run.json"),
                             dir / "deploy" / "gpu" / "h200.json",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THROW(step_costs_for("H200", choice), MeasurementError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::simulator
