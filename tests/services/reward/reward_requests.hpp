#pragma once
// Reward requests of rendered images for tests and benchmarks of the reward service.
// Header-only.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::testing {

// `count` ground-truth renders at 32x32 of 100 distinct training prompts, repeated.
inline wire::RewardRequest rendered_request(int count, const std::string& id) {
  const task::TaskOptions task;
  const task::PromptGenerator generator(task);
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
  for (int i = 0; i < std::min(count, 100); ++i) {
    const auto seed = static_cast<std::uint64_t>(i) + 1;
    prompts.push_back(generator.sample(seed));
    images.push_back(task::render(prompts.back(), seed, task));
  }
  wire::RewardRequest r;
  r.request_id = id;
  r.width = r.height = task.image_size;
  r.count = count;
  for (int i = 0; i < count; ++i) {
    const auto k = static_cast<std::size_t>(i % 100);
    r.prompts.push_back(prompts[k].text());
    r.images.insert(r.images.end(), images[k].rgb.begin(), images[k].rgb.end());
  }
  return r;
}

}  // namespace spotlight::testing
