#include "common/run/task_checks.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/run/exploration_config.hpp"
#include "common/run/schedule.hpp"
#include "common/task/prompt.hpp"
#include "common/wire/error.hpp"

namespace spotlight::run {
namespace {

std::int64_t largest(std::int64_t first, const std::vector<double>& more) {
  for (double v : more)
    first = std::max(first, static_cast<std::int64_t>(v));
  return first;
}

std::string outside(const char* field, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  return "field '" + std::string(field) + "': " + std::to_string(value) + " is not in [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

TaskLimits task_limits(const config::Config& c) {
  const ExplorationOptions exploration = exploration_options(c);
  TaskLimits l;
  l.run_id = c.get_string("run.id");
  l.iterations = c.get_int("trainer.iterations");
  l.prompts_per_iteration = c.get_int("trainer.prompts_per_iteration");
  l.max_candidates = largest(exploration.candidates, c.get_double_list("planner.candidates"));
  if (exploration.allocation == Allocation::kAdaptive) {
    l.max_candidates =
        std::min(l.max_candidates * std::int64_t{exploration.adaptive_cap}, kMaxAdaptiveCandidates);
  }
  l.max_sampler_steps =
      largest(std::max<std::int64_t>(c.get_int("sampler.steps"), exploration.steps),
              c.get_double_list("planner.steps"));
  l.run_seed = c.get<std::uint64_t>("run.seed");
  return l;
}

std::optional<std::string> task_problem(const wire::SeedTask& task, std::string_view task_id,
                                        const TaskLimits& limits) {
  if (task.run_id != limits.run_id) {
    return "field 'run_id': '" + task.run_id + "' is not this run ('" + limits.run_id + "')";
  }
  const auto id = parse_seed_task_id(std::string(task_id));
  if (!id)
    return "task id '" + std::string(task_id) + "' is not i<iteration>/p<prompt>/c<candidate>";
  if (id->iteration != task.iteration || id->prompt != task.prompt_index) {
    return "fields 'iteration'/'prompt_index' (" + std::to_string(task.iteration) + "/" +
           std::to_string(task.prompt_index) + ") disagree with the task id";
  }
  if (task.iteration < 0 || task.iteration >= limits.iterations) {
    return outside("iteration", task.iteration, 0, limits.iterations - 1);
  }
  if (task.prompt_index < 0 || task.prompt_index >= limits.prompts_per_iteration) {
    return outside("prompt_index", task.prompt_index, 0, limits.prompts_per_iteration - 1);
  }
  if (id->candidate >= limits.max_candidates) {
    return "task id '" + std::string(task_id) + "': candidate " + std::to_string(id->candidate) +
           " is not below the run's most candidates per prompt (" +
           std::to_string(limits.max_candidates) + ")";
  }
  if (task.sampler_steps < 2 || task.sampler_steps > limits.max_sampler_steps) {
    return outside("sampler_steps", task.sampler_steps, 2, limits.max_sampler_steps);
  }
  if (task.weights_version < 0 || task.weights_version > task.iteration) {
    return outside("weights_version", task.weights_version, 0, task.iteration);
  }
  if (task.seed != candidate_seed(limits.run_seed, task.iteration, id->prompt, id->candidate)) {
    return "field 'seed': not the seed of candidate " + std::to_string(id->candidate) +
           " of this run";
  }
  if (task.trajectory_end != 0 &&
      (task.trajectory_begin < 0 || task.trajectory_begin >= task.trajectory_end ||
       task.trajectory_end > task.sampler_steps)) {
    return "fields 'trajectory_begin'/'trajectory_end': [" + std::to_string(task.trajectory_begin) +
           ", " + std::to_string(task.trajectory_end) + ") is not a step range within [0, " +
           std::to_string(task.sampler_steps) + "]";
  }
  if (task.max_staleness < -1) {
    return "field 'max_staleness': " + std::to_string(task.max_staleness) + " < -1";
  }
  if (limits.embedded_prompts ? !task::parse_prompt(task.prompt_text) : task.prompt_text.empty()) {
    return "field 'prompt_text': '" + task.prompt_text.substr(0, 200) +
           "' is not a prompt of the task";
  }
  return std::nullopt;
}

ExpectedResult expected_result(std::string_view task_id, const wire::SeedTask& task) {
  return ExpectedResult{std::string(task_id), task.run_id, task.iteration, task.prompt_index,
                        task.seed};
}

std::optional<std::string> result_problem(const wire::SeedResult& r, const ExpectedResult& e) {
  if (r.task_id != e.task_id)
    return "field 'task_id': '" + r.task_id + "', expected '" + e.task_id + "'";
  if (r.run_id != e.run_id)
    return "field 'run_id': '" + r.run_id + "', expected '" + e.run_id + "'";
  if (r.iteration != e.iteration) {
    return "field 'iteration': " + std::to_string(r.iteration) + ", expected " +
           std::to_string(e.iteration);
  }
  if (r.prompt_index != e.prompt_index) {
    return "field 'prompt_index': " + std::to_string(r.prompt_index) + ", expected " +
           std::to_string(e.prompt_index);
  }
  if (r.seed != e.seed) return "field 'seed': not the task's seed";
  if (!std::isfinite(r.reward)) return "field 'reward': not finite";
  if (!std::isfinite(r.sample_seconds) || r.sample_seconds < 0) {
    return "field 'sample_seconds': not a finite, non-negative time";
  }
  if (r.weights_version_used < 0 || r.weights_version_used > e.iteration) {
    return outside("weights_version_used", r.weights_version_used, 0, e.iteration);
  }
  return std::nullopt;
}

CheckedResult check_result(std::string_view bytes, const ExpectedResult& expected) {
  CheckedResult out;
  wire::SeedResult r;
  try {
    r = wire::SeedResult::decode(bytes);
  } catch (const wire::WireError& e) {
    out.problem = e.what();
    return out;
  }
  if (auto problem = result_problem(r, expected)) {
    out.problem = "seed_result of '" + expected.task_id + "': " + *problem;
    return out;
  }
  out.result = std::move(r);
  return out;
}

}  // namespace spotlight::run
