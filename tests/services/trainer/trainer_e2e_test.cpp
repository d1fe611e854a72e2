// The trainer binary under a stop request and a full disk (issues #12 and #13): SIGTERM mid-run
// exits 0 and the resumed run ends with the same weights, bit for bit, as an unbroken run; a disk
// that fills up during a checkpoint (write failures injected with the LD_PRELOAD shim of
// tests/support/fault_fs) ends the process with one line and exit code 6, and after space is freed
// the run resumes to the same weights; an unwritable run.dir is one line and exit code 2. And the
// base-model cache the trainer owns: the path of a recipe's base, reused, and an early stop that
// says so.
#include <cerrno>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <stdlib.h>

#include "common/service/exit_codes.hpp"
#include "tests/services/e2e/log_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Process;

constexpr int kIterations = 8;

std::vector<std::string> train_args(const fs::path& run_dir) {
  return {"train",
          "--set",
          "run.dir=" + run_dir.string(),
          "--set",
          "model.preset=micro",
          "--set",
          "exploration.mode=none",
          "--set",
          "trainer.iterations=" + std::to_string(kIterations),
          "--set",
          "trainer.prompts_per_iteration=4",
          "--set",
          "trainer.group_size=4",
          "--set",
          "trainer.micro_batch=4",
          "--set",
          "trainer.lr=1e-3",
          "--set",
          "trainer.clip_range=0.2",
          "--set",
          "sampler.steps=6",
          "--set",
          "validation.prompts=4",
          "--set",
          "validation.steps=3",
          "--set",
          "validation.every=100",
          "--set",
          "audit.every=0",
          "--set",
          "run.threads=1"};
}

fs::path trainer_binary() {
  return testing::binary_path("services/trainer/spotlight-trainer");
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::int64_t> iterations_in(const fs::path& metrics) {
  std::vector<std::int64_t> out;
  for (const auto& line : testing::read_lines(metrics))
    out.push_back(nlohmann::json::parse(line).at("iteration").get<std::int64_t>());
  return out;
}

std::vector<std::int64_t> unbroken() {
  std::vector<std::int64_t> out{-1};
  for (int k = 0; k < kIterations; ++k)
    out.push_back(k);
  return out;
}

fs::path final_model(const fs::path& run_dir) {
  return run_dir / "checkpoints" / ("iter-" + std::to_string(kIterations - 1)) /
         "model.safetensors";
}

// Runs the trainer to the end (rc 0) in `run_dir` and returns its final weights.
std::string train_to_the_end(const fs::path& run_dir, const fs::path& log) {
  Process trainer(trainer_binary(), train_args(run_dir), log);
  const auto status = trainer.wait(600s);
  EXPECT_EQ(status, std::optional<int>(0)) << trainer.log_tail();
  EXPECT_EQ(iterations_in(run_dir / "metrics.jsonl"), unbroken());
  return read_all(final_model(run_dir));
}

// Environment variables for one child process (set around its start only).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars)
      : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_)
      ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_)
      ::unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

class TrainerProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::make_temp_dir("spotlight-trainer-e2e");
    reference_ = train_to_the_end(dir_ / "reference", dir_ / "reference.log");
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->current_test_suite()->Failed()) fs::remove_all(dir_);
  }
  static fs::path dir_;
  static std::string reference_;
};
fs::path TrainerProcess::dir_;
std::string TrainerProcess::reference_;

TEST_F(TrainerProcess, SigtermMidRunExitsZeroAndTheResumedRunMatchesAnUnbrokenOne) {
  ASSERT_FALSE(reference_.empty());
  const auto run_dir = dir_ / "sigterm";
  {
    Process trainer(trainer_binary(), train_args(run_dir), dir_ / "sigterm-1.log");
    ASSERT_TRUE(testing::wait_for(
        [&] {
          const auto its = iterations_in(run_dir / "metrics.jsonl");
          return (!its.empty() && its.back() >= 1) || !trainer.running();
        },
        300s));
    ASSERT_TRUE(trainer.running()) << "finished before the signal\n" << trainer.log_tail();
    trainer.signal(SIGTERM);
    EXPECT_EQ(trainer.wait(60s), std::optional<int>(0)) << trainer.log_tail();
    EXPECT_EQ(testing::lines_with(dir_ / "sigterm-1.log", "received SIGTERM").size(), 1u);
    EXPECT_EQ(testing::lines_with(dir_ / "sigterm-1.log", "a restart resumes at iteration").size(),
              1u)
        << trainer.log_tail();
  }
  ASSERT_LT(iterations_in(run_dir / "metrics.jsonl").size(), unbroken().size())
      << "the signal came too late to interrupt anything";
  EXPECT_EQ(train_to_the_end(run_dir, dir_ / "sigterm-2.log"), reference_);
}

