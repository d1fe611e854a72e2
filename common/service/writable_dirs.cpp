#include "common/service/writable_dirs.hpp"

#include "common/config/config.hpp"
#include "common/config/error.hpp"
#include "common/durable/durable_file.hpp"

namespace spotlight::service {

void check_writable_directory(const std::string& key, const std::filesystem::path& directory) {
  try {
    durable::check_writable_directory(directory);
  } catch (const durable::WriteError& e) {
    throw config::ConfigError(key, "config: '" + key + "': " + e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    throw config::ConfigError(key, "config: '" + key + "': " + e.what());
  }
}

void check_run_dir(const config::Config& config) {
  check_writable_directory("run.dir", config.get_string("run.dir"));
}

}  // namespace spotlight::service
