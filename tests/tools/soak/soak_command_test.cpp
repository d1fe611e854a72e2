// spotlight-soak's command line: flags to SoakOptions, defaults from the program's folder, and
// options that cannot work rejected with the flag's name before anything starts.
#include <gtest/gtest.h>

#include "common/config/error.hpp"
#include "tools/soak/command_line.hpp"

namespace spotlight::soak {
namespace {

using namespace std::chrono_literals;

const std::filesystem::path kProgram = "/b/tools/soak/spotlight-soak";

TEST(SoakCommand, FlagsBecomeOptionsAndTheBinariesDefaultBesideTheProgram) {
  const auto c = parse_soak_command({"--trace",
                                     "t.json",
                                     "--redis-kills",
                                     "5",
                                     "--redis-down-seconds",
                                     "2.5",
                                     "--redis-pauses",
                                     "4",
                                     "--trainer-kills",
                                     "3",
                                     "--disk-full",
                                     "1",
                                     "--fault-shim",
                                     "/x/shim.so",
                                     "--min-preemptions",
                                     "1000",
                                     "--max-explorers",
                                     "8",
                                     "--set",
                                     "a.b=1",
                                     "--set",
                                     "c=2",
                                     "--report",
                                     "r.json"},
                                    kProgram);
  const SoakOptions& o = c.options;
  EXPECT_EQ(o.bin_dir, std::filesystem::path("/b/tools/soak/../../services"));
  EXPECT_EQ(o.chaos_bin, std::filesystem::path("/b/tools/soak/../chaos/spotlight-chaos"));
  EXPECT_EQ(o.trace, "t.json");
  EXPECT_EQ(o.redis_kills, 5);
  EXPECT_EQ(o.redis_down, 2500ms);
  EXPECT_EQ(o.redis_pauses, 4);
  EXPECT_EQ(o.redis_pause, 5000ms);  // the default
  EXPECT_EQ(o.trainer_kills, 3);
  EXPECT_EQ(o.disk_full, 1);
  EXPECT_EQ(o.fault_shim, "/x/shim.so");
  EXPECT_EQ(o.min_preemptions, 1000);
  EXPECT_EQ(o.max_explorers, 8);
  EXPECT_EQ(o.run.overrides, (std::vector<std::string>{"a.b=1", "c=2"}));
  EXPECT_EQ(c.report, "r.json");
}

TEST(SoakCommand, OptionsThatCannotWorkAreRejectedWithTheirName) {
  const auto error_of = [](const std::vector<std::string>& args) -> std::string {
    try {
      parse_soak_command(args, kProgram);
    } catch (const config::ConfigError& e) {
      return e.what();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({"--trace", "t", "--bogus", "1"}).find("bogus"), std::string::npos);
  EXPECT_NE(error_of({"--redis-kills", "1"}).find("trace"), std::string::npos);
  // A disk-full episode is a trainer restart: it needs a kill, and the shim.
  EXPECT_NE(error_of({"--trace", "t", "--disk-full", "1", "--fault-shim", "s"}).find("disk_full"),
            std::string::npos);
  EXPECT_NE(
      error_of({"--trace", "t", "--trainer-kills", "1", "--disk-full", "1"}).find("fault_shim"),
      std::string::npos);
  EXPECT_NE(error_of({"--trace", "t", "--redis-kills", "-1"}).find("fault counts"),
            std::string::npos);
}

}  // namespace
}  // namespace spotlight::soak
