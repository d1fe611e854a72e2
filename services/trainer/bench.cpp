#include "services/trainer/bench.hpp"

#include <chrono>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "common/model/autocast.hpp"
#include "common/model/mmdit.hpp"
#include "common/model/safetensors.hpp"
#include "common/policy/policy.hpp"
#include "common/reward/reward_function.hpp"
#include "common/sampler/sampler.hpp"
#include "common/task/generator.hpp"
#include "common/task/vocabulary.hpp"
#include "services/trainer/seed_source.hpp"

namespace spotlight::trainer {
namespace {

using Clock = std::chrono::steady_clock;

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  throw std::invalid_argument("bench: unknown dtype '" + name + "' (float32 or bfloat16)");
}

// Seconds per call of `run`, over at least `min_seconds` and `min_reps` calls after one warm-up
// call; `sync` waits for queued device work before each clock reading.
template <class Run, class Sync>
double seconds_per_call(Run run, Sync sync, double min_seconds, int min_reps) {
  run();
  sync();
  int reps = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < min_seconds || reps < min_reps) {
    run();
    sync();
    ++reps;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / reps;
}

// The stand-in reward of the GRPO timing (bench.hpp): an image's mean brightness.
class BrightnessReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>& prompts,
                                    const std::vector<task::Image>& images) override {
    std::vector<reward::Scored> out;
    for (const auto& image : images) {
      double sum = 0;
      for (float v : image.rgb)
        sum += v;
      reward::Scored scored;
      scored.reward = image.rgb.empty() ? 0.0 : sum / static_cast<double>(image.rgb.size());
      out.push_back(std::move(scored));
    }
    return out;
  }
  std::string name() const override { return "brightness (bench stand-in)"; }
};

using Sync = std::function<void()>;

void time_matmul(const BenchOptions& o, const torch::Device& device, at::ScalarType matmul_dtype,
                 const Sync& sync, BenchReport& r) {
  r.matmul_dtype = matmul_dtype == at::kBFloat16 ? "bfloat16" : "float32";
  r.matmul_size = o.matmul_size > 0 ? o.matmul_size : (device.is_cuda() ? 8192 : 1024);
  const auto options = torch::TensorOptions().device(device).dtype(matmul_dtype);
  auto a = torch::randn({r.matmul_size, r.matmul_size}, options);
  auto b = torch::randn({r.matmul_size, r.matmul_size}, options);
  const double s = seconds_per_call([&] { torch::mm(a, b); }, sync, std::min(1.0, o.seconds), 3);
  r.matmul_tflops = 2.0 * r.matmul_size * r.matmul_size * r.matmul_size / s / 1e12;
}

// The model as the policy builds it (task vocabulary and prompt length), optionally narrower,
// shallower or on larger images than its preset (reshaped); its shape goes into the report.
struct BenchModel {
  model::MMDiTOptions options;
  bool reshaped = false;
};

BenchModel bench_model(const BenchOptions& o, BenchReport& r) {
  const task::Vocabulary vocabulary;
  const auto preset = model::mmdit_preset(o.policy.preset);
  auto m = preset;
  m.vocab_size(vocabulary.size()).text_len(task::Vocabulary::kMaxPromptTokens);
  r.preset = o.policy.preset;
  r.preset_depth = m.depth();
  if (o.hidden > 0 && o.hidden != m.hidden()) {
    const int64_t head_size = m.hidden() / m.heads();
    if (o.hidden % head_size != 0) {
      throw std::invalid_argument("bench: bench.hidden " + std::to_string(o.hidden) +
                                  " is not a multiple of the preset's head size " +
                                  std::to_string(head_size));
    }
    m.hidden(o.hidden).heads(o.hidden / head_size);
  }
  if (o.image_size > 0 && o.image_size != m.image_size()) {
    if (o.image_size % m.patch() != 0) {
      throw std::invalid_argument("bench: bench.image_size " + std::to_string(o.image_size) +
                                  " is not a multiple of the preset's patch " +
                                  std::to_string(m.patch()));
    }
    m.image_size(o.image_size);
  }
  r.preset_macs_per_sample = m.macs_per_sample();
  if (o.depth > 0 && o.depth != m.depth()) m.depth(o.depth);
  const bool reshaped = m.hidden() != preset.hidden() || m.depth() != r.preset_depth ||
                        m.image_size() != preset.image_size();
  if (reshaped && !o.base.empty()) {
    throw std::invalid_argument(
        "bench: model.base cannot load into a model resized by "
        "bench.hidden, bench.depth or bench.image_size");
  }
  r.hidden = m.hidden();
  r.heads = m.heads();
  r.depth = m.depth();
  r.image_tokens = m.tokens();
  r.text_tokens = m.text_len();
  r.macs_per_sample = m.macs_per_sample();
  return BenchModel{m, reshaped};
}

