#include "common/config/config.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/config/arguments.hpp"
#include "common/config/choice.hpp"
#include "common/config/command_line.hpp"
#include "common/config/env.hpp"
#include "tests/common/config/plain_dump_fixture.hpp"

namespace spotlight::config {
namespace {

namespace fs = std::filesystem;

Schema test_schema() {
  return Schema{
      Entry::real("trainer.lr", 1e-4, "Adam learning rate.").positive(),
      Entry::integer("trainer.batch_size", 8, "Prompts per step.").range(1, 4096),
      Entry::boolean("trainer.checkpoint.enabled", true, "Write checkpoints."),
      Entry::string("exploration.mode", "async", "Where seed exploration runs.")
          .one_of({"none", "sync", "async"}),
      Entry::integer("sampler.steps", 10, "SDE steps per sample.").range(1, 1000),
      Entry::string_list("reward.functions", {"geneval"}, "Reward functions to combine.")
          .one_of({"geneval", "ocr", "aesthetic"})
          .non_empty(),
      Entry::double_list("reward.weights", {1.0}, "Weight of each reward function.").range(0, 10),
      Entry::string("run.name", "default-run", "Human-readable run name."),
      Entry::integer("seed", 0, "Top-level key.")
          .check("must be even", [](const Value& v) { return std::get<std::int64_t>(v) % 2 == 0; }),
  };
}

// Runs `fn`, expects a ConfigError, returns it for inspection.
template <class Fn>
ConfigError expect_config_error(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("", "");
}

Config from_yaml(const std::string& yaml, std::vector<std::string> overrides = {}) {
  ConfigSources sources;
  sources.yaml = yaml;
  sources.overrides = std::move(overrides);
  return Config::load(test_schema(), sources);
}

Config from_set(std::vector<std::string> overrides) {
  ConfigSources sources;
  sources.overrides = std::move(overrides);
  return Config::load(test_schema(), sources);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "spotlight-config-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p) << text;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// --- layering ----------------------------------------------------------------------------------

TEST(Config, DefaultsWhenNothingIsGiven) {
  const Schema schema = test_schema();
  const Config cfg = Config::load(schema);
  for (const Entry& e : schema.entries()) {
    EXPECT_EQ(cfg.value(e.key()), e.default_value()) << e.key();
    EXPECT_EQ(cfg.origin(e.key()), "default");
  }
  EXPECT_DOUBLE_EQ(cfg.get<double>("trainer.lr"), 1e-4);
  EXPECT_EQ(cfg.get<std::int64_t>("trainer.batch_size"), 8);
  EXPECT_EQ(cfg.get<int>("sampler.steps"), 10);
  EXPECT_TRUE(cfg.get_bool("trainer.checkpoint.enabled"));
  EXPECT_EQ(cfg.get_string("exploration.mode"), "async");
  EXPECT_EQ(cfg.get_string_list("reward.functions"), std::vector<std::string>{"geneval"});
  EXPECT_EQ(cfg.get_double_list("reward.weights"), std::vector<double>{1.0});
}

TEST(Config, NestedYamlOverridesDefaults) {
  const Config cfg = from_yaml(
      "trainer:\n"
      "  lr: 0.001\n"
      "  checkpoint: {enabled: false}\n"
      "exploration:\n"
      "  mode: sync\n"
      "seed: 4\n");
  EXPECT_DOUBLE_EQ(cfg.get_double("trainer.lr"), 0.001);
  EXPECT_FALSE(cfg.get_bool("trainer.checkpoint.enabled"));
  EXPECT_EQ(cfg.get_string("exploration.mode"), "sync");
  EXPECT_EQ(cfg.get_int("seed"), 4);
  EXPECT_EQ(cfg.get_int("trainer.batch_size"), 8);  // untouched
  EXPECT_EQ(cfg.origin("trainer.lr"), "<yaml>:2");
  EXPECT_EQ(cfg.origin("trainer.batch_size"), "default");
}

TEST(Config, DottedKeysInYamlAreTheSameKeys) {
  const Config cfg = from_yaml("trainer.lr: 0.5\ntrainer:\n  batch_size: 3\n");
  EXPECT_DOUBLE_EQ(cfg.get_double("trainer.lr"), 0.5);
  EXPECT_EQ(cfg.get_int("trainer.batch_size"), 3);
}

TEST(Config, PrecedenceDefaultsFileYamlThenSetInOrder) {
  TempDir dir;
  const fs::path file = dir.write("run.yaml",
                                  "trainer:\n  lr: 0.1\n  batch_size: 16\nsampler:\n  steps: 20\n"
                                  "run:\n  name: from-file\n");
  ConfigSources sources;
  sources.file = file;
  sources.yaml = "trainer: {batch_size: 32}\nsampler: {steps: 30}\n";
  sources.overrides = {"sampler.steps=40", "sampler.steps=50", "run.name=from set = yes"};
  const Config cfg = Config::load(test_schema(), sources);
  EXPECT_DOUBLE_EQ(cfg.get_double("trainer.lr"), 0.1);      // file
  EXPECT_EQ(cfg.get_int("trainer.batch_size"), 32);         // yaml over file
  EXPECT_EQ(cfg.get_int("sampler.steps"), 50);              // last --set wins
  EXPECT_EQ(cfg.get_string("run.name"), "from set = yes");  // split at the first '='
  EXPECT_EQ(cfg.get_string("exploration.mode"), "async");   // default
  EXPECT_EQ(cfg.origin("trainer.lr"), file.string() + ":2");
  EXPECT_EQ(cfg.origin("sampler.steps"), "--set");
}

TEST(Config, ValidationSeesOnlyTheFinalValue) {
  // The file's value is out of range, but --set corrects it.
  const Config cfg = from_yaml("sampler: {steps: 0}\n", {"sampler.steps=5"});
  EXPECT_EQ(cfg.get_int("sampler.steps"), 5);
}

// --- unknown keys ------------------------------------------------------------------------------

TEST(Config, UnknownNestedKeyIsNamedWithFileAndLine) {
  TempDir dir;
  const fs::path file = dir.write("bad.yaml", "trainer:\n  batch_size: 4\n  lrr: 0.1\n");
  ConfigSources sources;
  sources.file = file;
  const ConfigError e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_EQ(e.key(), "trainer.lrr");
  EXPECT_TRUE(contains(e.what(), "config: unknown key 'trainer.lrr' (in " + file.string() + ":3)"))
      << e.what();
  EXPECT_TRUE(contains(e.what(), "did you mean 'trainer.lr'?")) << e.what();
}

TEST(Config, UnknownTopLevelKey) {
  const ConfigError e = expect_config_error([] { from_yaml("sampler: {steps: 3}\nbogus: 1\n"); });
  EXPECT_EQ(e.key(), "bogus");
  EXPECT_TRUE(contains(e.what(), "unknown key 'bogus' (in <yaml>:2)")) << e.what();
  EXPECT_FALSE(contains(e.what(), "did you mean")) << e.what();
}

TEST(Config, UnknownKeyDeepUnderASection) {
  const ConfigError e =
      expect_config_error([] { from_yaml("trainer:\n  checkpoint:\n    every: 3\n"); });
  EXPECT_EQ(e.key(), "trainer.checkpoint.every");
}

TEST(Config, UnknownKeyInSet) {
  const ConfigError e = expect_config_error([] { from_set({"trainer.lrr=1"}); });
  EXPECT_EQ(e.key(), "trainer.lrr");
  EXPECT_TRUE(contains(e.what(), "config: unknown key 'trainer.lrr' (in --set)")) << e.what();
}

TEST(Config, SectionsAndKeysAreNotInterchangeable) {
  ConfigError e = expect_config_error([] { from_yaml("trainer: 5\n"); });
  EXPECT_EQ(e.key(), "trainer");
  EXPECT_TRUE(contains(e.what(), "'trainer' is a section and must be a map, got '5'")) << e.what();

  e = expect_config_error([] { from_set({"trainer=5"}); });
  EXPECT_EQ(e.key(), "trainer");

  e = expect_config_error([] { from_yaml("trainer:\n  lr:\n    value: 1\n"); });
  EXPECT_EQ(e.key(), "trainer.lr");
  EXPECT_TRUE(contains(e.what(), "'trainer.lr' must be a number, got a map")) << e.what();

  // An empty section is fine.
  EXPECT_EQ(from_yaml("trainer:\n").get_int("trainer.batch_size"), 8);
}

TEST(Config, KeyGivenTwiceInOneDocument) {
  const ConfigError e =
      expect_config_error([] { from_yaml("trainer: {lr: 0.1}\ntrainer.lr: 0.2\n"); });
  EXPECT_EQ(e.key(), "trainer.lr");
  EXPECT_TRUE(contains(e.what(), "given twice")) << e.what();
}

// --- types and validation ------------------------------------------------------------------------

TEST(Config, TypeErrorsNameKeyAndValue) {
  struct Case {
    std::string yaml;
    std::string key;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"trainer: {lr: abc}", "trainer.lr", "config: 'trainer.lr' must be a number, got 'abc'"},
      {"trainer: {batch_size: 1.5}", "trainer.batch_size",
       "'trainer.batch_size' must be an integer, got '1.5'"},
      {"trainer: {batch_size: 99999999999999999999}", "trainer.batch_size", "must be an integer"},
      {"trainer: {checkpoint: {enabled: maybe}}", "trainer.checkpoint.enabled",
       "must be a boolean (true|false), got 'maybe'"},
      {"trainer: {lr: [1, 2]}", "trainer.lr", "must be a number, got a list"},
      {"trainer: {lr: }", "trainer.lr", "must be a number, got null"},
      {"trainer: {lr: .nan}", "trainer.lr", "must be a number"},
      {"trainer: {lr: 1e999}", "trainer.lr", "must be a number"},
      {"run: {name: [a]}", "run.name", "must be a string, got a list"},
      {"reward: {functions: ocr}", "reward.functions", "must be a list of strings, got 'ocr'"},
      {"reward: {weights: [1, x]}", "reward.weights",
       "must be a list of numbers, got 'x' at index 1"},
      {"reward: {weights: [[1]]}", "reward.weights", "got a list at index 0"},
  };
  for (const auto& c : cases) {
    const ConfigError e = expect_config_error([&] { from_yaml(c.yaml); });
    EXPECT_EQ(e.key(), c.key) << c.yaml;
    EXPECT_TRUE(contains(e.what(), c.message)) << c.yaml << " -> " << e.what();
  }
}

TEST(Config, TypeErrorsFromSet) {
  ConfigError e = expect_config_error([] { from_set({"trainer.lr=abc"}); });
  EXPECT_EQ(std::string(e.what()), "config: 'trainer.lr' must be a number, got 'abc' (in --set)");
  e = expect_config_error([] { from_set({"sampler.steps=ten"}); });
  EXPECT_EQ(e.key(), "sampler.steps");
  e = expect_config_error([] { from_set({"no-equals-sign"}); });
  EXPECT_TRUE(contains(e.what(), "must be KEY=VALUE")) << e.what();
}

TEST(Config, ScalarSpellings) {
  const Config cfg = from_set(
      {"trainer.lr=+2.5e-3", "trainer.batch_size=+7", "trainer.checkpoint.enabled=off", "seed=-2"});
  EXPECT_DOUBLE_EQ(cfg.get_double("trainer.lr"), 2.5e-3);
  EXPECT_EQ(cfg.get_int("trainer.batch_size"), 7);
  EXPECT_FALSE(cfg.get_bool("trainer.checkpoint.enabled"));
  EXPECT_EQ(cfg.get_int("seed"), -2);
  // An integer is a valid number.
  EXPECT_DOUBLE_EQ(from_set({"trainer.lr=1"}).get_double("trainer.lr"), 1.0);
  for (const char* yes : {"true", "True", "YES", "on", "1"}) {
    EXPECT_TRUE(from_set({std::string("trainer.checkpoint.enabled=") + yes})
                    .get_bool("trainer.checkpoint.enabled"))
        << yes;
  }
}

TEST(Config, RangeAndChoiceErrors) {
  ConfigError e = expect_config_error([] { from_yaml("exploration: {mode: fast}"); });
  EXPECT_EQ(e.key(), "exploration.mode");
  EXPECT_EQ(std::string(e.what()),
            "config: 'exploration.mode' must be one of none|sync|async, got 'fast' (in <yaml>:1)");

  e = expect_config_error([] { from_set({"sampler.steps=0"}); });
  EXPECT_EQ(e.key(), "sampler.steps");
  EXPECT_EQ(std::string(e.what()),
            "config: 'sampler.steps' must be in [1, 1000], got 0 (in --set)");
  EXPECT_NO_THROW(from_set({"sampler.steps=1"}));
  EXPECT_NO_THROW(from_set({"sampler.steps=1000"}));
  EXPECT_THROW(from_set({"sampler.steps=1001"}), ConfigError);

  e = expect_config_error([] { from_set({"trainer.lr=0"}); });
  EXPECT_TRUE(contains(e.what(), "'trainer.lr' must be > 0, got 0.0")) << e.what();

  e = expect_config_error([] { from_set({"seed=3"}); });
  EXPECT_EQ(std::string(e.what()), "config: 'seed' must be even, got 3 (in --set)");

  e = expect_config_error([] { from_set({"reward.functions=geneval,clip"}); });
  EXPECT_TRUE(contains(e.what(), "must be one of geneval|ocr|aesthetic, got ['geneval', 'clip']"))
      << e.what();
  e = expect_config_error([] { from_set({"reward.functions="}); });
  EXPECT_TRUE(contains(e.what(), "must not be empty")) << e.what();
  e = expect_config_error([] { from_set({"reward.weights=[0.5, 11]"}); });
  EXPECT_TRUE(contains(e.what(), "must be in [0, 10], got [0.5, 11.0]")) << e.what();
}

TEST(Config, ListValues) {
  Config cfg = from_yaml("reward:\n  functions: [geneval, ocr]\n  weights:\n    - 0.25\n    - 2\n");
  EXPECT_EQ(cfg.get_string_list("reward.functions"), (std::vector<std::string>{"geneval", "ocr"}));
  EXPECT_EQ(cfg.get_double_list("reward.weights"), (std::vector<double>{0.25, 2.0}));

  cfg = from_set({"reward.functions=ocr, aesthetic", "reward.weights=[3, 0.5, 1e-1]"});
  EXPECT_EQ(cfg.get_string_list("reward.functions"),
            (std::vector<std::string>{"ocr", "aesthetic"}));
  EXPECT_EQ(cfg.get_double_list("reward.weights"), (std::vector<double>{3, 0.5, 0.1}));

  cfg = from_set({"reward.weights=", "reward.functions=[ocr]"});
  EXPECT_TRUE(cfg.get_double_list("reward.weights").empty());
  EXPECT_EQ(cfg.get_string_list("reward.functions"), std::vector<std::string>{"ocr"});

  cfg = from_yaml("reward: {weights: []}");
  EXPECT_TRUE(cfg.get_double_list("reward.weights").empty());
}

TEST(Config, RequiredKeys) {
  Schema schema = test_schema();
  schema.add(Entry::string("run.id", "", "Run identifier.").required());
  ConfigError e = expect_config_error([&] { Config::load(schema); });
  EXPECT_EQ(e.key(), "run.id");
  EXPECT_TRUE(contains(e.what(), "'run.id' is required")) << e.what();
  ConfigSources sources;
  sources.overrides = {"run.id=r42"};
  EXPECT_EQ(Config::load(schema, sources).get_string("run.id"), "r42");
}

// --- files -------------------------------------------------------------------------------------

TEST(Config, UnreadableAndUnparsableFiles) {
  TempDir dir;
  ConfigSources sources;
  sources.file = dir.path() / "missing.yaml";
  ConfigError e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "cannot read config file '" + sources.file->string() + "'"))
      << e.what();

