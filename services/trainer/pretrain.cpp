#include "services/trainer/pretrain.hpp"

#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "common/seeds/seeds.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "kernels/philox/noise.hpp"

namespace spotlight::trainer {

PretrainReport pretrain(policy::Policy& policy, const PretrainOptions& o,
                        const std::function<void(const PretrainProgress&)>& on_progress) {
  auto& model = policy.model();
  model->train();
  const auto& m = policy.model_options();
  auto task_options = policy.task_options();
  if (o.category_weights.size() == 5) {
    const auto& w = o.category_weights;
    task_options.weights = {w[0], w[1], w[2], w[3], w[4]};
  }
  task::PromptGenerator generator(task_options);
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  PretrainReport report;
  double loss_sum = 0.0;
  int loss_count = 0;
  for (int step = 0; step < o.steps; ++step) {
    std::vector<task::Prompt> prompts;
    std::vector<task::Image> images;
    std::vector<uint64_t> noise_seeds;
    for (int b = 0; b < o.batch; ++b) {
      const uint64_t s = seeds::derive(
          o.seed, {seeds::kPretrain, static_cast<uint64_t>(step), static_cast<uint64_t>(b)});
      prompts.push_back(generator.sample(s));
      images.push_back(task::render(prompts.back(), s ^ 0x5DEECE66Dull, policy.task_options()));
      noise_seeds.push_back(s);
    }
    auto x0 = policy.images_to_latents(images);
    auto eps = kernels::seeded_normal(
        noise_seeds, 0, {m.channels(), m.image_size(), m.image_size()}, policy.tensor_options());
    // logit-normal t, from the noise stream's step 1 (one value per sample)
    auto u = kernels::seeded_normal(noise_seeds, 1, {1}, policy.tensor_options()).view({-1});
    auto t = torch::sigmoid(u);
    auto tb = t.view({-1, 1, 1, 1});
    auto xt = (1 - tb) * x0 + tb * eps;
    auto target = eps - x0;
    const double lr = o.lr * std::min(1.0, (step + 1.0) / std::max(1, o.warmup)) * 0.5 *
                      (1.0 + std::cos(M_PI * step / o.steps));
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(xt, t, policy.tokens(prompts)), target);
    loss.backward();
    if (o.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), o.grad_clip);
    optimizer.step();
    loss_sum += loss.item<double>();
    ++loss_count;
    report.steps = step + 1;
    if (on_progress && (report.steps % o.log_every == 0 || report.steps == o.steps)) {
      on_progress({report.steps, loss_sum / loss_count, elapsed()});
      report.final_loss = loss_sum / loss_count;
      loss_sum = 0;
      loss_count = 0;
    }
    if (o.max_seconds > 0 && elapsed() > o.max_seconds) break;
  }
  if (loss_count > 0) report.final_loss = loss_sum / loss_count;
  report.seconds = elapsed();
  model->eval();
  return report;
}

}  // namespace spotlight::trainer
