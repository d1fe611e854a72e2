#include "common/policy/policy.hpp"

#include <sstream>

#include <fnmatch.h>
#include <torch/torch.h>

#include "common/model/autocast.hpp"
#include "common/policy/prompt_embeddings.hpp"
#include "common/policy/torchscript_model.hpp"
#include "common/task/errors.hpp"
#include "common/task/prompt_file.hpp"
#include "common/task/vocabulary.hpp"

namespace spotlight::policy {
namespace {

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  throw std::invalid_argument("policy: unknown dtype '" + name + "' (float32 or bfloat16)");
}

// The built-in MMDiT, conditioned on the embedded task's tokens.
class NativeModel final : public VelocityModel {
 public:
  NativeModel(model::MMDiT model, torch::Device device)
      : model_(std::move(model)), device_(device) {}

  at::Tensor tokens(const std::vector<task::Prompt>& prompts) const {
    const int len = static_cast<int>(model_->options().text_len());
    std::vector<int64_t> ids;
    ids.reserve(prompts.size() * len);
    for (const auto& p : prompts) {
      const auto row = vocabulary_.encode(p.text(), len);
      ids.insert(ids.end(), row.begin(), row.end());
    }
    return torch::tensor(ids, torch::kLong)
        .view({static_cast<int64_t>(prompts.size()), len})
        .to(device_);
  }

  sampler::Conditioning condition(const std::vector<task::Prompt>& prompts) override {
    auto [text, pooled] = model_->encode_text(tokens(prompts));
    return sampler::Conditioning{text, pooled};
  }
  bool accepts(const task::Prompt& prompt) const override {
    return prompt.category != task::Category::kFreeText;
  }
  at::Tensor velocity(const at::Tensor& x, const at::Tensor& t,
                      const sampler::Conditioning& c) override {
    return model_->forward_encoded(x, t, c.text, c.pooled);
  }
  NamedTensors named_parameters() override {
    NamedTensors out;
    for (const auto& item : model_->named_parameters(true))
      out.emplace_back(item.key(), item.value());
    return out;
  }
  NamedTensors named_buffers() override {
    NamedTensors out;
    for (const auto& item : model_->named_buffers(true))
      out.emplace_back(item.key(), item.value());
    return out;
  }
  void set_training(bool training) override { model_->train(training); }
  std::vector<int64_t> sample_shape() const override {
    const auto& m = model_->options();
    return {m.channels(), m.image_size(), m.image_size()};
  }

