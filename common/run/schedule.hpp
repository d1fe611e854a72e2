#pragma once
// The run's schedule as pure functions of the run seed, shared by trainer and planner so both
// agree on what iteration k trains and explores without exchanging it: the prompts of an
// iteration, the candidate seeds of a prompt, and the task id of a seed task.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/task/prompt.hpp"
#include "common/task/prompt_source.hpp"

namespace spotlight::run {

// Prompt i of iteration k: source.sample(derive(run_seed, kPrompt, k, i)).
std::vector<task::Prompt> iteration_prompts(const task::PromptSource& source, uint64_t run_seed,
                                            int64_t iteration, int count);

// Candidate j of prompt i in iteration k. Candidates 0..G-1 are also the random seeds of
// exploration.mode=none, so the modes compare on the same seeds.
uint64_t candidate_seed(uint64_t run_seed, int64_t iteration, int prompt, int candidate);

// "i<iteration>/p<prompt>/c<candidate>"; parse returns nullopt for anything else.
std::string seed_task_id(int64_t iteration, int prompt, int candidate);
struct SeedTaskId {
  int64_t iteration;
  int prompt;
  int candidate;
};
std::optional<SeedTaskId> parse_seed_task_id(const std::string& id);

}  // namespace spotlight::run
