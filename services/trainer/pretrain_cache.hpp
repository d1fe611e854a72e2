#pragma once
// Where a base checkpoint lives in a cache of pretrained bases, as a pure function of its recipe.
// The trainer owns this key (`spotlight-trainer pretrain` with pretrain.cache_dir); scripts and
// container entrypoints ask the trainer for the path instead of hashing YAML themselves.
//
//   recipe_key(config) = 12 hex digits of XXH64 over a version line and "key=value" for every key
//                        that decides the pretrained weights, in schema order: model.* but
//                        model.base, task.*, pretrain.* but output, cache_dir and max_seconds.
//   cached_base(dir, key)             = dir/base-<key>.safetensors        (the recipe's output)
//   cached_base(dir, key, step s)     = dir/base-<key>-step<s>.safetensors (stopped early at s by
//                                       pretrain.max_seconds: never mistaken for the recipe's)
//
// The key names the recipe, not the bits: other thread counts or machines may round differently.

#include <filesystem>
#include <optional>
#include <string>

#include "common/config/config.hpp"

namespace spotlight::trainer {

std::string recipe_key(const config::Config& config);
std::filesystem::path cached_base(const std::filesystem::path& dir, const std::string& key,
                                  std::optional<int> stopped_at_step = std::nullopt);

}  // namespace spotlight::trainer
