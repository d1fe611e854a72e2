#pragma once
// The run's base checkpoint (model.base) for a local cluster, from a cache directory. The trainer
// owns the cache key (services/trainer/pretrain_cache.hpp): ensure_base() runs
//
//   spotlight-trainer pretrain <the recipe> --set pretrain.cache_dir=<cache_dir>
//
// pinned like the pretraining, which reuses <cache_dir>/base-<key>.safetensors or pretrains it
// there (written atomically, its summary beside it as .json) and prints its path as its last
// line; that path is the result.

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight::cluster {

struct BaseOptions {
  std::filesystem::path cache_dir;
  config::ConfigSources run;             // the recipe (--config / --set)
  std::filesystem::path trainer_binary;  // spotlight-trainer
  Placement placement;                   // of the pretraining (threads 0: its cpus, else all)
  std::map<std::string, std::string> env = {{"OMP_WAIT_POLICY", "passive"}};
  std::filesystem::path log;     // pretraining output (appended); empty: <cache_dir>/pretrain.log
  std::ostream* echo = nullptr;  // notes and the pretraining output
};

// The base checkpoint of options.run's recipe, pretrained first when the cache lacks it. Throws
// ClusterError when the trainer fails or prints no checkpoint path. std::nullopt when `stop` is
// requested first: the pretraining is terminated (SIGTERM, kDefaultStopGrace, SIGKILL) and, as
// the trainer writes the base atomically, leaves nothing in the cache.
std::optional<std::filesystem::path> ensure_base(const BaseOptions& options,
                                                 std::stop_token stop = {});

}  // namespace spotlight::cluster
