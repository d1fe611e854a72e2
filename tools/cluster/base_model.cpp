#include "tools/cluster/base_model.hpp"

#include <cstdint>
#include <fstream>
#include <optional>
#include <thread>

#include "tools/cluster/log_follower.hpp"

namespace spotlight::cluster {
namespace {

namespace fs = std::filesystem;

// The last non-empty line of `path` from byte `offset` on.
std::string last_line_from(const fs::path& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

std::optional<fs::path> ensure_base(const BaseOptions& o, std::stop_token stop) {
  fs::create_directories(o.cache_dir);
  const fs::path cache = fs::absolute(o.cache_dir);
  const fs::path log = o.log.empty() ? cache / "pretrain.log" : o.log;
  std::error_code ec;
  const std::uintmax_t offset = fs::exists(log, ec) ? fs::file_size(log, ec) : 0;
  if (o.echo) {
    *o.echo << "== the base model: the recipe's, cached in " << cache.string()
            << " (pretrained there first when missing) ==" << std::endl;
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
                                 "pretrain.cache_dir=" + cache.string()});
  po.cpus = o.placement.cpus;
  po.env = o.env;
  po.log = log;
  process::Process pretrain(po);
  LogFollower echo(log, o.echo);
  std::optional<process::ExitStatus> status;
  while (!(status = pretrain.wait_for(std::chrono::milliseconds(200)))) {
    echo.poll();  // paces the echo only: the exit wakes the wait
    if (stop.stop_requested()) {
      pretrain.terminate(kDefaultStopGrace);
      echo.finish();
      if (o.echo) *o.echo << "== stopped while pretraining the base model ==" << std::endl;
      return std::nullopt;
    }
  }
  echo.finish();
  if (!status->success()) {
    throw ClusterError("pretraining the base model failed (" + status->describe() + "); see " +
                       log.string());
  }
  const fs::path base = last_line_from(log, offset);
  if (base.extension() != ".safetensors" || !fs::exists(base, ec)) {
    throw ClusterError("the trainer printed no base checkpoint path (last line '" + base.string() +
                       "'); see " + log.string());
  }
  return base;
}

}  // namespace spotlight::cluster
