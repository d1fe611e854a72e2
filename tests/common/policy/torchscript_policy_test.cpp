// A TorchScript policy (model.kind torchscript) against the built-in MMDiT it twins: the same
// function, the same seeded samples, the same gradients, checkpoints under the module's own
// names, trainable parameters by pattern, and clear errors for unusable files.
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/policy/policy.hpp"
#include "common/sampler/flow_step.hpp"
#include "tests/common/policy/twin.hpp"
#include "tests/support/process.hpp"

namespace spotlight {
namespace {

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

class TorchScriptPolicy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::make_temp_dir("spotlight-ts-policy"));
    twin_ = new testing::Twin(testing::make_twin("micro", *dir_, 6));
  }
  static void TearDownTestSuite() {
    delete twin_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::filesystem::path* dir_;
  static testing::Twin* twin_;
};
std::filesystem::path* TorchScriptPolicy::dir_ = nullptr;
testing::Twin* TorchScriptPolicy::twin_ = nullptr;

TEST_F(TorchScriptPolicy, ComputesTheNativeModelsVelocity) {
  torch::NoGradGuard no_grad;
  auto& t = *twin_;
  const auto shape = t.native->sample_shape();
  EXPECT_EQ(t.scripted->sample_shape(), shape);
  torch::manual_seed(3);
  auto x = torch::randn({6, shape[0], shape[1], shape[2]});
  auto time = torch::rand({6});
  const auto native = t.native->velocity(x, time, t.native->condition(t.prompts));
  const auto scripted = t.scripted->velocity(x, time, t.scripted->condition(t.free_prompts));
  EXPECT_LT(max_abs_diff(native, scripted), 1e-5);
  EXPECT_GT(native.abs().max().item<double>(), 0.0) << "a zero velocity would prove nothing";
}

TEST_F(TorchScriptPolicy, SamplesTheSameSeededTrajectories) {
  auto& t = *twin_;
  sampler::SamplerOptions sde;
  sde.steps = 4;
  sde.keep_trajectory = true;
  const std::vector<uint64_t> seeds{1, 2, 3, 4, 5, 6};
  const auto native = t.native->sample(t.prompts, seeds, sde, 3);
  const auto scripted = t.scripted->sample(t.free_prompts, seeds, sde, 3);
  ASSERT_EQ(native.size(), scripted.size());
  for (size_t c = 0; c < native.size(); ++c) {
    EXPECT_LT(max_abs_diff(native[c].latents, scripted[c].latents), 1e-4);
    EXPECT_LT(max_abs_diff(native[c].log_probs, scripted[c].log_probs), 1e-4);
  }
  // The initial latent is the seed's Philox noise in both.
  EXPECT_TRUE(torch::equal(native[0].latents.select(1, 0), scripted[0].latents.select(1, 0)));
}

TEST_F(TorchScriptPolicy, TrainsWithTheNativeGradients) {
  auto& t = *twin_;
  const auto shape = t.native->sample_shape();
  torch::manual_seed(5);
  auto x = torch::randn({3, shape[0], shape[1], shape[2]});
  auto time = torch::full({3}, 0.6);
  const std::vector<task::Prompt> native_prompts(t.prompts.begin(), t.prompts.begin() + 3);
  const std::vector<task::Prompt> free_prompts(t.free_prompts.begin(), t.free_prompts.begin() + 3);
  sampler::Conditioning native_condition;
  {
    torch::NoGradGuard no_grad;  // the twin's embeddings are constants
    native_condition = t.native->condition(native_prompts);
  }
  t.native->velocity(x, time, native_condition).square().mean().backward();
  t.scripted->velocity(x, time, t.scripted->condition(free_prompts)).square().mean().backward();
  std::map<std::string, at::Tensor> native_grads;
  for (auto& [name, p] : t.native->named_parameters())
    native_grads[name] = p.grad();
  int compared = 0;
  for (auto& [name, p] : t.scripted->named_parameters()) {
    // The last block's text-stream output is unused: no gradient in either.
    ASSERT_EQ(p.grad().defined(), native_grads.at(name).defined()) << name;
    if (!p.grad().defined()) continue;
    EXPECT_LT(max_abs_diff(p.grad(), native_grads.at(name)), 1e-5) << name;
    p.mutable_grad().reset();
    ++compared;
  }
  for (auto& [name, p] : t.native->named_parameters())
    p.mutable_grad().reset();
  EXPECT_GT(compared, 10);
}

