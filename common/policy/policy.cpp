#include "common/policy/policy.hpp"

#include <torch/torch.h>

#include "common/model/autocast.hpp"
#include "common/model/safetensors.hpp"

namespace spotlight::policy {
namespace {

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  throw std::invalid_argument("policy: unknown dtype '" + name + "' (float32 or bfloat16)");
}

}  // namespace

std::optional<std::string> device_problem(const std::string& device) {
  std::optional<torch::Device> parsed;
  try {
    parsed = torch::Device(device);
  } catch (const std::exception&) {
    return "'" + device + "' is not a device (cpu, cuda or cuda:<index>)";
  }
  if (parsed->is_cpu()) return std::nullopt;
  if (!parsed->is_cuda()) return "'" + device + "' is not supported (cpu or cuda)";
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (count == 0) {
    return "'" + device + "' is a CUDA device, but " +
           (torch::cuda::is_available() ? std::string("none is visible")
                                        : std::string("this LibTorch has no CUDA support or this "
                                                      "machine no CUDA device"));
  }
  if (parsed->has_index() && parsed->index() >= count) {
    return "'" + device + "' does not exist: " + std::to_string(count) + " CUDA device" +
           (count == 1 ? "" : "s") + " visible (cuda:0" +
           (count > 1 ? "..cuda:" + std::to_string(count - 1) : std::string()) + ")";
  }
  return std::nullopt;
}

void check_device(const config::Config& config) {
  if (const auto problem = device_problem(config.get_string("model.device"))) {
    throw config::ConfigError("model.device", "config: 'model.device': " + *problem + " (in " +
                                                  config.origin("model.device") + ")");
  }
}

task::TaskOptions task_options_for(const model::MMDiTOptions& model, task::TaskOptions base) {
  base.image_size = static_cast<int>(model.image_size());
  return base;
}

Policy::Policy(const PolicyOptions& options, const task::TaskOptions& task) : options_(options) {
  auto model_options = model::mmdit_preset(options.preset);
  model_options.vocab_size(vocabulary_.size()).text_len(task::Vocabulary::kMaxPromptTokens);
  task_ = task_options_for(model_options, task);
  task_.validate();
  if (const auto problem = device_problem(options.device)) {
    throw std::invalid_argument("policy: device " + *problem);
  }
  torch::manual_seed(options.init_seed);
  model_ = model::MMDiT(model_options);
  model_->to(torch::Device(options.device), parse_dtype(options.dtype));
  const auto autocast = model::parse_autocast(options.autocast);
  if (autocast && parse_dtype(options.dtype) != at::kFloat) {
    throw std::invalid_argument("policy: autocast " + options.autocast +
                                " needs float32 parameters, not " + options.dtype);
  }
  model_->set_autocast(autocast);
}

at::TensorOptions Policy::tensor_options() const {
  return at::TensorOptions()
      .device(torch::Device(options_.device))
      .dtype(parse_dtype(options_.dtype));
}

at::Tensor Policy::tokens(const std::vector<task::Prompt>& prompts) const {
  const int len = static_cast<int>(model_->options().text_len());
  std::vector<int64_t> ids;
  ids.reserve(prompts.size() * len);
  for (const auto& p : prompts) {
    const auto row = vocabulary_.encode(p.text(), len);
    ids.insert(ids.end(), row.begin(), row.end());
  }
  return torch::tensor(ids, torch::kLong)
      .view({static_cast<int64_t>(prompts.size()), len})
      .to(torch::Device(options_.device));
}

at::Tensor Policy::images_to_latents(const std::vector<task::Image>& images) const {
  const int64_t size = model_->options().image_size();
  auto out = torch::empty({static_cast<int64_t>(images.size()), size, size, 3});
  float* data = out.data_ptr<float>();
  for (size_t i = 0; i < images.size(); ++i) {
    std::copy(images[i].rgb.begin(), images[i].rgb.end(), data + i * size * size * 3);
  }
  return (out.permute({0, 3, 1, 2}) * 2.0 - 1.0).contiguous().to(tensor_options());
}

std::vector<task::Image> Policy::latents_to_images(const at::Tensor& latents) const {
  const int size = static_cast<int>(model_->options().image_size());
  auto raw = sampler::to_images(latents);
  std::vector<task::Image> images;
  images.reserve(raw.size());
  for (auto& r : raw)
    images.push_back(task::Image{size, size, std::move(r)});
  return images;
}

std::vector<task::Image> Policy::final_images(
    const std::vector<sampler::Trajectory>& chunks) const {
  std::vector<task::Image> images;
  for (const auto& chunk : chunks) {
    auto part = latents_to_images(chunk.final());
    images.insert(images.end(), std::make_move_iterator(part.begin()),
                  std::make_move_iterator(part.end()));
  }
  return images;
}

std::vector<sampler::Trajectory> Policy::sample(const std::vector<task::Prompt>& prompts,
                                                const std::vector<uint64_t>& seeds,
                                                const sampler::SamplerOptions& options, int chunk) {
  if (prompts.size() != seeds.size()) throw std::invalid_argument("policy: one seed per prompt");
  std::vector<sampler::Trajectory> out;
  for (size_t begin = 0; begin < prompts.size(); begin += chunk) {
    const size_t end = std::min(prompts.size(), begin + chunk);
    std::vector<task::Prompt> p(prompts.begin() + begin, prompts.begin() + end);
    std::vector<uint64_t> s(seeds.begin() + begin, seeds.begin() + end);
    out.push_back(sampler::sample(model_, tokens(p), s, options));
  }
  return out;
}

std::string Policy::weights_bytes() const {
  auto state = model::module_state(*model_);
  state.metadata["preset"] = options_.preset;
  return model::encode_safetensors(state);
}

void Policy::load_weights_bytes(const std::string& bytes) {
  model::load_module_state(*model_, model::decode_safetensors(bytes));
}

void Policy::copy_weights_from(const Policy& other) {
  model::load_module_state(*model_, model::module_state(*other.model_));
}

}  // namespace spotlight::policy