  // Not a regular file: refused before reading (a directory used to give the defaults silently,
  // /dev/zero to read until bad_alloc).
  sources.file = dir.path();
  e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "is not a regular file (a directory)")) << e.what();
  sources.file = "/dev/zero";
  e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "is not a regular file (a device")) << e.what();
  sources.file = dir.write("huge.yaml", "# " + std::string(kMaxConfigFileBytes, 'x') + "\n");
  e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "more than the limit of " + std::to_string(kMaxConfigFileBytes)))
      << e.what();
  EXPECT_LT(std::string(e.what()).size(), 300u) << "the error quotes the file";
  sources.file =
      dir.write("just-below.yaml", "# " + std::string(kMaxConfigFileBytes - 3, 'x') + "\n");
  EXPECT_EQ(Config::load(test_schema(), sources).get_int("sampler.steps"), 10);

  sources.file = dir.write("broken.yaml", "trainer:\n  lr: [1, 2\n");
  e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "cannot parse " + sources.file->string() + ":")) << e.what();

  sources.file = dir.write("list.yaml", "- a\n- b\n");
  e = expect_config_error([&] { Config::load(test_schema(), sources); });
  EXPECT_TRUE(contains(e.what(), "top level must be a map")) << e.what();

  sources.file = dir.write("empty.yaml", "");
  EXPECT_EQ(Config::load(test_schema(), sources).get_int("sampler.steps"), 10);
}

