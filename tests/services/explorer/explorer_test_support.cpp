#include "tests/services/explorer/explorer_test_support.hpp"

#include <algorithm>

#include <torch/torch.h>

#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/task/generator.hpp"

namespace spotlight::explorer::testing {

std::unique_ptr<policy::Policy> micro_policy(std::uint64_t seed, double perturbation) {
  auto policy =
      std::make_unique<policy::Policy>(policy::PolicyOptions{"micro", "cpu", "float32", 1});
  if (perturbation > 0) {
    torch::manual_seed(seed);
    torch::NoGradGuard no_grad;
    for (auto& w : policy->model()->parameters())
      w.add_(torch::randn_like(w) * perturbation);
  }
  return policy;
}

std::vector<reward::Scored> DenseReward::score(const std::vector<task::Prompt>&,
                                               const std::vector<task::Image>& images) {
  std::vector<reward::Scored> out;
  for (const auto& image : images) {
    double sum = 0;
    for (std::size_t i = 0; i < image.rgb.size(); i += 3)
      sum += std::clamp(static_cast<double>(image.rgb[i]), 0.0, 1.0);
    out.push_back({sum / static_cast<double>(image.rgb.size() / 3), false});
  }
  return out;
}

std::vector<TaskSpec> seed_tasks(const std::string& run_id, std::int64_t iteration, int prompts,
                                 int candidates, std::int64_t weights_version, int steps) {
  task::TaskOptions options;
  options.image_size = 32;  // the micro preset's
  const auto texts =
      run::iteration_prompts(task::PromptGenerator(options), kRunSeed, iteration, prompts);
  std::vector<TaskSpec> out;
  for (int i = 0; i < prompts; ++i) {
    for (int j = 0; j < candidates; ++j) {
      wire::SeedTask t;
      t.run_id = run_id;
      t.iteration = iteration;
      t.prompt_index = i;
      t.prompt_text = texts[static_cast<std::size_t>(i)].text();
      t.seed = run::candidate_seed(kRunSeed, iteration, i, j);
      t.weights_version = weights_version;
      t.sampler_steps = steps;
      t.deadline_unix_ms = 0;
      out.push_back({run::seed_task_id(iteration, i, j), t});
    }
  }
  return out;
}

run::TaskKey run_task_key(const redis::RedisOptions& redis, const std::string& run_id) {
  store::RedisKeyValueStore kv(redis, run::RunKeys(run_id).prefix);
  return run::planner_task_key(kv);
}

run::TaskLimits limits(const std::string& run_id) {
  run::TaskLimits l;
  l.run_id = run_id;
  l.iterations = 64;
  l.prompts_per_iteration = 64;
  l.max_candidates = 64;
  l.max_sampler_steps = 1000;
  l.run_seed = kRunSeed;
  return l;
}

std::int64_t enqueue(queue::LeaseQueue& queue, const std::vector<TaskSpec>& tasks,
                     const run::TaskKey& key) {
  std::vector<queue::Task> items;
  for (const auto& t : tasks) {
    wire::SeedTask signed_task = t.task;
    run::sign(signed_task, key);
    items.push_back({t.id, signed_task.encode()});
  }
  return queue.enqueue_many(items);
}

std::vector<double> reference_rewards(policy::Policy& policy, const std::vector<TaskSpec>& tasks,
                                      int chunk, reward::RewardFunction& reward,
                                      const sampler::SamplerOptions& sampler) {
  std::vector<task::Prompt> prompts;
  std::vector<std::uint64_t> seeds;
  for (const auto& t : tasks) {
    prompts.push_back(*task::parse_prompt(t.task.prompt_text));
    seeds.push_back(t.task.seed);
  }
  auto options = sampler;
  options.steps = static_cast<int>(tasks.front().task.sampler_steps);
  options.sde = true;
  options.keep_trajectory = false;
  std::vector<task::Image> images;
  for (const auto& trajectory : policy.sample(prompts, seeds, options, chunk)) {
    auto part = policy.latents_to_images(trajectory.final());
    images.insert(images.end(), part.begin(), part.end());
  }
  std::vector<double> out;
  for (const auto& s : reward.score(prompts, images))
    out.push_back(s.reward);
  return out;
}

}  // namespace spotlight::explorer::testing
