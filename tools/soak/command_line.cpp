#include "tools/soak/command_line.hpp"

#include <cmath>

#include "common/config/arguments.hpp"
#include "common/config/error.hpp"

namespace spotlight::soak {
namespace {

std::chrono::milliseconds seconds_flag(const config::Arguments& a, const std::string& name) {
  return std::chrono::milliseconds(std::llround(a.real(name) * 1000.0));
}

config::ArgumentParser soak_parser() {
  config::ArgumentParser p(
      "usage: spotlight-soak --trace FILE [options] [--config FILE] [--set key=value ...]\n"
      "One async job as processes (the local cluster, spotlight-chaos preempting explorers) under\n"
      "Redis kills and pauses, trainer kills and a full disk; prints the report JSON and exits 0\n"
      "when nothing was lost, double-counted or trained twice and no process exited on its own,\n"
      "1 otherwise.");
  p.option("bin-dir", "DIR", "the services' binaries (<DIR>/<service>/spotlight-<service>)")
      .option("chaos", "FILE", "the spotlight-chaos binary")
      .option("trace", "FILE", "the availability trace (deploy/traces/)")
      .option("time-scale", "X", "trace seconds per real second", "600")
      .option("max-explorers", "N", "explorers at the trace's peak", "4")
      .option("min-explorers", "N", "explorers kept when the trace has none", "1")
      .option("kill-ratio", "R", "share of preemptions that are SIGKILL", "0.5")
      .option("seed", "S", "the driver's draws", "1")
      .option("start-tick", "T", "first tick of the trace", "0")
      .option("grace-seconds", "G", "an explorer's grace after SIGTERM", "5")
      .option("explorer-threads", "N", "run.threads of each explorer", "1")
      .option("redis-kills", "N", "redis-server SIGKILLs (restarted from its AOF)", "0")
      .option("redis-down-seconds", "S", "how long Redis stays dead after each kill", "3")
      .option("redis-pauses", "N", "redis-server SIGSTOPs", "0")
      .option("redis-pause-seconds", "S", "how long each SIGSTOP lasts", "5")
      .option("trainer-kills", "N", "trainer SIGKILLs (restarted: it resumes)", "0")
      .option("disk-full", "N", "of those restarts, how many on a full disk (exit 6 expected)", "0")
      .option("fault-shim", "FILE", "libspotlight_test_fault_fs_preload.so (for --disk-full)")
      .option("min-preemptions", "N", "fewer preemptions is a failure", "0")
      .option("timeout-seconds", "S", "the whole job's limit", "7200")
      .option("report", "FILE", "write the report JSON here too")
      .option("config", "FILE", "the job's YAML configuration")
      .repeated("set", "KEY=VALUE", "a configuration override (repeatable)")
      .flag("quiet", "no progress lines on stderr");
  return p;
}

}  // namespace

std::string soak_usage() {
  return soak_parser().help();
}

SoakCommand parse_soak_command(const std::vector<std::string>& args,
                               const std::filesystem::path& program) {
  const config::Arguments a = soak_parser().parse(args);
  if (!a.positional().empty()) {
    throw config::ConfigError("", "unexpected argument '" + a.positional().front() + "'");
  }
  SoakCommand c;
  c.help = a.help();
  if (c.help) return c;
  const auto here = program.parent_path();
  SoakOptions& o = c.options;
  o.bin_dir = a.value("bin-dir").value_or((here / ".." / ".." / "services").string());
  o.chaos_bin = a.value("chaos").value_or((here / ".." / "chaos" / "spotlight-chaos").string());
  o.trace = a.text("trace");
  o.time_scale = a.real("time-scale");
  o.max_explorers = static_cast<int>(a.integer("max-explorers"));
  o.min_explorers = static_cast<int>(a.integer("min-explorers"));
  o.kill_ratio = a.real("kill-ratio");
  o.seed = static_cast<std::uint64_t>(a.integer("seed"));
  o.start_tick = static_cast<std::size_t>(a.integer("start-tick"));
  o.grace_seconds = a.real("grace-seconds");
  o.explorer_threads = static_cast<int>(a.integer("explorer-threads"));
  o.redis_kills = static_cast<int>(a.integer("redis-kills"));
  o.redis_down = seconds_flag(a, "redis-down-seconds");
  o.redis_pauses = static_cast<int>(a.integer("redis-pauses"));
  o.redis_pause = seconds_flag(a, "redis-pause-seconds");
  o.trainer_kills = static_cast<int>(a.integer("trainer-kills"));
  o.disk_full = static_cast<int>(a.integer("disk-full"));
  if (const auto shim = a.value("fault-shim")) o.fault_shim = *shim;
  o.min_preemptions = a.integer("min-preemptions");
  o.job_timeout = seconds_flag(a, "timeout-seconds");
  if (const auto file = a.value("config")) o.run.file = *file;
  o.run.overrides = a.values("set");
  if (const auto report = a.value("report")) c.report = *report;
  c.quiet = a.flag("quiet");
  o.validate();
  return c;
}

}  // namespace spotlight::soak