TEST_F(TrainerProcess, AFullDiskAtACheckpointExitsSixAndResumesExactlyOnceThereIsRoom) {
  const char* shim = SPOTLIGHT_FAULT_FS_LIBRARY;
  ASSERT_TRUE(fs::exists(shim)) << shim;
  const auto run_dir = dir_ / "disk-full";
  const auto log = dir_ / "disk-full-1.log";
  {
    // From the 40th write step under checkpoints/ on, every one fails (the second checkpoint).
    ScopedEnv env({{"LD_PRELOAD", shim},
                   {"SPOTLIGHT_FAULT_PREFIX", (run_dir / "checkpoints").string()},
                   {"SPOTLIGHT_FAULT_AT", "40"},
                   {"SPOTLIGHT_FAULT_STICKY", "1"},
                   {"SPOTLIGHT_FAULT_ERRNO", std::to_string(ENOSPC)}});
    Process trainer(trainer_binary(), train_args(run_dir), log);
    EXPECT_EQ(trainer.wait(300s), std::optional<int>(service::kExitStorage)) << trainer.log_tail();
  }
  const auto errors = testing::lines_with(log, " ERROR ");
  ASSERT_EQ(errors.size(), 1u) << read_all(log);
  EXPECT_NE(errors[0].find("No space left on device"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find((run_dir / "checkpoints").string()), std::string::npos) << errors[0];
  // latest still names a complete checkpoint, and no half-written one is left.
  EXPECT_EQ(read_all(run_dir / "checkpoints" / "latest"), "iter-0");
  EXPECT_FALSE(fs::exists(run_dir / "checkpoints" / "iter-1.tmp"));
  EXPECT_EQ(train_to_the_end(run_dir, dir_ / "disk-full-2.log"), reference_);
}

TEST_F(TrainerProcess, AnUnwritableRunDirIsOneLineAndExitCodeTwo) {
  // Root ignores permissions: the shim makes every write there fail as on a read-only mount.
  const auto run_dir = dir_ / "read-only";
  fs::create_directories(run_dir);
  const auto log = dir_ / "read-only.log";
  {
    ScopedEnv env({{"LD_PRELOAD", SPOTLIGHT_FAULT_FS_LIBRARY},
                   {"SPOTLIGHT_FAULT_PREFIX", run_dir.string()},
                   {"SPOTLIGHT_FAULT_AT", "1"},
                   {"SPOTLIGHT_FAULT_STICKY", "1"},
                   {"SPOTLIGHT_FAULT_ERRNO", std::to_string(EROFS)}});
    Process trainer(trainer_binary(), train_args(run_dir), log);
    EXPECT_EQ(trainer.wait(120s), std::optional<int>(service::kExitConfig)) << trainer.log_tail();
  }
  const auto lines = testing::read_lines(log);
  ASSERT_EQ(lines.size(), 1u) << read_all(log);
  EXPECT_NE(lines[0].find("'run.dir'"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("Read-only file system"), std::string::npos) << lines[0];
}

// The last line of a pretrain log that names a checkpoint (pretrain prints it on stdout).
std::string printed_path(const fs::path& log) {
  std::string path;
  for (const auto& line : testing::read_lines(log)) {
    if (line.ends_with(".safetensors") && line.front() == '/') path = line;
  }
  return path;
}

TEST(PretrainCache, TheTrainerOwnsTheKeyReusesTheBaseAndNamesAnEarlyStop) {
  const auto dir = testing::make_temp_dir("spotlight-pretrain-cache");
  const auto cache = dir / "cache";
  const auto pretrain = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args{"pretrain",
                                  "--set",
                                  "model.preset=micro",
                                  "--set",
                                  "pretrain.steps=3",
                                  "--set",
                                  "pretrain.batch=4",
                                  "--set",
                                  "validation.prompts=2",
                                  "--set",
                                  "validation.steps=2",
                                  "--set",
                                  "run.threads=1",
                                  "--set",
                                  "run.dir=" + (dir / "run").string(),
                                  "--set",
                                  "pretrain.cache_dir=" + cache.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    Process p(trainer_binary(), args, dir / (name + ".log"));
    EXPECT_EQ(p.wait(300s), std::optional<int>(0)) << p.log_tail();
    return printed_path(dir / (name + ".log"));
  };
  const auto first = pretrain("first", {});
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(fs::path(first).filename().string().starts_with("base-"));
  EXPECT_EQ(fs::path(first).parent_path(), cache);
  ASSERT_TRUE(fs::exists(first));
  const auto summary = nlohmann::json::parse(read_all(first + ".json"));
  EXPECT_EQ(summary.at("steps"), 3);
  EXPECT_EQ(summary.at("stopped_early"), false);

  // Same recipe (deployment keys do not matter): the same file, not pretrained again.
  const auto second = pretrain("second", {"--set", "redis.port=1234", "--set", "run.seed=7"});
  EXPECT_EQ(second, first);
  EXPECT_EQ(testing::lines_with(dir / "second.log", "using the cached base model").size(), 1u);
  EXPECT_TRUE(testing::lines_with(dir / "second.log", "pretrain step").empty());

  // Another recipe: another key.
  const auto other = pretrain("other", {"--set", "pretrain.steps=4"});
  EXPECT_NE(other, first);

  // A time cap does not change the key: the recipe's base, when cached, is used as is.
  EXPECT_EQ(pretrain("cap-cached", {"--set", "pretrain.max_seconds=0.000001"}), first);
  // A cap that is hit: said in the log, recorded, and kept apart from the recipe's output.
  fs::remove(first);
  const auto capped = pretrain("capped", {"--set", "pretrain.max_seconds=0.000001"});
  EXPECT_EQ(fs::path(capped).filename().string(),
            fs::path(first).stem().string() + "-step1.safetensors");
  const auto capped_summary = nlohmann::json::parse(read_all(capped + ".json"));
  EXPECT_EQ(capped_summary.at("steps"), 1);
  EXPECT_EQ(capped_summary.at("stopped_early"), true);
  EXPECT_EQ(testing::lines_with(dir / "capped.log", "stopped early").size(), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
