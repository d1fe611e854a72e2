#include "tools/cluster/base_model.hpp"

#include <cstdint>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/run/run_config.hpp"
#include "tools/cluster/log_follower.hpp"

namespace spotlight::cluster {
namespace {

namespace fs = std::filesystem;

bool pretraining_reads(const std::string& key) {
  if (key == "model.base" || key == "pretrain.output") return false;
  return key.starts_with("model.") || key.starts_with("task.") || key.starts_with("pretrain.");
}

}  // namespace

std::string base_cache_key(const config::Config& c) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a 64
  for (const auto& entry : c.schema().entries()) {
    if (!pretraining_reads(entry.key())) continue;
    const std::string line = entry.key() + "=" + config::format_value(c.value(entry.key())) + "\n";
    for (unsigned char ch : line) {
      hash ^= ch;
      hash *= 1099511628211ULL;
    }
  }
  std::ostringstream hex;
  hex << std::hex << std::setw(16) << std::setfill('0') << hash;
  return hex.str();
}

fs::path ensure_base(const BaseOptions& o) {
  const config::Config c = config::Config::load(run::run_schema(), o.run);
  const std::string key = base_cache_key(c);
  const fs::path base = fs::absolute(o.cache_dir / ("base-" + key + ".safetensors"));
  if (fs::exists(base)) {
    if (o.echo) *o.echo << "== using the cached base model " << base.string() << " ==" << std::endl;
    return base;
  }
  fs::create_directories(o.cache_dir);
  const fs::path tmp = base.string() + ".tmp-" + std::to_string(::getpid()) + ".safetensors";
  const fs::path log = o.log.empty() ? o.cache_dir / ("pretrain-" + key + ".log") : o.log;
  if (o.echo) {
    *o.echo << "== pretraining the base model " << c.get_string("model.preset")
            << " (flow matching on rendered images) into " << base.string() << " ==" << std::endl;
  }
  process::ProcessOptions po;
  po.argv = {o.trainer_binary.string(), "pretrain"};
  if (o.run.file) po.argv.insert(po.argv.end(), {"--config", o.run.file->string()});
  for (const auto& s : o.run.overrides)
    po.argv.insert(po.argv.end(), {"--set", s});
  int threads = o.placement.threads;
  if (threads == 0) {
    threads = o.placement.cpus.empty()
                  ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                  : static_cast<int>(o.placement.cpus.size());
  }
  po.argv.insert(po.argv.end(), {"--set", "run.threads=" + std::to_string(threads), "--set",
                                 "pretrain.output=" + tmp.string()});
  po.cpus = o.placement.cpus;
  po.env = o.env;
  po.log = log;
  process::Process pretrain(po);
  LogFollower echo(log, o.echo);
  std::optional<process::ExitStatus> status;
  while (!(status = pretrain.wait_for(std::chrono::milliseconds(200))))
    echo.poll();  // paces the echo only: the exit wakes the wait
  echo.finish();
  if (!status->success()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::remove(tmp.string() + ".json", ec);
    throw ClusterError("pretraining the base model failed (" + status->describe() + "); see " +
                       log.string());
  }
  fs::rename(tmp, base);
  // The trainer's summary beside the checkpoint names the temporary file: name the real one.
  if (std::ifstream in(tmp.string() + ".json"); in) {
    auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    in.close();
    if (summary.is_object()) summary["checkpoint"] = base.string();
    std::ofstream(base.string() + ".json") << summary.dump(2) << "\n";
    fs::remove(tmp.string() + ".json");
  }
  return base;
}

}  // namespace spotlight::cluster
