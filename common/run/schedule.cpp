#include "common/run/schedule.hpp"

#include <cstdio>

#include "common/seeds/seeds.hpp"

namespace spotlight::run {

std::vector<task::Prompt> iteration_prompts(const task::PromptSource& source, uint64_t run_seed,
                                            int64_t iteration, int count) {
  std::vector<task::Prompt> prompts;
  for (int i = 0; i < count; ++i) {
    prompts.push_back(source.sample(seeds::derive(
        run_seed, {seeds::kPrompt, static_cast<uint64_t>(iteration), static_cast<uint64_t>(i)})));
  }
  return prompts;
}

uint64_t candidate_seed(uint64_t run_seed, int64_t iteration, int prompt, int candidate) {
  return seeds::derive(run_seed, {seeds::kCandidate, static_cast<uint64_t>(iteration),
                                  static_cast<uint64_t>(prompt), static_cast<uint64_t>(candidate)});
}

std::string seed_task_id(int64_t iteration, int prompt, int candidate) {
  return "i" + std::to_string(iteration) + "/p" + std::to_string(prompt) + "/c" +
         std::to_string(candidate);
}

std::optional<SeedTaskId> parse_seed_task_id(const std::string& id) {
  long long k = 0;
  int p = 0, c = 0, consumed = 0;
  if (std::sscanf(id.c_str(), "i%lld/p%d/c%d%n", &k, &p, &c, &consumed) != 3 ||
      consumed != static_cast<int>(id.size()) || k < 0 || p < 0 || c < 0) {
    return std::nullopt;
  }
  return SeedTaskId{k, p, c};
}

}  // namespace spotlight::run
