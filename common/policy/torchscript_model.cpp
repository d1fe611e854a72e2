#include "common/policy/torchscript_model.hpp"

#include <sstream>

#include <torch/script.h>
#include <torch/torch.h>

#include "common/policy/errors.hpp"

namespace spotlight::policy {
namespace {

std::string shape(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

class TorchScriptModel final : public VelocityModel {
 public:
  explicit TorchScriptModel(const TorchScriptModelOptions& o)
      : options_(o), origin_("model.path " + o.path.string()) {
    if (!options_.embeddings) throw PolicyError(origin_ + ": no prompt embeddings");
    if (options_.sample_shape.size() != 3)
      throw PolicyError(origin_ + ": sample shape not C, H, W");
    try {
      module_ = torch::jit::load(options_.path.string(), options_.tensor_options.device());
      module_.to(options_.tensor_options.dtype().toScalarType());
    } catch (const c10::Error& e) {
      throw PolicyError(origin_ + ": not a loadable TorchScript module (" +
                        e.what_without_backtrace() + ")");
    }
    module_.eval();
    check_signature();
  }

  sampler::Conditioning condition(const std::vector<task::Prompt>& prompts) override {
    return options_.embeddings->lookup(prompts, options_.tensor_options);
  }

  bool accepts(const task::Prompt& prompt) const override {
    return prompt.category == task::Category::kFreeText &&
           options_.embeddings->contains(prompt.free_text);
  }

  at::Tensor velocity(const at::Tensor& x, const at::Tensor& t,
                      const sampler::Conditioning& condition) override {
    torch::jit::IValue out;
    try {
      out = module_.forward({x, t, condition.text, condition.pooled});
    } catch (const c10::Error& e) {
      throw PolicyError(origin_ + ": forward failed: " + e.what_without_backtrace());
    } catch (const std::exception& e) {  // the interpreter's errors (with a TorchScript traceback)
      throw PolicyError(origin_ + ": forward failed: " + e.what());
    }
    if (!out.isTensor() || out.toTensor().sizes() != x.sizes()) {
      throw PolicyError(origin_ + ": forward must return a tensor of the latents' shape " +
                        shape(x) + (out.isTensor() ? ", got " + shape(out.toTensor()) : ""));
    }
    return out.toTensor();
  }

  NamedTensors named_parameters() override {
    NamedTensors out;
    for (const auto& p : module_.named_parameters(/*recurse=*/true))
      out.emplace_back(p.name, p.value);
    return out;
  }

  NamedTensors named_buffers() override {
    NamedTensors out;
    for (const auto& b : module_.named_buffers(/*recurse=*/true))
      out.emplace_back(b.name, b.value);
    return out;
  }

  void set_training(bool training) override { module_.train(training); }

  std::vector<int64_t> sample_shape() const override { return options_.sample_shape; }

 private:
  void check_signature() {
    torch::NoGradGuard no_grad;
    const auto& s = options_.sample_shape;
    const auto& e = *options_.embeddings;
    const auto& to = options_.tensor_options;
    auto x = torch::zeros({1, s[0], s[1], s[2]}, to);
    auto t = torch::full({1}, 0.5, to);
    sampler::Conditioning c{torch::zeros({1, e.text_length(), e.text_dim()}, to),
                            torch::zeros({1, e.pooled_dim()}, to)};
    try {
      velocity(x, t, c);
    } catch (const PolicyError& error) {
      throw PolicyError(std::string(error.what()) + " (checked with latents " + shape(x) +
                        ", timesteps [1], prompt_embeds " + shape(c.text) + ", pooled " +
                        shape(c.pooled) + "; see model.latent_channels, model.latent_size)");
    }
  }

  TorchScriptModelOptions options_;
  std::string origin_;
  torch::jit::script::Module module_;
};

}  // namespace

std::unique_ptr<VelocityModel> load_torchscript_model(const TorchScriptModelOptions& options) {
  return std::make_unique<TorchScriptModel>(options);
}

}  // namespace spotlight::policy
