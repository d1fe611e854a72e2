#include "tools/cluster/launcher.hpp"

#include <csignal>
#include <iostream>
#include <optional>

#include "common/log/log.hpp"
#include "common/run/run_config.hpp"
#include "services/job/job_schema.hpp"

namespace spotlight::cluster {

int run_launcher(LauncherOptions o, std::stop_token stop) {
  std::ostream* echo = o.quiet ? nullptr : &std::cout;
  o.cluster.echo = echo;
  if (o.base) o.cluster.run.overrides.push_back("model.base=" + o.base->string());
  if (o.base_cache) {
    BaseOptions b;
    b.cache_dir = *o.base_cache;
    b.run = o.cluster.run;
    b.trainer_binary = o.cluster.bin_dir / "trainer" / "spotlight-trainer";
    b.placement = o.pretrain;
    b.env = o.cluster.env;
    b.echo = echo;
    const auto run = config::Config::load(job::run_schema(), o.cluster.run);
    b.log = std::filesystem::path(run.get_string("run.dir")) / "logs" / "pretrain.log";
    const auto base = ensure_base(b, stop);
    if (!base) {
      SPOTLIGHT_LOG(warn) << "cluster: stop requested while pretraining the base model: nothing "
                          << "else was started";
      return 128 + SIGTERM;  // as a job whose trainer was stopped
    }
    if (o.base_only) {
      std::cout << base->string() << std::endl;
      return 0;
    }
    o.cluster.run.overrides.push_back("model.base=" + base->string());
  }
  Cluster cluster(o.cluster);
  const auto shell = [&](const std::string& command) {
    return std::vector<std::string>{
        "/bin/sh", "-c", expand_command(command, cluster.service_args(), cluster.redis_port())};
  };
  process::ExitStatus status;
  std::optional<process::ExitStatus> after;
  try {
    cluster.start();
    if (!o.driver.empty()) cluster.add("driver", "driver", shell(o.driver));
    status = cluster.wait_trainer(stop);
    if (process::Process* driver = cluster.process("driver");
        o.driver_stops_job && driver != nullptr && !driver->running()) {
      status = *driver->exit_status();  // the harness ended the job: its verdict is the job's
    }
    if (!o.after.empty() && !stop.stop_requested()) {
      cluster.drain();
      process::ProcessOptions a;
      a.argv = shell(o.after);
      a.env = o.cluster.env;
      after = process::Process(std::move(a)).wait();
      if (!after->success()) {
        SPOTLIGHT_LOG(error) << "cluster: the --after command ended with " << after->describe();
      }
    }
  } catch (...) {
    cluster.stop();
    cluster.write_manifest();
    throw;
  }
  cluster.stop();
  const auto manifest = cluster.write_manifest();
  if (!status.success()) {
    SPOTLIGHT_LOG(error) << "cluster: the trainer ended with " << status.describe() << "; see "
                         << (cluster.run_dir() / "logs" / "trainer.log").string();
  }
  if (echo) *echo << "== processes, CPU sets and CPU seconds: " << manifest.string() << " ==\n";
  if (status.success() && after) return after->shell_code();
  return status.shell_code();
}

}  // namespace spotlight::cluster