// --- access ------------------------------------------------------------------------------------

TEST(Config, AccessErrorsAreTyped) {
  const Config cfg = Config::load(test_schema());
  EXPECT_THROW(cfg.get<double>("trainer.lrr"), ConfigAccessError);
  EXPECT_THROW(cfg.get_int("trainer"), ConfigAccessError);  // a section, not a key
  EXPECT_THROW(cfg.get<std::int64_t>("trainer.lr"), ConfigAccessError);
  EXPECT_THROW(cfg.get<std::string>("sampler.steps"), ConfigAccessError);
  EXPECT_THROW(cfg.get<bool>("run.name"), ConfigAccessError);
  try {
    cfg.get_double("nope.key");
    FAIL();
  } catch (const ConfigAccessError& e) {
    EXPECT_EQ(e.key(), "nope.key");
  }
  const Config big = from_set({"seed=-4"});
  EXPECT_EQ(big.get<int>("seed"), -4);
  EXPECT_THROW(big.get<unsigned>("seed"), ConfigAccessError);
  EXPECT_THROW(from_set({"seed=100000"}).get<std::int8_t>("seed"), ConfigAccessError);
}

// --- dump ----------------------------------------------------------------------------------------

TEST(Config, DumpReloadsToTheSameValues) {
  const Config original = from_set({
      "trainer.lr=0.1",
      "run.name=tricky: 'quoted' \"double\" # not a comment\ttab",
      "reward.functions=[ocr, geneval]",
      "reward.weights=[0.1, 2, 3.25]",
      "trainer.checkpoint.enabled=false",
      "seed=-8",
  });
  const std::string dumped = original.dump();
  ConfigSources sources;
  sources.yaml = dumped;
  const Schema schema = test_schema();
  const Config reloaded = Config::load(schema, sources);
  for (const Entry& e : schema.entries()) {
    EXPECT_EQ(reloaded.value(e.key()), original.value(e.key())) << e.key() << "\n" << dumped;
  }
  EXPECT_TRUE(contains(dumped, "trainer:")) << dumped;
  EXPECT_TRUE(contains(dumped, "  lr: 0.1")) << dumped;

  for (const std::string name : {"", "true", "123", "- x", "a\nb", "ünïcödé", "{x: 1}"}) {
    const Config c = from_set({"run.name=" + name});
    ConfigSources again;
    again.yaml = c.dump();
    EXPECT_EQ(Config::load(test_schema(), again).get_string("run.name"), name) << c.dump();
  }
}

