#include "tools/cluster/manifest.hpp"

#include <nlohmann/json.hpp>

namespace spotlight::cluster {

std::string Manifest::to_json() const {
  using Json = nlohmann::json;
  Json processes_json = Json::array();
  for (const auto& p : processes) {
    Json j{{"name", p.name},
           {"role", p.role},
           {"pid", p.pid},
           {"argv", p.argv},
           {"cpus", process::format_cpu_list(p.cpus)},
           {"cpus_allowed", process::format_cpu_list(p.cpus_allowed)},
           {"threads", p.threads},
           {"log", p.log},
           {"started_unix_ms", p.started_unix_ms},
           {"ended_unix_ms", p.ended_unix_ms},
           {"stopped_by", p.stopped_by},
           {"restarts", p.restarts},
           {"cpu_user_seconds", p.cpu.user_seconds},
           {"cpu_system_seconds", p.cpu.system_seconds},
           {"cpu_seconds", p.cpu.total()}};
    if (p.exit) {
      j["exit"] = p.exit->describe();
      j["exit_code"] = p.exit->code;
      j["signal"] = p.exit->signal;
    } else {
      j["exit"] = nullptr;
    }
    processes_json.push_back(std::move(j));
  }
  const Json out{
      {"version", kManifestVersion},
      {"run_dir", run_dir},
      {"run_id", run_id},
      {"mode", mode},
      {"services", services},
      {"started_unix_ms", started_unix_ms},
      {"finished_unix_ms", finished_unix_ms},
      {"endpoints",
       {{"redis_port", redis_port}, {"reward_port", reward_port}, {"bus_port", bus_port}}},
      {"processes", processes_json}};
  return out.dump(1);
}

}  // namespace spotlight::cluster
