#include "tools/cluster/launcher.hpp"

#include <iostream>

#include "common/log/log.hpp"
#include "common/run/run_config.hpp"

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
    const auto run = config::Config::load(run::run_schema(), o.cluster.run);
    b.log = std::filesystem::path(run.get_string("run.dir")) / "logs" / "pretrain.log";
    const auto base = ensure_base(b);
    if (o.base_only) {
      std::cout << base.string() << std::endl;
      return 0;
    }
    o.cluster.run.overrides.push_back("model.base=" + base.string());
  }
  Cluster cluster(o.cluster);
  process::ExitStatus status;
  try {
    cluster.start();
    status = cluster.wait_trainer(stop);
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
  return status.shell_code();
}

}  // namespace spotlight::cluster