// --- schema ------------------------------------------------------------------------------------

// What a build without yaml-cpp writes as config.yaml (config_noyaml_test) reads back here.
TEST(Config, HandWrittenDumpOfTheNoYamlBuildLoads) {
  const Schema schema = test::every_type_schema();
  ConfigSources from_set;
  from_set.overrides = test::every_type_overrides();
  const Config expected = Config::load(schema, from_set);
  ConfigSources from_dump;
  from_dump.yaml = test::every_type_dump();
  const Config loaded = Config::load(schema, from_dump);
  for (const auto& entry : schema.entries()) {
    EXPECT_EQ(loaded.value(entry.key()), expected.value(entry.key())) << entry.key();
  }
}

TEST(Schema, HelpListsEveryKeyWithDefaultRulesAndDoc) {
  const Schema schema = test_schema();
  const std::string help = schema.help();
  for (const Entry& e : schema.entries()) {
    EXPECT_TRUE(contains(help, "  " + e.key() + " (")) << e.key();
    EXPECT_TRUE(contains(help, e.doc())) << e.key();
  }
  EXPECT_TRUE(contains(help, "exploration.mode (string) default: 'async'; one of none|sync|async"))
      << help;
  EXPECT_TRUE(contains(help, "sampler.steps (int) default: 10; in [1, 1000]")) << help;
  EXPECT_TRUE(contains(help, "seed (int) default: 0; must be even")) << help;
}