TEST_F(TorchScriptPolicy, CheckpointsUnderTheModulesOwnNames) {
  auto& t = *twin_;
  std::set<std::string> native_names, scripted_names;
  for (const auto& [name, _] : t.native->state().tensors) {
    if (name.rfind("text_encoder.", 0) != 0) native_names.insert(name);
  }
  const auto state = t.scripted->state();
  for (const auto& [name, _] : state.tensors)
    scripted_names.insert(name);
  EXPECT_EQ(scripted_names, native_names);
  EXPECT_EQ(state.metadata.at("kind"), "torchscript");

  // Published bytes load into another policy of the same module and change its function.
  policy::PolicyOptions o = t.scripted->options();
  policy::Policy other(o);
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : other.named_parameters())
      p.add_(0.01);
  }
  torch::NoGradGuard no_grad;
  const auto shape = t.native->sample_shape();
  auto x = torch::randn({2, shape[0], shape[1], shape[2]});
  auto time = torch::full({2}, 0.3);
  const std::vector<task::Prompt> prompts(t.free_prompts.begin(), t.free_prompts.begin() + 2);
  const auto before = other.velocity(x, time, other.condition(prompts));
  other.load_weights_bytes(t.scripted->weights_bytes());
  const auto after = other.velocity(x, time, other.condition(prompts));
  const auto reference = t.scripted->velocity(x, time, t.scripted->condition(prompts));
  EXPECT_GT(max_abs_diff(before, reference), 1e-4);
  EXPECT_TRUE(torch::equal(after, reference));
}

TEST_F(TorchScriptPolicy, TrainsOnlyTheParametersMatchingTheTrainablePatterns) {
  policy::PolicyOptions o = twin_->scripted->options();
  o.trainable = {"*final_proj*", "blocks.1.image.qkv.weight"};
  policy::Policy p(o);
  EXPECT_EQ(p.trainable_names(),
            (std::vector<std::string>{"blocks.1.image.qkv.weight", "final_proj.weight",
                                      "final_proj.bias"}));
  for (auto& [name, tensor] : p.named_parameters()) {
    const auto names = p.trainable_names();
    EXPECT_EQ(tensor.requires_grad(), std::find(names.begin(), names.end(), name) != names.end())
        << name;
  }
  o.trainable = {"*lora*"};
  try {
    policy::Policy none(o);
    ADD_FAILURE() << "a pattern that matches nothing was accepted";
  } catch (const policy::PolicyError& e) {
    EXPECT_NE(std::string(e.what()).find("matches no parameter"), std::string::npos) << e.what();
  }
}

TEST_F(TorchScriptPolicy, RefusesUnusableFilesNamingThem) {
  const auto message = [](const policy::PolicyOptions& o) {
    try {
      policy::Policy p(o);
    } catch (const policy::PolicyError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const auto base = twin_->scripted->options();
  auto o = base;
  o.path = (*dir_ / "missing.pt").string();
  EXPECT_NE(message(o).find("missing.pt: not a loadable TorchScript module"), std::string::npos)
      << message(o);
  o = base;
  o.latent_channels = 4;
  o.reward_input = "latents";
  EXPECT_NE(message(o).find("model.latent_channels"), std::string::npos) << message(o);
  // Embeddings encoded for other prompts than the prompt file's.
  o = base;
  o.prompts_file = (*dir_ / "other.json").string();
  std::ofstream(o.prompts_file)
      << R"({"format":"spotlight-prompts","version":1,"train":["x"],"validation":[]})";
  EXPECT_NE(message(o).find("encoded for other prompts"), std::string::npos) << message(o);
  // A prompt without an embedding is refused before it reaches the module.
  EXPECT_FALSE(twin_->scripted->accepts(task::free_text_prompt("not in the file")));
  EXPECT_TRUE(twin_->scripted->accepts(twin_->free_prompts[0]));
  EXPECT_THROW(twin_->scripted->condition({task::free_text_prompt("not in the file")}),
               policy::PolicyError);
}

}  // namespace
}  // namespace spotlight
