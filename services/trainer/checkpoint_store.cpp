#include "services/trainer/checkpoint_store.hpp"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/store/checksum.hpp"

namespace spotlight::trainer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kState = "state.json";
constexpr const char* kLatest = "latest";
constexpr const char* kPrefix = "iter-";

std::string name_of(std::int64_t iteration) {
  return kPrefix + std::to_string(iteration);
}

// The iteration of "iter-<k>", or nullopt for any other name (including "iter-<k>.tmp").
std::optional<std::int64_t> iteration_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0 || name.size() == std::string(kPrefix).size())
    return std::nullopt;
  std::int64_t value = 0;
  for (size_t i = std::string(kPrefix).size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || value > (INT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + (name[i] - '0');
  }
  return value;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(out).str();
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

}  // namespace

CheckpointStore::CheckpointStore(CheckpointStoreOptions options) : o_(std::move(options)) {
  if (o_.keep < 1) throw std::invalid_argument("CheckpointStoreOptions.keep must be >= 1");
}

void CheckpointStore::save(std::int64_t iteration, const std::map<std::string, std::string>& files,
                           const Json& state) {
  try {
    write(iteration, files, state);
  } catch (const durable::WriteError& e) {
    // Room can be made only from checkpoints older than the newest one before `iteration`, which
    // stays: until this save is complete it is what a restart resumes from.
    std::optional<std::int64_t> kept;
    bool removable = false;
    for (const auto& [k, path] : listed()) {
      if (k >= iteration) continue;
      if (!kept) {
        kept = k;
      } else {
        removable = true;
      }
    }
    if (!e.out_of_space() || !removable) throw;
    log::warn(
        "checkpoint {}: {}; removing the checkpoints older than {} to make room, then "
        "trying once more",
        iteration, e.what(), name_of(*kept));
    remove_older_than(*kept);
    write(iteration, files, state);
  }
  remove_older_than(iteration - o_.keep + 1);
}

void CheckpointStore::write(std::int64_t iteration, const std::map<std::string, std::string>& files,
                            const Json& state) {
  const fs::path root = o_.directory;
  durable::create_directories(root);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    const auto name = entry.path().filename().string();
    if (name.size() > 4 && name.ends_with(".tmp")) remove_quietly(entry.path());
  }
  const fs::path tmp = root / (name_of(iteration) + ".tmp");
  const fs::path final_dir = root / name_of(iteration);
  try {
    durable::create_directories(tmp);
    Json manifest{{"iteration", iteration}, {"state", state}, {"files", Json::object()}};
    for (const auto& [name, bytes] : files) {
      if (name.empty() || name == kState || name.find('/') != std::string::npos) {
        throw std::invalid_argument("checkpoint file name '" + name + "'");
      }
      durable::write_new_file(tmp / name, bytes);
      manifest["files"][name] = {{"bytes", bytes.size()},
                                 {"xxh64", store::to_hex(store::xxh64(bytes))}};
    }
    durable::write_new_file(tmp / kState, manifest.dump(2));
    durable::sync_directory(tmp);
    if (fs::exists(final_dir, error)) {
      // A leftover iter-k (complete but `latest` not updated, or broken) is replaced, never
      // removed before its replacement is in place.
      const fs::path stale = root / (name_of(iteration) + ".stale.tmp");
      remove_quietly(stale);
      durable::rename(final_dir, stale);
      durable::rename(tmp, final_dir);
      remove_quietly(stale);
    } else {
      durable::rename(tmp, final_dir);
    }
  } catch (...) {
    remove_quietly(tmp);
    throw;
  }
  durable::write_file(root / kLatest, name_of(iteration));
}

std::map<std::int64_t, fs::path, std::greater<>> CheckpointStore::listed() const {
  std::map<std::int64_t, fs::path, std::greater<>> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(o_.directory, error)) {
    if (!entry.is_directory(error)) continue;
    if (const auto k = iteration_of(entry.path().filename().string())) out[*k] = entry.path();
  }
  return out;
}

void CheckpointStore::remove_older_than(std::int64_t iteration) const {
  for (const auto& [k, path] : listed()) {
    if (k < iteration) remove_quietly(path);
  }
}

std::optional<StoredCheckpoint> CheckpointStore::load_newest() const {
  const auto latest = read_file(o_.directory / kLatest);
  for (const auto& [k, dir] : listed()) {
    StoredCheckpoint c;
    c.iteration = k;
    c.directory = dir;
    std::string problem;
    try {
      const auto text = read_file(dir / kState);
      if (!text) throw std::runtime_error("no readable state.json");
      const Json manifest = Json::parse(*text);
      if (!manifest.contains("files")) {
        // Written before checkpoints listed their files: model and optimizer, unchecked.
        if (manifest.at("completed_iteration").get<std::int64_t>() != k) {
          throw std::runtime_error("state.json names another iteration");
        }
        c.state = manifest;
        for (const char* name : {"model.safetensors", "optimizer.pt"}) {
          auto bytes = read_file(dir / name);
          if (!bytes || bytes->empty()) throw std::runtime_error(std::string("no ") + name);
          c.files.emplace(name, std::move(*bytes));
        }
        return c;
      }
      if (manifest.at("iteration").get<std::int64_t>() != k) {
        throw std::runtime_error("state.json names another iteration");
      }
      c.state = manifest.at("state");
      for (const auto& [name, info] : manifest.at("files").items()) {
        auto bytes = read_file(dir / name);
        if (!bytes) throw std::runtime_error("cannot read " + name);
        if (bytes->size() != info.at("bytes").get<size_t>() ||
            store::to_hex(store::xxh64(*bytes)) != info.at("xxh64").get<std::string>()) {
          throw std::runtime_error(name + " does not match its recorded size and checksum");
        }
        c.files.emplace(name, std::move(*bytes));
      }
    } catch (const std::exception& e) {
      log::warn("checkpoint {} is incomplete ({}); trying an older one", dir.string(), e.what());
      continue;
    }
    if (!latest || *latest != name_of(k)) {
      log::warn("checkpoints/latest says '{}'; the newest complete checkpoint is {}",
                latest ? *latest : "<unreadable>", name_of(k));
    }
    return c;
  }
  return std::nullopt;
}

}  // namespace spotlight::trainer
