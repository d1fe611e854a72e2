#pragma once
// The run's base checkpoint (model.base) for a local cluster: found in a cache directory under a
// key of the recipe, and pretrained there first when missing. The one place the launcher decides
// what "the same base" means, so that it can move to the trainer later.
//
//   key  = base_cache_key(config): a hash of every effective model.*, task.* and pretrain.* value
//          except model.base and pretrain.output (everything pretraining reads);
//   path = <cache_dir>/base-<key>.safetensors (its validation summary beside it, .json).
//
// ensure_base() pretrains into a temporary name and renames it into place when the trainer exits
// 0, so an interrupted pretraining never leaves a half-written base behind.

#include <filesystem>
#include <map>
#include <ostream>
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
  std::filesystem::path log;     // pretraining output; empty: <cache_dir>/pretrain-<key>.log
  std::ostream* echo = nullptr;  // notes and the pretraining output
};

// 16 hex digits (FNV-1a 64 of "key=value\n" lines in schema order).
std::string base_cache_key(const config::Config& run_config);

// The base checkpoint of options.run's recipe, pretrained first when the cache lacks it. Throws
// ClusterError when pretraining fails (with the tail of its log), config::ConfigError for a bad
// recipe.
std::filesystem::path ensure_base(const BaseOptions& options);

}  // namespace spotlight::cluster
