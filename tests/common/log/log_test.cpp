#include "common/log/log.hpp"

#include <cstdlib>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace spotlight::log {
namespace {

struct Captured {
  Level level;
  std::string line;
};

// Installs a capturing sink and a known level for the duration of a test.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_level_ = level();
    previous_component_ = component();
    set_level(Level::kDebug);
    set_component("unit");
    set_thread_ids(false);
    previous_sink_ = set_sink([this](Level lvl, std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.push_back({lvl, std::string(line)});
    });
  }
  void TearDown() override {
    set_sink(previous_sink_);
    set_level(previous_level_);
    set_component(previous_component_);
    set_thread_ids(false);
  }
  std::vector<Captured> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  std::mutex mutex_;
  std::vector<Captured> lines_;
  Sink previous_sink_;
  Level previous_level_ = Level::kInfo;
  std::string previous_component_;
};

TEST(LogLevel, ParseAndPrint) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError, Level::kOff}) {
    ASSERT_EQ(parse_level(to_string(l)), l);
  }
  EXPECT_EQ(parse_level("WARNING"), Level::kWarn);
  EXPECT_EQ(parse_level("Error"), Level::kError);
  EXPECT_EQ(parse_level("verbose"), std::nullopt);
  EXPECT_EQ(parse_level(""), std::nullopt);
}

TEST_F(LogTest, LevelFiltersLowerLevels) {
  const Level levels[] = {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError};
  for (Level threshold : levels) {
    set_level(threshold);
    debug("d");
    info("i");
    warn("w");
    error("e");
    SPOTLIGHT_LOG(debug) << "D";
    SPOTLIGHT_LOG(info) << "I";
    SPOTLIGHT_LOG(warn) << "W";
    SPOTLIGHT_LOG(error) << "E";
  }
  set_level(Level::kOff);
  error("never");
  SPOTLIGHT_LOG(error) << "never";

  std::vector<int> per_level(4, 0);
  for (const auto& c : lines())
    ++per_level[static_cast<int>(c.level)];
  // With thresholds debug, info, warn, error: a level-L message passes L+1 thresholds, twice.
  EXPECT_EQ(per_level[0], 2);
  EXPECT_EQ(per_level[1], 4);
  EXPECT_EQ(per_level[2], 6);
  EXPECT_EQ(per_level[3], 8);
  for (const auto& c : lines())
    EXPECT_EQ(c.line.find("never"), std::string::npos);
}

TEST_F(LogTest, DisabledMacroDoesNotEvaluateOperands) {
  set_level(Level::kWarn);
  int evaluated = 0;
  auto side_effect = [&] { return ++evaluated; };
  SPOTLIGHT_LOG(info) << side_effect();
  EXPECT_EQ(evaluated, 0);
  SPOTLIGHT_LOG(warn) << side_effect();
  EXPECT_EQ(evaluated, 1);
  // The macro is one expression: it nests in an unbraced if/else.
  if (evaluated == 1)
    SPOTLIGHT_LOG(error) << "then";
  else
    SPOTLIGHT_LOG(error) << "else";
  ASSERT_EQ(lines().size(), 2u);
  EXPECT_NE(lines()[1].line.find("then"), std::string::npos);
}

TEST_F(LogTest, LinePrefixHasTimeLevelComponent) {
  set_component("trainer");
  info("lease {} reclaimed after {} ms", "t-1", 250);
  set_thread_ids(true);
  SPOTLIGHT_LOG(error) << "boom " << 3.5;
  auto got = lines();
  ASSERT_EQ(got.size(), 2u);
  const std::regex info_re(
      R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z INFO  trainer lease t-1 reclaimed after 250 ms$)");
  EXPECT_TRUE(std::regex_match(got[0].line, info_re)) << got[0].line;
  const std::regex error_re(R"(^\S+Z ERROR trainer \[tid \d+\] boom 3\.5$)");
  EXPECT_TRUE(std::regex_match(got[1].line, error_re)) << got[1].line;
}

TEST(LogFormat, PlaceholdersAndBraces) {
  EXPECT_EQ(format("a {} b {}", 1, "x"), "a 1 b x");
  EXPECT_EQ(format("{{}} {}", 7), "{} 7");
  EXPECT_EQ(format("plain"), "plain");
  EXPECT_EQ(format("{{"), "{");
  EXPECT_EQ(format("{} {}", std::string("s"), std::string_view("v")), "s v");
}

TEST(LogFormat, FormatSpecsAreFmts) {
  EXPECT_EQ(format("reward {:.3f}", 0.123456), "reward 0.123");
  EXPECT_EQ(format("[{:>6}] [{:<4}] [{:^5}]", 42, "ab", 'x'), "[    42] [ab  ] [  x  ]");
  EXPECT_EQ(format("{:08.2f} {:x} {:+d}", 3.14159, 255, 5), "00003.14 ff +5");
  EXPECT_EQ(format("{:.1f}%", 99.96), "100.0%");
}

struct Streamed {
  int id;
};
std::ostream& operator<<(std::ostream& out, const Streamed& s) {
  return out << "streamed#" << s.id;
}
enum class Colour { kRed };
std::ostream& operator<<(std::ostream& out, Colour) {
  return out << "red";
}

TEST(LogFormat, PlainPlaceholdersPrintAsOperatorShiftDid) {
  // Types fmt does not know go through operator<<, with width and alignment still applying.
  EXPECT_EQ(format("{} {}", Streamed{7}, Colour::kRed), "streamed#7 red");
  EXPECT_EQ(format("[{:>12}]", Streamed{7}), "[  streamed#7]");
  // A plain {} prints floating point and bools as before fmt (6 significant digits, 1/0).
  EXPECT_EQ(format("{} {} {}", 1.0 / 3, 2.5, 1e-7), "0.333333 2.5 1e-07");
  EXPECT_EQ(format("{} {}", true, false), "1 0");
}

TEST_F(LogTest, ConcurrentLinesStayWhole) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i)
        SPOTLIGHT_LOG(info) << "thread=" << t << " i=" << i;
    });
  }
  for (auto& th : threads)
    th.join();
  auto got = lines();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::set<std::string> seen;
  const std::regex re(R"(^\S+Z INFO  unit (thread=\d+ i=\d+)$)");
  for (const auto& c : got) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(c.line, m, re)) << c.line;
    seen.insert(m[1]);
  }
  EXPECT_EQ(seen.size(), got.size());
}

// The default sink and SPOTLIGHT_LOG_LEVEL are process-wide state read once, so these run in a
// fresh child process (gtest re-executes the binary for "threadsafe" death tests).
class LogEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  void TearDown() override { unsetenv(kLevelEnvVar); }
};

TEST_F(LogEnvTest, LevelComesFromEnvironment) {
  setenv(kLevelEnvVar, "warn", 1);
  EXPECT_EXIT(
      {
        set_component("explorer");
        std::exit(level() == Level::kWarn && !enabled(Level::kInfo) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(LogEnvTest, DefaultSinkWritesToStderr) {
  setenv(kLevelEnvVar, "ERROR", 1);
  EXPECT_EXIT(
      {
        set_component("explorer");
        error("shown {}", 42);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "Z ERROR explorer shown 42");
}

TEST_F(LogEnvTest, BadEnvironmentValueFallsBackToInfo) {
  setenv(kLevelEnvVar, "loud", 1);
  EXPECT_EXIT(std::exit(level() == Level::kInfo ? 0 : 1), ::testing::ExitedWithCode(0),
              "ignoring SPOTLIGHT_LOG_LEVEL='loud'");
}

}  // namespace
}  // namespace spotlight::log