TEST(Schema, MistakesAreProgrammingErrors) {
  EXPECT_THROW(Schema({Entry::integer("a.b", 1, ""), Entry::integer("a.b", 2, "")}),
               std::invalid_argument);
  EXPECT_THROW(Schema({Entry::integer("a", 1, ""), Entry::integer("a.b", 2, "")}),
               std::invalid_argument);
  EXPECT_THROW(Schema({Entry::integer("a.b", 1, ""), Entry::integer("a", 2, "")}),
               std::invalid_argument);
  for (const char* bad : {"", "A.b", "a..b", ".a", "a.", "a-b", "a b"}) {
    EXPECT_THROW(Schema({Entry::integer(bad, 1, "")}), std::invalid_argument) << bad;
  }
  EXPECT_THROW(Schema({Entry::integer("a", 0, "").range(1, 2)}), std::invalid_argument);
  EXPECT_THROW(Entry::integer("a", 0, "").one_of({"x"}), std::invalid_argument);
  EXPECT_THROW(Entry::string("a", "", "").range(0, 1), std::invalid_argument);
  EXPECT_THROW(Entry::boolean("a", true, "").non_empty(), std::invalid_argument);
  EXPECT_THROW(Schema({Entry::real("a", 1.0 / 0.0, "")}), std::invalid_argument);
  // A required entry's default is not validated.
  EXPECT_NO_THROW(Schema({Entry::string("a", "", "").non_empty().required()}));
}

