// Signed seed tasks, the run's task limits and result checks (issue #13.5), as logic.

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "common/config/error.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_checks.hpp"
#include "common/run/task_signature.hpp"
#include "common/task/generator.hpp"

namespace spotlight::run {
namespace {

const TaskKey kKey("a test key of enough length");

TaskLimits limits() {
  TaskLimits l;
  l.run_id = "r";
  l.iterations = 10;
  l.prompts_per_iteration = 4;
  l.max_candidates = 8;
  l.max_sampler_steps = 10;
  l.run_seed = 5;
  return l;
}

// Candidate `c` of prompt 1 in iteration 3, as the planner makes it.
wire::SeedTask task(int c = 2) {
  wire::SeedTask t;
  t.run_id = "r";
  t.iteration = 3;
  t.prompt_index = 1;
  static const std::string prompt = task::PromptGenerator(task::TaskOptions{}).sample(1).text();
  t.prompt_text = prompt;
  t.seed = candidate_seed(5, 3, 1, c);
  t.weights_version = 2;
  t.sampler_steps = 10;
  return t;
}

TEST(TaskSignature, ASignedTaskVerifiesAndAnyChangeBreaksIt) {
  wire::SeedTask t = task();
  EXPECT_EQ(verify(t, kKey), TaskAuth::kUnsigned);
  sign(t, kKey);
  EXPECT_EQ(t.key_id, kKey.id());
  EXPECT_EQ(t.signature.size(), 32u);
  EXPECT_EQ(verify(t, kKey), TaskAuth::kOk);
  // Through the wire and back.
  EXPECT_EQ(verify(wire::SeedTask::decode(t.encode()), kKey), TaskAuth::kOk);
  for (auto change : std::vector<void (*)(wire::SeedTask&)>{
           [](wire::SeedTask& x) { x.sampler_steps = 3000; },
           [](wire::SeedTask& x) { x.seed ^= 1; },
           [](wire::SeedTask& x) { x.prompt_text += " "; },
           [](wire::SeedTask& x) { x.attempt = 1; },
           [](wire::SeedTask& x) { x.deadline_unix_ms = 1; },
       }) {
    wire::SeedTask forged = t;
    change(forged);
    EXPECT_EQ(verify(forged, kKey), TaskAuth::kBadSignature);
  }
  const TaskKey other("another key of enough length");
  EXPECT_NE(other.id(), kKey.id());
  EXPECT_EQ(verify(t, other), TaskAuth::kOtherKey);
  EXPECT_EQ(to_string(TaskAuth::kBadSignature), "bad_signature");
}

TEST(TaskSignature, KeysComeFromTheEnvironmentOrAreGenerated) {
  EXPECT_THROW(TaskKey("short"), std::invalid_argument);
  const TaskKey a = TaskKey::generate(), b = TaskKey::generate();
  EXPECT_NE(a.secret(), b.secret());
  EXPECT_EQ(a.id().size(), 16u);
  ::unsetenv(kTaskKeyEnvVar);
  EXPECT_FALSE(TaskKey::from_env().has_value());
  ::setenv(kTaskKeyEnvVar, "too short", 1);
  try {
    TaskKey::from_env();
    ADD_FAILURE() << "accepted a short key";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), kTaskKeyEnvVar);
    EXPECT_NE(std::string(e.what()).find(kTaskKeyEnvVar), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("too short"), std::string::npos);  // never the secret
  }
  ::setenv(kTaskKeyEnvVar, "a test key of enough length", 1);
  EXPECT_EQ(TaskKey::from_env()->id(), kKey.id());
  ::unsetenv(kTaskKeyEnvVar);
}

