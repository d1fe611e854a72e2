#include "tests/tools/cluster/fake_services.hpp"

#include <fstream>
#include <sstream>

namespace spotlight::testing {

std::filesystem::path write_fake_services(const std::filesystem::path& bin_dir,
                                          const FakeServices& fake) {
  for (const std::string service : {"trainer", "planner", "explorer", "reward"}) {
    const auto dir = bin_dir / service;
    std::filesystem::create_directories(dir);
    const auto path = dir / ("spotlight-" + service);
    std::ofstream(path)
        << "#!/bin/sh\necho \"argv: $*\"\ngrep Cpus_allowed_list /proc/self/status\n"
        << (service == "trainer" ? fake.trainer : fake.services) << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec);
  }
  return bin_dir;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace spotlight::testing