// One forward of a batch of validation prompts at t = 0.5, then (bench.sampler) whole samplings.
void time_forward_and_sampler(const BenchOptions& o, model::MMDiT& net,
                              const torch::TensorOptions& options, const Sync& sync,
                              BenchReport& r) {
  const auto& m = net->options();
  const task::Vocabulary vocabulary;
  r.batch = o.batch;
  const auto prompts = task::validation_prompts(task::TaskOptions{}, static_cast<int>(o.batch));
  std::vector<int64_t> ids;
  for (const auto& p : prompts) {
    const auto row = vocabulary.encode(p.text(), static_cast<int>(m.text_len()));
    ids.insert(ids.end(), row.begin(), row.end());
  }
  const auto tokens =
      torch::tensor(ids, torch::kLong).view({o.batch, m.text_len()}).to(options.device());
  const auto x = torch::randn({o.batch, m.channels(), m.image_size(), m.image_size()}, options);
  const auto t = torch::full({o.batch}, 0.5, options);
  r.forward_seconds = seconds_per_call([&] { net->forward(x, t, tokens); }, sync, o.seconds, 3);
  const double flops = 2.0 * static_cast<double>(r.macs_per_sample) * o.batch;
  r.forward_tflops = flops / r.forward_seconds / 1e12;
  r.forward_share_of_matmul = r.forward_tflops / r.matmul_tflops;
  r.preset_forward_seconds_per_sample =
      2.0 * static_cast<double>(r.preset_macs_per_sample) / (r.forward_tflops * 1e12);
  if (!o.sampler) return;
  std::vector<uint64_t> seeds(o.batch);
  std::iota(seeds.begin(), seeds.end(), 0);
  auto sampling = o.sampling;
  sampling.keep_trajectory = false;
  const double s =
      seconds_per_call([&] { sampler::sample(net, tokens, seeds, sampling); }, sync, o.seconds, 2);
  r.sampler_steps = sampling.steps;
  r.sampler_images_per_second = static_cast<double>(o.batch) / s;
  r.sampler_seconds_per_sample_step = s / (static_cast<double>(o.batch) * sampling.steps);
}

// Two GRPO iterations of the trainer.* settings with the stand-in reward; the second is reported.
void time_grpo(const BenchOptions& o, BenchReport& r) {
  policy::Policy policy(o.policy);
  if (!o.base.empty()) policy.load_state(model::load_safetensors(o.base));
  BrightnessReward stand_in;
  GrpoOptions g = o.grpo_options;
  g.mode = run::ExplorationMode::kNone;
  g.run_dir.clear();
  g.audit_every = 0;
  ExplorationOptions exploration;
  exploration.group_size = g.group_size;
  exploration.run_seed = g.seed;
  GrpoTrainer trainer(g, policy, stand_in, make_random_seed_source(exploration));
  trainer.run_iteration(0);  // warm-up: allocator, kernels' first launches
  const auto it = trainer.run_iteration(1);
  r.grpo = true;
  r.grpo_samples = g.prompts_per_iteration * g.group_size;
  r.grpo_steps = g.sampler.steps;
  r.grpo_optimizer_steps = it.optimizer_steps;
  r.grpo_rollout_seconds = it.rollout_seconds;
  r.grpo_reward_seconds = it.reward_seconds;
  r.grpo_train_seconds = it.train_seconds;
  r.grpo_iteration_seconds = it.iteration_seconds;
}

}  // namespace

