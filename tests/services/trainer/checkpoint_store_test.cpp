// Crash-consistent checkpoints under injected write failures: the fault shim
// (tests/support/fault_fs) fails each step of a save in turn (open, write, fsync, close, rename,
// mkdir of every file, the directory and `latest`), with the errno a full disk gives. After every
// failure the store must still load the newest complete checkpoint byte for byte, say what failed
// (operation, path, errno), and a retry must succeed.
#include "services/trainer/checkpoint_store.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/durable/durable_file.hpp"
#include "tests/support/fault_fs.hpp"

namespace spotlight::trainer {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  char tmpl[] = "/tmp/spotlight-checkpoints-XXXXXX";
  return fs::path(mkdtemp(tmpl));
}

// Distinct, iteration-dependent content (large enough for several write calls? one is enough).
std::map<std::string, std::string> files_of(std::int64_t k) {
  std::string model(4096 + k, static_cast<char>('a' + k));
  model[0] = static_cast<char>(k);
  return {{"model.safetensors", model}, {"optimizer.pt", "optimizer state " + std::to_string(k)}};
}

nlohmann::json state_of(std::int64_t k) {
  return {{"completed_iteration", k}, {"wall_seconds", 1.5 * k}};
}

void expect_exactly(const std::optional<StoredCheckpoint>& c, std::int64_t k) {
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->iteration, k);
  EXPECT_EQ(c->files, files_of(k));
  EXPECT_EQ(c->state, state_of(k));
}

class Armed {
 public:
  Armed(const fs::path& prefix, long fail_at, int error, bool sticky = false) {
    spotlight_fault_arm(prefix.c_str(), fail_at, error, sticky ? 1 : 0);
  }
  ~Armed() { spotlight_fault_disarm(); }
};

TEST(CheckpointStore, SavesAndLoadsTheNewestAndKeepsTwo) {
  const auto dir = temp_dir();
  CheckpointStore store({dir / "checkpoints"});
  EXPECT_FALSE(store.load_newest().has_value());
  for (std::int64_t k = 0; k < 4; ++k)
    store.save(k, files_of(k), state_of(k));
  expect_exactly(store.load_newest(), 3);
  EXPECT_FALSE(fs::exists(dir / "checkpoints" / "iter-1"));
  EXPECT_TRUE(fs::exists(dir / "checkpoints" / "iter-2"));
  std::ifstream latest(dir / "checkpoints" / "latest");
  std::string name;
  latest >> name;
  EXPECT_EQ(name, "iter-3");
  fs::remove_all(dir);
}

TEST(CheckpointStore, AFailureAtEveryStepLeavesALoadableCheckpointAndARetrySucceeds) {
  const auto root = temp_dir();
  // How many steps one save has (the shim counts without failing).
  long steps = 0;
  {
    CheckpointStore store({root / "count" / "checkpoints"});
    store.save(0, files_of(0), state_of(0));
    Armed armed(root / "count", 0, ENOSPC);
    store.save(1, files_of(1), state_of(1));
    steps = spotlight_fault_steps();
  }
  ASSERT_GE(steps, 15) << "the shim did not see the writes (not interposed?)";
  for (long step = 1; step <= steps; ++step) {
    SCOPED_TRACE("failing step " + std::to_string(step) + " of " + std::to_string(steps));
    const auto dir = root / ("step-" + std::to_string(step));
    CheckpointStore store({dir / "checkpoints"});
    store.save(0, files_of(0), state_of(0));
    {
      Armed armed(dir, step, ENOSPC);
      try {
        store.save(1, files_of(1), state_of(1));
        ADD_FAILURE() << "the save succeeded although a step failed";
      } catch (const durable::WriteError& e) {
        EXPECT_EQ(e.error_number(), ENOSPC);
        EXPECT_TRUE(e.out_of_space());
        EXPECT_EQ(e.path().string().rfind(dir.string(), 0), 0u) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::strerror(ENOSPC)), std::string::npos) << e.what();
      }
      EXPECT_EQ(spotlight_fault_failed(), 1);
    }
    // Whatever failed, what loads is a whole checkpoint: the old one, or the new one when only
    // `latest` was left to update.
    const auto loaded = store.load_newest();
    ASSERT_TRUE(loaded.has_value());
    expect_exactly(loaded, loaded->iteration);
    EXPECT_TRUE(loaded->iteration == 0 || loaded->iteration == 1);
    EXPECT_FALSE(fs::exists(dir / "checkpoints" / "iter-1.tmp")) << "a partial save was left";
    // The disk has room again: the same save succeeds and resumes exactly.
    store.save(1, files_of(1), state_of(1));
    expect_exactly(store.load_newest(), 1);
    expect_exactly(CheckpointStore({dir / "checkpoints"}).load_newest(), 1);
  }
  fs::remove_all(root);
}

TEST(CheckpointStore, AFullDiskMakesRoomByRemovingOlderCheckpointsThenSucceeds) {
  const auto dir = temp_dir();
  CheckpointStore store({dir / "checkpoints"});
  store.save(0, files_of(0), state_of(0));
  store.save(1, files_of(1), state_of(1));
  {
    Armed armed(dir, 1, ENOSPC);  // the first step fails; the retry after pruning succeeds
    store.save(2, files_of(2), state_of(2));
  }
  expect_exactly(store.load_newest(), 2);
  EXPECT_FALSE(fs::exists(dir / "checkpoints" / "iter-0"));
  EXPECT_TRUE(fs::exists(dir / "checkpoints" / "iter-1"));
  fs::remove_all(dir);
}

TEST(CheckpointStore, AnIoErrorIsNotTakenForAFullDisk) {
  const auto dir = temp_dir();
  CheckpointStore store({dir / "checkpoints"});
  store.save(0, files_of(0), state_of(0));
  store.save(1, files_of(1), state_of(1));
  {
    Armed armed(dir, 3, EIO);
    EXPECT_THROW(store.save(2, files_of(2), state_of(2)), durable::WriteError);
  }
  EXPECT_TRUE(fs::exists(dir / "checkpoints" / "iter-0")) << "nothing is removed for an EIO";
  expect_exactly(store.load_newest(), 1);
  fs::remove_all(dir);
}

TEST(CheckpointStore, AStickyFullDiskFailsCleanlyAndKeepsTheNewest) {
  const auto dir = temp_dir();
  CheckpointStore store({dir / "checkpoints"});
  store.save(0, files_of(0), state_of(0));
  store.save(1, files_of(1), state_of(1));
  {
    Armed armed(dir, 2, ENOSPC, /*sticky=*/true);
    EXPECT_THROW(store.save(2, files_of(2), state_of(2)), durable::WriteError);
  }
  expect_exactly(store.load_newest(), 1);
  fs::remove_all(dir);
}

TEST(CheckpointStore, ABrokenLatestOrATornFileFallsBackToTheNewestCompleteCheckpoint) {
  const auto dir = temp_dir();
  CheckpointStore store({dir / "checkpoints"});
  store.save(0, files_of(0), state_of(0));
  store.save(1, files_of(1), state_of(1));
  std::ofstream(dir / "checkpoints" / "latest", std::ios::trunc);  // 0 bytes, as main left it
  expect_exactly(store.load_newest(), 1);
  fs::resize_file(dir / "checkpoints" / "iter-1" / "model.safetensors", 10);  // torn
  expect_exactly(store.load_newest(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::trainer
