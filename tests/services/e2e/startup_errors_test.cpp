// Configuration that cannot work stops each service binary at start with exit code 2 and one line
// that names the key (issue #13, item 6): --config naming a directory, a device or a file over the
// size limit; an empty run.dir; a device string that is not one; a CUDA device this build does not
// have (in the processes that place tensors).
#include <fstream>

#include <gtest/gtest.h>

#include "common/service/exit_codes.hpp"
#include "tests/services/e2e/log_lines.hpp"
#include "tests/support/process.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;

struct Binary {
  std::string name;
  std::string path;
  std::vector<std::string> leading;  // subcommand
};

const std::vector<Binary>& binaries() {
  static const std::vector<Binary> all{
      {"trainer", "services/trainer/spotlight-trainer", {"train"}},
      {"planner", "services/planner/spotlight-planner", {}},
      {"explorer", "services/explorer/spotlight-explorer", {}},
      {"reward", "services/reward/spotlight-reward", {}},
  };
  return all;
}

// Runs the binary; expects exit code 2 within a minute and exactly one line containing `expect`.
void expect_refused(const Binary& b, const std::vector<std::string>& args,
                    const std::string& expect, const std::filesystem::path& dir) {
  static int n = 0;
  const auto log = dir / (b.name + "-" + std::to_string(++n) + ".log");
  auto all = b.leading;
  all.insert(all.end(), args.begin(), args.end());
  // A Redis nobody listens on: a service that wrongly starts does not touch anything real.
  if (b.name != "reward") {
    all.insert(all.end(), {"--set", "redis.port=" + std::to_string(testing::free_port())});
  }
  testing::Process p(testing::binary_path(b.path), all, log);
  const auto status = p.wait(60s);
  ASSERT_TRUE(status.has_value()) << b.name << " started although " << expect << "\n"
                                  << p.log_tail();
  EXPECT_EQ(*status, service::kExitConfig) << b.name << "\n" << p.log_tail();
  const auto lines = testing::read_lines(log);
  ASSERT_EQ(lines.size(), 1u) << b.name << ": one line, not a trace\n" << p.log_tail();
  EXPECT_NE(lines[0].find(expect), std::string::npos) << b.name << ": " << lines[0];
}

TEST(StartupErrors, AConfigPathThatIsNotASmallRegularFileStopsEveryService) {
  const auto dir = testing::make_temp_dir("spotlight-startup");
  const auto huge = dir / "huge.yaml";
  {
    std::ofstream out(huge);
    out << "# " << std::string(2 << 20, 'x') << "\n";
  }
  for (const auto& b : binaries()) {
    expect_refused(b, {"--config", dir.string()}, "is not a regular file (a directory)", dir);
    expect_refused(b, {"--config", "/dev/zero"}, "is not a regular file (a device", dir);
    expect_refused(b, {"--config", huge.string()}, "more than the limit", dir);
  }
  std::filesystem::remove_all(dir);
}

TEST(StartupErrors, AnEmptyRunDirOrABadDeviceStopsEveryServiceThatReadsThem) {
  const auto dir = testing::make_temp_dir("spotlight-startup");
  for (const auto& b : binaries()) {
    if (b.name == "reward") continue;  // its own schema has neither key
    expect_refused(b, {"--set", "run.dir="}, "'run.dir' must not be empty", dir);
    expect_refused(b, {"--set", "model.device=gpu7"}, "'model.device' must be cpu, cuda", dir);
    if (b.name == "planner") continue;  // places no tensor (and runs where the GPUs are not)
    expect_refused(b, {"--set", "model.device=cuda:99"}, "'model.device': 'cuda:99'", dir);
  }
  std::filesystem::remove_all(dir);
}

// A run.dir that cannot be created, or that is a file, would lose what the service writes there
// (the planner's planner.jsonl, the trainer's checkpoints): every service that reads it refuses
// it at start, naming the key, with exit code 2.
TEST(StartupErrors, AnUnwritableRunDirStopsEveryServiceThatReadsIt) {
  const auto dir = testing::make_temp_dir("spotlight-startup");
  const auto file = dir / "a-file";
  std::ofstream(file) << "not a directory\n";
  for (const auto& b : binaries()) {
    if (b.name == "reward") continue;  // its own schema has no run.dir
    expect_refused(b, {"--set", "run.dir=/proc/nope"}, "config: 'run.dir': mkdir /proc/nope", dir);
    expect_refused(b, {"--set", "run.dir=" + file.string()},
                   "config: 'run.dir': create a file in " + file.string(), dir);
  }
  // The planner's decisions file may live elsewhere: its directory is checked too.
  expect_refused(binaries()[1], {"--set", "planner.decisions_file=/proc/nope/planner.jsonl"},
                 "config: 'planner.decisions_file': mkdir /proc/nope", dir);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