BenchReport run_benchmark(const BenchOptions& o) {
  std::optional<torch::NoGradGuard> no_grad(std::in_place);  // until the GRPO timing
  const torch::Device device(o.policy.device);
  const auto dtype = parse_dtype(o.policy.dtype);
  const auto autocast = model::parse_autocast(o.policy.autocast);
  const Sync sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
  };
  BenchReport r;
  r.device = device.str();
  r.dtype = o.policy.dtype;
  r.autocast = o.policy.autocast;
  r.torch_version = TORCH_VERSION;
  r.threads = torch::get_num_threads();
  // Peak: matrix products in the dtype the forward's products run in.
  time_matmul(o, device, autocast ? *autocast : dtype, sync, r);
  const BenchModel shape = bench_model(o, r);
  torch::manual_seed(o.policy.init_seed);
  model::MMDiT net(shape.options);
  net->to(device, dtype);
  net->set_autocast(autocast);
  net->eval();
  if (!o.base.empty()) model::load_module_state(*net, model::load_safetensors(o.base));
  time_forward_and_sampler(o, net, torch::TensorOptions().device(device).dtype(dtype), sync, r);
  if (o.grpo) {
    if (shape.reshaped) {
      throw std::invalid_argument(
          "bench: bench.grpo times the preset as it is, without "
          "bench.hidden, bench.depth or bench.image_size");
    }
    no_grad.reset();  // the update needs gradients
    time_grpo(o, r);
  }
  return r;
}

std::string to_json(const BenchReport& r) {
  nlohmann::json j{
      {"device", r.device},
      {"dtype", r.dtype},
      {"autocast", r.autocast},
      {"torch_version", r.torch_version},
      {"threads", r.threads},
      {"matmul", {{"dtype", r.matmul_dtype}, {"n", r.matmul_size}, {"tflops", r.matmul_tflops}}},
      {"model",
       {{"preset", r.preset},
        {"hidden", r.hidden},
        {"heads", r.heads},
        {"depth", r.depth},
        {"preset_depth", r.preset_depth},
        {"image_tokens", r.image_tokens},
        {"text_tokens", r.text_tokens},
        {"macs_per_sample", r.macs_per_sample},
        {"preset_macs_per_sample", r.preset_macs_per_sample}}},
      {"forward",
       {{"batch", r.batch},
        {"seconds", r.forward_seconds},
        {"tflops", r.forward_tflops},
        {"share_of_matmul", r.forward_share_of_matmul},
        {"preset_seconds_per_sample", r.preset_forward_seconds_per_sample}}}};
  if (r.grpo) {
    j["grpo"] = {{"samples", r.grpo_samples},
                 {"sampler_steps", r.grpo_steps},
                 {"reward", "brightness stand-in"},
                 {"optimizer_steps", r.grpo_optimizer_steps},
                 {"rollout_seconds", r.grpo_rollout_seconds},
                 {"reward_seconds", r.grpo_reward_seconds},
                 {"train_seconds", r.grpo_train_seconds},
                 {"iteration_seconds", r.grpo_iteration_seconds}};
  }
  if (r.sampler_steps > 0) {
    j["sampler"] = {{"batch", r.batch},
                    {"steps", r.sampler_steps},
                    {"images_per_second", r.sampler_images_per_second},
                    {"seconds_per_sample_step", r.sampler_seconds_per_sample_step}};
  }
  return j.dump(2);
}

}  // namespace spotlight::trainer
