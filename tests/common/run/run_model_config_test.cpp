// The model, task and reward keys of a run fit together or stop the service at start, naming the
// key (bring your own model: model.kind torchscript with task.kind prompt_file).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "common/config/error.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "services/job/job_schema.hpp"

namespace spotlight::run {
namespace {

config::Config load(std::vector<std::string> overrides) {
  config::ConfigSources sources;
  sources.overrides = std::move(overrides);
  return config::Config::load(job::run_schema(), sources);
}

const std::vector<std::string> kByom{"model.kind=torchscript",
                                     "model.path=/models/m.pt",
                                     "task.kind=prompt_file",
                                     "task.prompts_file=/data/prompts.json",
                                     "task.embeddings_file=/data/embeddings.safetensors",
                                     "reward.endpoint=tcp://127.0.0.1:5557",
                                     "reward.input=latents",
                                     "trainer.trainable=[\"*lora*\"]"};

std::string failing_key(std::vector<std::string> overrides) {
  try {
    check_model_config(load(std::move(overrides)));
  } catch (const config::ConfigError& e) {
    return e.key();
  }
  return "";
}

std::vector<std::string> byom_with(const std::vector<std::string>& extra) {
  auto all = kByom;
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

TEST(RunModelConfig, TheEmbeddedDefaultAndACompleteTorchScriptRunPass) {
  EXPECT_EQ(failing_key({}), "");
  EXPECT_EQ(failing_key(kByom), "");
  const auto o = policy_options(load(kByom));
  EXPECT_EQ(o.kind, "torchscript");
  EXPECT_EQ(o.path, "/models/m.pt");
  EXPECT_EQ(o.trainable, std::vector<std::string>{"*lora*"});
  EXPECT_EQ(o.reward_input, "latents");
  EXPECT_EQ(o.embeddings_file, "/data/embeddings.safetensors");
}

TEST(RunModelConfig, MismatchedKeysNameTheKeyToFix) {
  EXPECT_EQ(failing_key(byom_with({"model.path="})), "model.path");
  EXPECT_EQ(failing_key(byom_with({"task.kind=embedded"})), "task.kind");
  EXPECT_EQ(failing_key({"task.kind=prompt_file"}), "task.kind");  // native + prompt file
  EXPECT_EQ(failing_key(byom_with({"task.embeddings_file="})), "task.embeddings_file");
  EXPECT_EQ(failing_key(byom_with({"reward.endpoint="})), "reward.endpoint");
  EXPECT_EQ(failing_key(byom_with({"explorer.sp.size=2"})), "explorer.sp.size");
  EXPECT_EQ(failing_key({"reward.input=latents"}), "reward.input");
  EXPECT_THROW(load({"model.kind=onnx"}), config::ConfigError);
}

TEST(RunModelConfig, PromptsComeFromThePromptFile) {
  const auto dir = std::filesystem::temp_directory_path() / "spotlight-run-prompts";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "prompts.json").string();
  std::ofstream(file) << R"({"format": "spotlight-prompts", "version": 1,
                             "train": ["a cat", "a dog", "a bird"], "validation": ["a fish"]})";
  const auto config = load(byom_with({"task.prompts_file=" + file}));
  const auto source = prompt_source(config);
  const auto prompts = iteration_prompts(*source, 0, 3, 8);
  ASSERT_EQ(prompts.size(), 8u);
  for (const auto& p : prompts) {
    EXPECT_EQ(p.category, task::Category::kFreeText);
    EXPECT_TRUE(p.text() == "a cat" || p.text() == "a dog" || p.text() == "a bird") << p.text();
  }
  // The same prompts for the same (seed, iteration), as planner and trainer must agree.
  EXPECT_EQ(iteration_prompts(*prompt_source(config), 0, 3, 8), prompts);
  EXPECT_EQ(source->validation(4).size(), 1u);
  try {
    prompt_source(load(byom_with({"task.prompts_file=" + (dir / "missing.json").string()})));
    ADD_FAILURE() << "a missing prompt file was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.key(), "task.prompts_file");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight::run
