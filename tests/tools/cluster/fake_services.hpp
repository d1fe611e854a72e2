#pragma once
// Stand-ins for the service binaries, for tests of the launcher's mechanics without LibTorch:
// <bin_dir>/<service>/spotlight-<service> shell scripts that print "argv: ..." and their
// Cpus_allowed_list line, then run the given shell code.

#include <filesystem>
#include <string>

namespace spotlight::testing {

struct FakeServices {
  std::string trainer = "exit 0";          // after printing
  std::string services = "exec sleep 60";  // reward, planner, explorers
};

// Writes the scripts under `bin_dir` (created); returns bin_dir.
std::filesystem::path write_fake_services(const std::filesystem::path& bin_dir,
                                          const FakeServices& fake);

// The whole file, "" when missing.
std::string read_text(const std::filesystem::path& path);

}  // namespace spotlight::testing