TEST(Schema, SchemasCompose) {
  Schema schema{Entry::string("redis.url", "tcp://127.0.0.1:6379", "Redis endpoint.")};
  schema.add(test_schema());
  EXPECT_NE(schema.find("redis.url"), nullptr);
  EXPECT_NE(schema.find("trainer.lr"), nullptr);
  EXPECT_EQ(schema.find("trainer"), nullptr);
  EXPECT_TRUE(schema.is_section("trainer"));
  EXPECT_TRUE(schema.is_section("trainer.checkpoint"));
  EXPECT_FALSE(schema.is_section("trainer.lr"));
  EXPECT_THROW(schema.add(test_schema()), std::invalid_argument);
}

// --- command line --------------------------------------------------------------------------------

CommandLine parse(std::vector<std::string> words) {
  std::vector<const char*> argv;
  for (const auto& w : words)
    argv.push_back(w.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(CommandLine, SubcommandConfigAndOverrides) {
  const CommandLine cmd = parse({"spotlight-trainer", "train", "--config", "/tmp/a.yaml", "--set",
                                 "trainer.lr=1e-4", "extra", "--set=sampler.steps=5"});
  EXPECT_EQ(cmd.program, "spotlight-trainer");
  EXPECT_EQ(cmd.args, (std::vector<std::string>{"train", "extra"}));
  ASSERT_TRUE(cmd.sources.file.has_value());
  EXPECT_EQ(*cmd.sources.file, fs::path("/tmp/a.yaml"));
  EXPECT_EQ(cmd.sources.overrides,
            (std::vector<std::string>{"trainer.lr=1e-4", "sampler.steps=5"}));
  EXPECT_FALSE(cmd.help);

  const CommandLine other = parse({"p", "--config=/x.yaml", "-h", "--", "--set", "-v"});
  EXPECT_EQ(*other.sources.file, fs::path("/x.yaml"));
  EXPECT_TRUE(other.help);
  EXPECT_EQ(other.args, (std::vector<std::string>{"--set", "-v"}));
  EXPECT_TRUE(parse({"p", "--help"}).help);
  EXPECT_TRUE(parse({"p"}).args.empty());
}

TEST(CommandLine, Mistakes) {
  EXPECT_THROW(parse({"p", "--verbose"}), ConfigError);
  EXPECT_THROW(parse({"p", "--set"}), ConfigError);
  EXPECT_THROW(parse({"p", "--config"}), ConfigError);
  EXPECT_THROW(parse({"p", "--set", "trainer.lr"}), ConfigError);
  EXPECT_THROW(parse({"p", "--config", "a", "--config", "b"}), ConfigError);
  const ConfigError e = expect_config_error([] { parse({"p", "--lr=3"}); });
  EXPECT_TRUE(contains(e.what(), "unknown option '--lr=3'")) << e.what();
}

TEST(CommandLine, FeedsConfigLoad) {
  TempDir dir;
  const fs::path file = dir.write("c.yaml", "sampler: {steps: 7}\nexploration: {mode: none}\n");
  const CommandLine cmd = parse({"p", "--config", file.string(), "--set", "exploration.mode=sync"});
  const Config cfg = Config::load(test_schema(), cmd.sources);
  EXPECT_EQ(cfg.get_int("sampler.steps"), 7);
  EXPECT_EQ(cfg.get_string("exploration.mode"), "sync");
}

TEST(LoadOrExit, HelpExitsZeroAndBadConfigExitsTwo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Schema schema = test_schema();
  const char* help_argv[] = {"prog", "--help"};
  EXPECT_EXIT(load_or_exit(schema, 2, help_argv, "usage: prog [--config FILE]"),
              ::testing::ExitedWithCode(0), "");
  const char* bad_argv[] = {"prog", "--set", "sampler.steps=0"};
  EXPECT_EXIT(load_or_exit(schema, 3, bad_argv, "usage"), ::testing::ExitedWithCode(2),
              "'sampler.steps' must be in \\[1, 1000\\]");
  const char* good_argv[] = {"prog", "serve", "--set", "sampler.steps=3"};
  CommandLine cmd;
  const Config cfg = load_or_exit(schema, 4, good_argv, "usage", &cmd);
  EXPECT_EQ(cfg.get_int("sampler.steps"), 3);
  EXPECT_EQ(cmd.args, std::vector<std::string>{"serve"});
}

// --- argument parser (the tools' command lines)
// ---------------------------------------------------

ArgumentParser tool_parser() {
  ArgumentParser p("usage: tool [options] FILE...");
  p.option("seeds", "N", "seeds", "3")
      .option("scale", "X", "time scale")
      .repeated("tag", "T", "a tag")
      .flag("loop", "wrap around");
  return p;
}

TEST(ArgumentParser, OptionsFlagsPositionalsAndTheRest) {
  const Arguments a =
      tool_parser().parse(std::vector<std::string>{"a.json", "--seeds", "5", "--tag=x", "b.json",
                                                   "--loop", "--tag", "y", "--", "cmd", "--seeds"});
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(a.rest(), (std::vector<std::string>{"cmd", "--seeds"}));
  EXPECT_EQ(a.integer("seeds"), 5);
  EXPECT_TRUE(a.given("seeds"));
  EXPECT_TRUE(a.flag("loop"));
  EXPECT_EQ(a.values("tag"), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(a.help());
  const Arguments defaults = tool_parser().parse(std::vector<std::string>{"-h"});
  EXPECT_TRUE(defaults.help());
  EXPECT_EQ(defaults.integer("seeds"), 3);  // the fallback
  EXPECT_FALSE(defaults.given("seeds"));
  EXPECT_FALSE(defaults.flag("loop"));
  EXPECT_EQ(defaults.value("scale"), std::nullopt);
  EXPECT_TRUE(defaults.values("tag").empty());
}

TEST(ArgumentParser, MistakesNameTheOption) {
  const auto error = [](std::vector<std::string> words) {
    return expect_config_error([&] {
      const Arguments a = tool_parser().parse(words);
      (void)a.integer("seeds");
      (void)a.real("scale");
    });
  };
  EXPECT_TRUE(contains(error({"--bogus"}).what(), "unknown option '--bogus'"));
  EXPECT_TRUE(contains(error({"-x"}).what(), "unknown option '-x'"));
  EXPECT_TRUE(contains(error({"--seeds"}).what(), "--seeds needs a value"));
  EXPECT_TRUE(contains(error({"--seeds", "1", "--seeds", "2"}).what(), "--seeds given twice"));
  EXPECT_TRUE(contains(error({"--loop=yes"}).what(), "--loop takes no value"));
  EXPECT_TRUE(contains(error({"--seeds", "five"}).what(), "--seeds: 'five' is not an integer"));
  EXPECT_TRUE(contains(error({"--scale", "1.5x"}).what(), "--scale: '1.5x' is not a number"));
  EXPECT_TRUE(contains(error({}).what(), "--scale is required"));
  // Asking for an option nobody declared is a programming error, not a user's.
  const Arguments a = tool_parser().parse(std::vector<std::string>{});
  EXPECT_THROW((void)a.value("undeclared"), std::logic_error);
}

TEST(ArgumentParser, HelpListsEveryOptionWithItsDefault) {
  const std::string help = tool_parser().help();
  EXPECT_TRUE(contains(help, "usage: tool [options] FILE..."));
  EXPECT_TRUE(contains(help, "--seeds N")) << help;
  EXPECT_TRUE(contains(help, "(default 3)")) << help;
  EXPECT_TRUE(contains(help, "--tag T")) << help;
  EXPECT_TRUE(contains(help, "(repeatable)")) << help;
  EXPECT_TRUE(contains(help, "--loop")) << help;
}

// --- env ---------------------------------------------------------------------------------------

TEST(Env, AbsentEmptyAndSet) {
  const char* name = "SPOTLIGHT_CONFIG_TEST_SECRET";
  unsetenv(name);
  EXPECT_EQ(env(name), std::nullopt);
  setenv(name, "", 1);
  EXPECT_EQ(env(name), std::optional<std::string>(""));
  setenv(name, "s3cret", 1);
  EXPECT_EQ(env(name), std::optional<std::string>("s3cret"));
  unsetenv(name);
  EXPECT_EQ(env(nullptr), std::nullopt);
}

enum class Mode { kNone, kSync, kAsync };
constexpr Choice<Mode> kModes[] = {
    {"none", Mode::kNone}, {"sync", Mode::kSync}, {"async", Mode::kAsync}};

TEST(Choice, ParsesEachNameToItsValueAndBack) {
  EXPECT_EQ(names(kModes), (std::vector<std::string>{"none", "sync", "async"}));
  EXPECT_EQ(allowed(kModes), "none|sync|async");
  for (const auto& c : kModes) {
    EXPECT_EQ(parse_choice(kModes, "exploration.mode", c.name), c.value);
    EXPECT_EQ(name_of(kModes, c.value), c.name);
  }
  EXPECT_EQ(get_choice(from_set({"exploration.mode=none"}), "exploration.mode", kModes),
            Mode::kNone);
  EXPECT_EQ(get_choice(from_yaml(""), "exploration.mode", kModes), Mode::kAsync);
}

TEST(Choice, AnOtherNameIsAnErrorListingTheAllowedOnes) {
  ConfigError e = expect_config_error([] { parse_choice(kModes, "exploration.mode", "Async"); });
  EXPECT_EQ(e.key(), "exploration.mode");
  EXPECT_EQ(std::string(e.what()),
            "config: 'exploration.mode' must be one of none|sync|async, got 'Async'");
  e = expect_config_error([] { parse_choice(kModes, "exploration.mode", "", "--set"); });
  EXPECT_EQ(std::string(e.what()),
            "config: 'exploration.mode' must be one of none|sync|async, got '' (in --set)");
}

// A schema whose names are fewer than the enum's table (a stale one_of) still fails with the
// table's names, not silently with a default.
TEST(Choice, ASchemaNameTheTableLacksIsAnError) {
  const Schema schema{Entry::string("exploration.mode", "sync", "").one_of({"sync", "fast"})};
  ConfigSources sources;
  sources.overrides = {"exploration.mode=fast"};
  const Config cfg = Config::load(schema, sources);
  ConfigError e = expect_config_error([&] { get_choice(cfg, "exploration.mode", kModes); });
  EXPECT_EQ(std::string(e.what()),
            "config: 'exploration.mode' must be one of none|sync|async, got 'fast' (in --set)");
}

}  // namespace
}  // namespace spotlight::config