 private:
  model::MMDiT model_;
  task::Vocabulary vocabulary_;
  torch::Device device_;
};

bool matches(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& pattern : patterns) {
    if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
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

Policy::Policy(const PolicyOptions& options, const task::TaskOptions& task)
    : options_(options), task_(task) {
  const auto dtype = parse_dtype(options.dtype);
  if (const auto problem = device_problem(options.device)) {
    throw std::invalid_argument("policy: device " + *problem);
  }
  if (options.reward_input != "images" && options.reward_input != "latents") {
    throw std::invalid_argument("policy: reward_input must be images or latents, got '" +
                                options.reward_input + "'");
  }
  const auto autocast = model::parse_autocast(options.autocast);
  if (autocast && dtype != at::kFloat) {
    throw std::invalid_argument("policy: autocast " + options.autocast +
                                " needs float32 parameters, not " + options.dtype);
  }
  if (autocast && options.kind != "native") {
    throw std::invalid_argument("policy: autocast " + options.autocast +
                                " applies to the native model only, not to model.kind " +
                                options.kind);
  }
  if (options.kind == "native") {
    auto model_options = model::mmdit_preset(options.preset);
    model_options.vocab_size(task::Vocabulary().size())
        .text_len(task::Vocabulary::kMaxPromptTokens);
    task_ = task_options_for(model_options, task);
    task_.validate();
    torch::manual_seed(options.init_seed);
    model_ = model::MMDiT(model_options);
    model_->to(torch::Device(options.device), dtype);
    model_->set_autocast(autocast);
    velocity_model_ = std::make_unique<NativeModel>(model_, torch::Device(options.device));
  } else if (options.kind == "torchscript") {
    if (options.path.empty()) throw PolicyError("model.kind torchscript needs model.path");
    if (options.latent_channels < 1 || options.latent_size < 1) {
      throw PolicyError("model.latent_channels and model.latent_size must be >= 1");
    }
    std::shared_ptr<const PromptEmbeddings> embeddings;
    try {
      const auto prompts = task::PromptFile::load(options.prompts_file);
      embeddings = std::make_shared<const PromptEmbeddings>(
          PromptEmbeddings::load(options.embeddings_file, prompts));
    } catch (const task::TaskError& e) {
      throw PolicyError(e.what());
    }
    TorchScriptModelOptions o;
    o.path = options.path;
    o.sample_shape = {options.latent_channels, options.latent_size, options.latent_size};
    o.tensor_options = tensor_options();
    o.embeddings = std::move(embeddings);
    velocity_model_ = load_torchscript_model(o);
  } else {
    throw std::invalid_argument("policy: unknown model kind '" + options.kind +
                                "' (native or torchscript)");
  }
  if (options.reward_input == "images" && sample_shape()[0] != 3) {
    throw PolicyError("reward.input images needs 3 latent channels (RGB), the model has " +
                      std::to_string(sample_shape()[0]) + ": send latents instead");
  }
  std::string examples;
  for (auto& [name, tensor] : velocity_model_->named_parameters()) {
    if (matches(options.trainable, name)) {
      trainable_.push_back(tensor);
      trainable_names_.push_back(name);
      tensor.set_requires_grad(true);
    } else {
      tensor.set_requires_grad(false);
    }
    if (examples.size() < 120) examples += (examples.empty() ? "'" : ", '") + name + "'";
  }
  if (trainable_.empty()) {
    std::string patterns;
    for (const auto& p : options.trainable)
      patterns += (patterns.empty() ? "" : ", ") + p;
    throw PolicyError("trainer.trainable [" + patterns +
                      "] matches no parameter of the model (named like " + examples + ")");
  }
}

Policy::~Policy() = default;
Policy::Policy(Policy&&) noexcept = default;
Policy& Policy::operator=(Policy&&) noexcept = default;

at::TensorOptions Policy::tensor_options() const {
  return at::TensorOptions()
      .device(torch::Device(options_.device))
      .dtype(parse_dtype(options_.dtype));
}

sampler::Conditioning Policy::condition(const std::vector<task::Prompt>& prompts) {
  return velocity_model_->condition(prompts);
}

bool Policy::accepts(const task::Prompt& prompt) const {
  return velocity_model_->accepts(prompt);
}

at::Tensor Policy::velocity(const at::Tensor& x, const at::Tensor& t,
                            const sampler::Conditioning& condition) {
  return velocity_model_->velocity(x, t, condition);
}

void Policy::set_training(bool training) {
  velocity_model_->set_training(training);
}

sampler::Stepper Policy::stepper(const std::vector<task::Prompt>& prompts,
                                 const std::vector<uint64_t>& seeds,
                                 const sampler::SamplerOptions& o,
                                 const std::optional<sampler::ResumePoint>& start) {
  if (model_) return sampler::Stepper(model_, tokens(prompts), seeds, o, start);
  torch::NoGradGuard no_grad;
  VelocityModel* model = velocity_model_.get();
  sampler::StepperInput input{[model](const at::Tensor& x, const at::Tensor& t,
                                      const at::Tensor& text, const at::Tensor& pooled) {
                                return model->velocity(x, t, sampler::Conditioning{text, pooled});
                              },
                              condition(prompts), sample_shape(), tensor_options()};
  return sampler::Stepper(std::move(input), seeds, o, start);
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
    auto stepper = this->stepper(p, s, options);
    out.push_back(sampler::run_to_end(stepper, options.keep_trajectory));
  }
  return out;
}

std::vector<task::Image> Policy::reward_inputs(const at::Tensor& latents) const {
  const int height = static_cast<int>(latents.size(2));
  const int width = static_cast<int>(latents.size(3));
  std::vector<task::Image> out;
  out.reserve(latents.size(0));
  if (options_.reward_input == "images") {
    for (auto& rgb : sampler::to_images(latents))
      out.push_back(task::Image{width, height, std::move(rgb)});
    return out;
  }
  const int channels = static_cast<int>(latents.size(1));
  auto hwc = latents.detach().to(torch::kCPU, torch::kFloat).permute({0, 2, 3, 1}).contiguous();
  const int64_t per = static_cast<int64_t>(width) * height * channels;
  const float* data = hwc.data_ptr<float>();
  for (int64_t b = 0; b < hwc.size(0); ++b) {
    out.push_back(task::Image{width, height,
                              std::vector<float>(data + b * per, data + (b + 1) * per), channels});
  }
  return out;
}

std::vector<task::Image> Policy::final_reward_inputs(
    const std::vector<sampler::Trajectory>& chunks) const {
  std::vector<task::Image> out;
  for (const auto& chunk : chunks) {
    auto part = reward_inputs(chunk.final());
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

NamedTensors Policy::named_parameters() const {
  return velocity_model_->named_parameters();
}

model::TensorFile Policy::state() const {
  model::TensorFile file;
  for (auto& [name, tensor] : velocity_model_->named_parameters())
    file.tensors[name] = tensor.detach().to(torch::kCPU);
  for (auto& [name, tensor] : velocity_model_->named_buffers())
    file.tensors[name] = tensor.detach().to(torch::kCPU);
  file.metadata["kind"] = options_.kind;
  if (model_) file.metadata["preset"] = options_.preset;
  return file;
}

void Policy::load_state(const model::TensorFile& file) {
  torch::NoGradGuard no_grad;
  auto copy = [&](const std::string& name, at::Tensor& target) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw model::CheckpointError("checkpoint: tensor '" + name + "' missing");
    if (it->second.sizes() != target.sizes()) {
      std::ostringstream msg;
      msg << "checkpoint: tensor '" << name << "' has shape " << it->second.sizes()
          << ", the model expects " << target.sizes();
      throw model::CheckpointError(msg.str());
    }
    target.copy_(it->second);
  };
  for (auto& [name, tensor] : velocity_model_->named_parameters())
    copy(name, tensor);
  for (auto& [name, tensor] : velocity_model_->named_buffers())
    copy(name, tensor);
}

std::string Policy::weights_bytes() const {
  return model::encode_safetensors(state());
}

void Policy::load_weights_bytes(const std::string& bytes) {
  load_state(model::decode_safetensors(bytes));
}

void Policy::copy_weights_from(const Policy& other) {
  load_state(other.state());
}

void Policy::require_native(const char* what) const {
  if (!model_) {
    throw PolicyError(std::string("policy: ") + what + " needs model.kind native, not " +
                      options_.kind);
  }
}

model::MMDiT& Policy::model() {
  require_native("model()");
  return model_;
}

const model::MMDiTOptions& Policy::model_options() const {
  require_native("model_options()");
  return model_->options();
}

at::Tensor Policy::tokens(const std::vector<task::Prompt>& prompts) const {
  require_native("tokens()");
  return static_cast<const NativeModel&>(*velocity_model_).tokens(prompts);
}

at::Tensor Policy::images_to_latents(const std::vector<task::Image>& images) const {
  require_native("images_to_latents()");
  const int64_t size = model_->options().image_size();
  auto out = torch::empty({static_cast<int64_t>(images.size()), size, size, 3});
  float* data = out.data_ptr<float>();
  for (size_t i = 0; i < images.size(); ++i) {
    std::copy(images[i].rgb.begin(), images[i].rgb.end(), data + i * size * size * 3);
  }
  return (out.permute({0, 3, 1, 2}) * 2.0 - 1.0).contiguous().to(tensor_options());
}

std::vector<task::Image> Policy::latents_to_images(const at::Tensor& latents) const {
  require_native("latents_to_images()");
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

}  // namespace spotlight::policy
