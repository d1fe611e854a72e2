#pragma once
// The trainer's checkpoints under one directory (<run.dir>/checkpoints), crash-consistent: a
// crash, a kill or a full disk at any point leaves every earlier checkpoint loadable, and resume
// finds the newest complete one. Holds bytes, not tensors (no LibTorch here).
//
//   save(k, files, state) ==
//     remove leftovers of interrupted saves (*.tmp)
//     mkdir iter-k.tmp; for each file: write + fsync iter-k.tmp/<name>
//     write + fsync iter-k.tmp/state.json = {iteration: k, state, files: {name: {bytes, xxh64}}}
//     fsync iter-k.tmp; rename iter-k.tmp -> iter-k (a leftover iter-k is renamed aside first);
//     fsync the directory
//     latest = "iter-k" (latest.tmp, fsync, rename, fsync the directory)
//     only then: remove the checkpoints older than the newest `keep`
//   Returns after the checkpoint is durable. A failed step throws durable::WriteError (operation,
//   path, errno) after removing iter-k.tmp; `latest` and the older checkpoints are untouched. When
//   the failure is a full disk (ENOSPC, EDQUOT) and there are complete checkpoints older than the
//   newest one before k, those are removed to make room and the save is tried once more (a run
//   kept on a full disk then still makes progress instead of failing at the same point on every
//   restart). The newest checkpoint before k is never removed before k is saved.
//
//   load_newest() == the complete checkpoint of the highest iteration: state.json parses and every
//   file it lists has its recorded size and checksum. Incomplete ones are skipped with a warning;
//   `latest` is for people and tools and is never trusted over the content.
//
// Not thread-safe; one writer per directory.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace spotlight::trainer {

struct CheckpointStoreOptions {
  std::filesystem::path directory;  // created on the first save
  int keep = 2;                     // complete checkpoints kept after a save (>= 1)
};

struct StoredCheckpoint {
  std::int64_t iteration = -1;
  std::filesystem::path directory;
  std::map<std::string, std::string> files;  // name -> content, checked against state.json
  nlohmann::json state;                      // what save() was given
};

class CheckpointStore {
 public:
  explicit CheckpointStore(CheckpointStoreOptions options);

  // See the top of this file. `files` names are plain file names (no '/'), not "state.json".
  void save(std::int64_t iteration, const std::map<std::string, std::string>& files,
            const nlohmann::json& state);
  std::optional<StoredCheckpoint> load_newest() const;

  const std::filesystem::path& directory() const { return o_.directory; }

 private:
  void write(std::int64_t iteration, const std::map<std::string, std::string>& files,
             const nlohmann::json& state);
  // Complete checkpoints' iterations, newest first (content not checked).
  std::map<std::int64_t, std::filesystem::path, std::greater<>> listed() const;
  void remove_older_than(std::int64_t iteration) const;

  CheckpointStoreOptions o_;
};

}  // namespace spotlight::trainer
