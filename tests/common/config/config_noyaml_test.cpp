// spotlight_config built without yaml-cpp (as a core-only build on a machine without it):
// settings from --set alone, a clear error for files, and a dump() that yaml-cpp reads back
// (config_test checks that half with the same fixture).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/config/config.hpp"
#include "tests/common/config/plain_dump_fixture.hpp"

namespace spotlight::config {
namespace {

TEST(ConfigWithoutYaml, SettingsComeFromSet) {
  ConfigSources sources;
  sources.overrides = test::every_type_overrides();
  const Config c = Config::load(test::every_type_schema(), sources);
  EXPECT_EQ(c.get_int("a.count"), -3);
  EXPECT_EQ(c.get_double("a.rate"), 2.5e-05);
  EXPECT_TRUE(c.get_bool("a.on"));
  EXPECT_EQ(c.get_string("b.name"), R"(say "hi"\ there: #1)");
  EXPECT_EQ(c.get_string_list("b.names"), (std::vector<std::string>{"one", "two, three", ""}));
  EXPECT_EQ(c.get_double_list("b.weights"), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(c.origin("top"), "--set");
}

TEST(ConfigWithoutYaml, FlowListsAndTheirMistakes) {
  const auto list = [](const std::string& text) {
    ConfigSources sources;
    sources.overrides = {"b.names=" + text};
    return Config::load(test::every_type_schema(), sources).get_string_list("b.names");
  };
  EXPECT_EQ(list("[]"), std::vector<std::string>{});
  EXPECT_EQ(list("[ a ,b, ]"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(list(R"(["x]y", 'z'])"), (std::vector<std::string>{"x]y", "z"}));
  for (const std::string bad : {"[a, [b]]", "[a", "['a", "['a' b]"}) {
    EXPECT_THROW(list(bad), ConfigError) << bad;
  }
  ConfigSources numbers;
  numbers.overrides = {"b.weights=[1, x]"};
  EXPECT_THROW(Config::load(test::every_type_schema(), numbers), ConfigError);
}

TEST(ConfigWithoutYaml, FilesAreAClearError) {
  const auto path = std::filesystem::temp_directory_path() / "spotlight-noyaml-test.yaml";
  std::ofstream(path) << "top: 1\n";
  ConfigSources file;
  file.file = path;
  try {
    Config::load(test::every_type_schema(), file);
    ADD_FAILURE() << "a YAML file loaded without yaml-cpp";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no YAML support"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  ConfigSources text;
  text.yaml = "top: 1";
  EXPECT_THROW(Config::load(test::every_type_schema(), text), ConfigError);
}

TEST(ConfigWithoutYaml, DumpWritesYamlByHand) {
  ConfigSources sources;
  sources.overrides = test::every_type_overrides();
  EXPECT_EQ(Config::load(test::every_type_schema(), sources).dump(), test::every_type_dump());
  EXPECT_EQ(Config::load(Schema{}, {}).dump(), "{}\n");
}

}  // namespace
}  // namespace spotlight::config