// Issue #13 (5): a well-formed task asking for 3000 sampler steps was run.
TEST(TaskLimits, TasksOutsideTheRunAreNamedByField) {
  EXPECT_EQ(task_problem(task(), seed_task_id(3, 1, 2), limits()), std::nullopt);
  struct Case {
    std::string id;
    void (*change)(wire::SeedTask&);
    std::string field;
  };
  const std::vector<Case> cases = {
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.sampler_steps = 3000; }, "sampler_steps"},
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.sampler_steps = 1; }, "sampler_steps"},
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.run_id = "x"; }, "run_id"},
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.seed = 1; }, "seed"},
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.weights_version = 4; }, "weights_version"},
      {seed_task_id(3, 1, 2), [](wire::SeedTask& t) { t.prompt_text = "a purple unicorn"; },
       "prompt_text"},
      {seed_task_id(3, 1, 9), [](wire::SeedTask&) {}, "candidate 9"},
      {seed_task_id(3, 2, 2), [](wire::SeedTask&) {}, "disagree"},
      {"free-form", [](wire::SeedTask&) {}, "task id"},
      {seed_task_id(30, 1, 2), [](wire::SeedTask& t) { t.iteration = 30; }, "iteration"},
      {seed_task_id(3, 7, 2), [](wire::SeedTask& t) { t.prompt_index = 7; }, "prompt_index"},
  };
  for (const auto& c : cases) {
    wire::SeedTask t = task();
    c.change(t);
    const auto problem = task_problem(t, c.id, limits());
    ASSERT_TRUE(problem.has_value()) << c.field;
    EXPECT_NE(problem->find(c.field), std::string::npos) << *problem;
  }
}

wire::SeedResult result_of(const wire::SeedTask& t, const std::string& id) {
  wire::SeedResult r;
  r.task_id = id;
  r.run_id = t.run_id;
  r.iteration = t.iteration;
  r.prompt_index = t.prompt_index;
  r.seed = t.seed;
  r.weights_version_used = 2;
  r.reward = 0.5;
  r.sample_seconds = 0.1;
  r.explorer_id = "e";
  return r;
}

// Issue #13 (5): one garbage value in the results stalled the trainer; results are now checked
// against their task before use.
TEST(ResultChecks, AResultMustAnswerItsTaskWithFiniteValues) {
  const wire::SeedTask t = task();
  const std::string id = seed_task_id(3, 1, 2);
  const ExpectedResult expected = expected_result(id, t);
  const wire::SeedResult good = result_of(t, id);
  const auto ok = check_result(good.encode(), expected);
  ASSERT_TRUE(ok.result.has_value()) << ok.problem;
  EXPECT_EQ(*ok.result, good);
  EXPECT_FALSE(check_result("garbage", expected).result.has_value());
  EXPECT_NE(check_result("garbage", expected).problem.find("wire:"), std::string::npos);
  const std::vector<std::pair<void (*)(wire::SeedResult&), std::string>> cases = {
      {[](wire::SeedResult& r) { r.task_id = "i3/p1/c3"; }, "task_id"},
      {[](wire::SeedResult& r) { r.run_id = "x"; }, "run_id"},
      {[](wire::SeedResult& r) { r.iteration = 2; }, "iteration"},
      {[](wire::SeedResult& r) { r.prompt_index = 0; }, "prompt_index"},
      {[](wire::SeedResult& r) { r.seed += 1; }, "seed"},
      {[](wire::SeedResult& r) { r.reward = std::nan(""); }, "reward"},
      {[](wire::SeedResult& r) { r.reward = std::numeric_limits<double>::infinity(); }, "reward"},
      {[](wire::SeedResult& r) { r.sample_seconds = -1; }, "sample_seconds"},
      {[](wire::SeedResult& r) { r.weights_version_used = 4; }, "weights_version_used"},
  };
  for (const auto& [change, field] : cases) {
    wire::SeedResult r = good;
    change(r);
    const auto checked = check_result(r.encode(), expected);
    EXPECT_FALSE(checked.result.has_value()) << field;
    EXPECT_NE(checked.problem.find(field), std::string::npos) << checked.problem;
  }
}

}  // namespace
}  // namespace spotlight::run
