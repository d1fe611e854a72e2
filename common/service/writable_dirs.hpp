#pragma once
// Start-up checks of the directories a service writes into, so that a path it cannot use stops it
// at start (exit code 2, one line naming the key) instead of losing what it writes later.
//
//   check_run_dir(config);   // every service that reads the run schema, right after loading it

#include <filesystem>
#include <string>

namespace spotlight::config {
class Config;  // common/config/config.hpp
}  // namespace spotlight::config

namespace spotlight::service {

// Creates `directory` when missing and checks that a file can be created in it. Throws
// config::ConfigError naming `key` (message "config: '<key>': <what failed>: <path>: <errno>")
// otherwise.
void check_writable_directory(const std::string& key, const std::filesystem::path& directory);

// check_writable_directory("run.dir", config's run.dir).
void check_run_dir(const config::Config& config);

}  // namespace spotlight::service
