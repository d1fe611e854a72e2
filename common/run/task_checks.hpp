#pragma once
// What a seed task and its result may say in this run (issue #13.5): explorers check every task
// they lease against the run's limits before running it, and every result before recording it;
// the trainer checks every result it reads before using it. A separate step from decoding: a task
// or result can be well-formed msgpack and still be forged, wrong or poisoned.
//
//   if (auto why = run::task_problem(task, lease.task_id, limits)) fail(lease, *why);
//   const auto checked = run::check_result(bytes, run::expected_result(task_id, task));
//   if (!checked.result) quarantine(task_id, bytes, checked.problem);

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/config/config.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::run {

// The bounds of the tasks a run's planner enqueues (run configuration).
struct TaskLimits {
  std::string run_id;
  std::int64_t iterations = 1;             // iteration < iterations
  std::int64_t prompts_per_iteration = 1;  // prompt_index < prompts_per_iteration
  std::int64_t max_candidates = 1;         // the task id's candidate < max_candidates
  std::int64_t max_sampler_steps = 2;      // 2 <= sampler_steps <= max_sampler_steps
  std::uint64_t run_seed = 0;              // seed == candidate_seed(run_seed, iteration, prompt, c)
  // true: prompt_text must be a prompt of the embedded task; false (a prompt file's free text):
  // only non-empty, the caller checks that its policy holds the prompt.
  bool embedded_prompts = true;
};

// The most candidates the planner gives one prompt under exploration.allocation=adaptive, however
// large N x exploration.adaptive_cap is.
inline constexpr std::int64_t kMaxAdaptiveCandidates = 4096;

// From run.id, run.seed, trainer.iterations, trainer.prompts_per_iteration, the largest of
// exploration.candidates and planner.candidates (times exploration.adaptive_cap, at most
// kMaxAdaptiveCandidates, under adaptive allocation: the planner gives a prompt that is still all
// alike up to that many), the largest of sampler.steps, exploration.steps and planner.steps.
TaskLimits task_limits(const config::Config& config);

// std::nullopt when `task`, leased under `task_id`, is a task the run's planner could have made:
// the task id is "i<iteration>/p<prompt>/c<candidate>" and agrees with the fields, every field is
// within `limits`, the seed is the candidate's, the prompt is one of the embedded task (see
// TaskLimits::embedded_prompts). Else what is wrong, naming the field.
std::optional<std::string> task_problem(const wire::SeedTask& task, std::string_view task_id,
                                        const TaskLimits& limits);

// What a result of one task must say.
struct ExpectedResult {
  std::string task_id;
  std::string run_id;
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::uint64_t seed = 0;
};
ExpectedResult expected_result(std::string_view task_id, const wire::SeedTask& task);

// std::nullopt when `result` answers the expected task: same task id, run, iteration, prompt and
// seed; a finite reward; a finite, non-negative sample time; weights version in [0, iteration].
std::optional<std::string> result_problem(const wire::SeedResult& result,
                                          const ExpectedResult& expected);

struct CheckedResult {
  std::optional<wire::SeedResult> result;  // set when valid
  std::string problem;                     // else why (decoding or result_problem)
};
// Decodes `bytes` as a SeedResult and checks it; never throws for bad bytes.
CheckedResult check_result(std::string_view bytes, const ExpectedResult& expected);

}  // namespace spotlight::run
