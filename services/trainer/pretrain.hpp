#pragma once
// Pretraining of the base model: flow matching on rendered images of training prompts.
//   x_t = (1 - t) x_0 + t eps,  target v = eps - x_0,  loss = mean (v_pred - v)^2
// with t drawn logit-normally (SD3). Every batch is a pure function of (seed, step), so the
// same options on the same build reproduce the same weights.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/policy/policy.hpp"

namespace spotlight::trainer {

struct PretrainOptions {
  int steps = 600;
  int batch = 64;
  double lr = 1e-3;
  int warmup = 50;
  double weight_decay = 0.0;
  double grad_clip = 1.0;
  uint64_t seed = 1;
  double max_seconds = 0.0;  // stop early after this wall time (0: no limit)
  int log_every = 50;
  // Category mix of the pretraining data (single_object, two_object, counting, position, text);
  // empty: the policy's task options.
  std::vector<double> category_weights;
};

struct PretrainProgress {
  int step;
  double loss;  // mean over the last log_every steps
  double seconds;
};

struct PretrainReport {
  int steps = 0;
  double seconds = 0.0;
  double final_loss = 0.0;
};

PretrainReport pretrain(policy::Policy& policy, const PretrainOptions& options,
                        const std::function<void(const PretrainProgress&)>& on_progress = {});

}  // namespace spotlight::trainer
