#include "services/trainer/pretrain_cache.hpp"

#include "common/store/checksum.hpp"

namespace spotlight::trainer {
namespace {

// Bump when what pretraining computes from the same keys changes (data, schedule, model code).
constexpr const char* kRecipeVersion = "spotlight-base-recipe v1";

bool decides_weights(const std::string& key) {
  if (key == "model.base" || key == "pretrain.output" || key == "pretrain.cache_dir" ||
      key == "pretrain.max_seconds") {
    return false;
  }
  return key.rfind("model.", 0) == 0 || key.rfind("task.", 0) == 0 ||
         key.rfind("pretrain.", 0) == 0;
}

}  // namespace

std::string recipe_key(const config::Config& config) {
  std::string text(kRecipeVersion);
  text += '\n';
  for (const auto& entry : config.schema().entries()) {
    if (!decides_weights(entry.key())) continue;
    text += entry.key() + "=" + config::format_value(config.value(entry.key())) + "\n";
  }
  return store::to_hex(store::xxh64(text)).substr(0, 12);
}

std::filesystem::path cached_base(const std::filesystem::path& dir, const std::string& key,
                                  std::optional<int> stopped_at_step) {
  std::string name = "base-" + key;
  if (stopped_at_step) name += "-step" + std::to_string(*stopped_at_step);
  return dir / (name + ".safetensors");
}

}  // namespace spotlight::trainer
