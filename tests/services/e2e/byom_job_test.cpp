// Bring your own model, end to end: Python (Debian's python3-torch) exports a small MMDiT-like
// transformer with LoRA adapters to TorchScript and encodes prompts with a random text encoder;
// the reference Python reward server scores the latents with a toy rule (channel-0 mean); the
// whole async system (redis-server, spotlight-planner, two spotlight-explorer, spotlight-trainer)
// post-trains only the adapters for a few iterations. Checks: the job finishes with every task
// accounted for, the validation reward rose, and Python loads the final checkpoint
// (load_state_dict, strict), finds every frozen parameter unchanged and some adapter changed,
// and reproduces the C++ forward of the trained module on fixed inputs to 1e-5.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/model/safetensors.hpp"
#include "common/policy/policy.hpp"
#include "common/queue/redis_lease_queue.hpp"
#include "common/run/run_config.hpp"
#include "common/run/schedule.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/policy/twin.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tools/cluster/cluster.hpp"

namespace spotlight {
namespace {

using namespace std::chrono_literals;

constexpr int kIterations = 6;

void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const auto& line : lines)
    out << line << "\n";
}

TEST(ByomJob, TrainsOnlyTheAdaptersOfATorchScriptModelScoredByAPythonRewardServer) {
  SPOTLIGHT_REQUIRE_REDIS_SERVER();
  const auto dir = testing::make_temp_dir("spotlight-byom");
  const auto tools = testing::source_path("tools");

  // 1. The user's side, in Python: the model and the prompts.
  testing::run_python({(tools / "byom/export_mmdit.py").string(),
                       "--out",
                       (dir / "model.pt").string(),
                       "--state-out",
                       (dir / "initial.safetensors").string(),
                       "--config-out",
                       (dir / "model.json").string(),
                       "--hidden",
                       "32",
                       "--depth",
                       "2",
                       "--heads",
                       "2",
                       "--channels",
                       "4",
                       "--latent-size",
                       "16",
                       "--patch",
                       "4",
                       "--context-dim",
                       "24",
                       "--pooled-dim",
                       "16",
                       "--lora-rank",
                       "4",
                       "--lora-alpha",
                       "4",
                       "--seed",
                       "0"},
                      dir / "export.log");
  write_lines(dir / "train.txt",
              {"a cat on a sofa", "a red bicycle", "a lighthouse at dusk", "two dogs playing",
               "a bowl of fruit", "a city street at night", "a mountain lake", "an old clock"});
  write_lines(dir / "validation.txt",
              {"a green apple", "a sailing boat", "a snowy forest", "a cup of tea"});
  testing::run_python(
      {(tools / "encode_prompts.py").string(), "--train", (dir / "train.txt").string(),
       "--validation", (dir / "validation.txt").string(), "--random-encoder", "8,24,16",
       "--out-prompts", (dir / "prompts.json").string(), "--out-embeddings",
       (dir / "embeddings.safetensors").string()},
      dir / "encode.log");

  // 2. The system.
  const std::string run_id = "byom";
  cluster::ClusterOptions o;  // the local cluster (tools/cluster) with the Python reward server
  o.bin_dir = testing::binary_path("services");
  o.redis_server = *testing::RedisServer::find_executable();
  o.redis_appendfsync = "always";
  o.explorers = 2;
  o.reward_command = {testing::python().string(),
                      (tools / "reward_server/spotlight_reward.py").string(), "--score",
                      (tools / "reward_server/toy_latent_reward.py").string() + ":score", "--bind",
                      "{endpoint}", "--content", "latents", "--channels", "4",
                      // The channel-0 mean of latents: far inside; 1e30 would not be.
                      "--range", "-1000", "1000"};
  o.run.overrides = {
      "run.id=" + run_id,
      "run.dir=" + (dir / "run").string(),
      "run.seed=1",
      "reward.input=latents",
      "model.kind=torchscript",
      "model.path=" + (dir / "model.pt").string(),
      "model.latent_channels=4",
      "model.latent_size=16",
      "task.kind=prompt_file",
      "task.prompts_file=" + (dir / "prompts.json").string(),
      "task.embeddings_file=" + (dir / "embeddings.safetensors").string(),
      "trainer.trainable=[\"*lora*\"]",
      "trainer.lr=0.03",  // LoRA only: a few Adam steps must move the rule
      "trainer.clip_range=0.2",
      "exploration.mode=async",
      "exploration.candidates=6",
      "exploration.max_wait_seconds=120",
      "trainer.iterations=" + std::to_string(kIterations),
      "trainer.prompts_per_iteration=4",
      "trainer.group_size=4",
      "trainer.micro_batch=16",
      "trainer.micro_batches_per_update=1",
      "sampler.steps=6",
      "validation.prompts=4",
      "validation.steps=6",
      "validation.every=" + std::to_string(kIterations),
      "audit.every=3",
      "audit.prompts=1",
      "run.threads=1",
      "explorer.batch=6",
      "explorer.heartbeat_ms=200",
      "planner.poll_ms=50",
  };
  cluster::Cluster cluster(o);
  cluster.start();
  const auto trainer_status = cluster.process("trainer")->wait_for(600s);
  ASSERT_TRUE(trainer_status.has_value()) << "trainer did not finish\n"
                                          << cluster.log_tail("trainer");
  ASSERT_TRUE(trainer_status->success())
      << trainer_status->describe() << "\n"
      << cluster.log_tail("trainer") << cluster.log_tail("reward");
  for (const char* name : {"planner", "explorer-1", "explorer-2"}) {
    const auto status = cluster.process(name)->wait_for(60s);
    ASSERT_TRUE(status.has_value()) << "still running after the trainer finished\n"
                                    << cluster.log_tail(name);
    EXPECT_TRUE(status->success()) << status->describe() << "\n" << cluster.log_tail(name);
  }
  const auto reward = cluster.process("reward")->terminate(30s);
  EXPECT_TRUE(reward.status.success() && !reward.escalated) << cluster.log_tail("reward");

  redis::RedisOptions redis_options;
  redis_options.port = cluster.redis_port();
  queue::LeaseQueueOptions queue_options;
  queue_options.key_prefix = run::RunKeys(run_id).explore_queue;
  queue::RedisLeaseQueue queue(redis_options, queue_options);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.leased, 0);
  EXPECT_EQ(stats.dead_letters, 0) << cluster.log_tail("explorer-1");
  EXPECT_EQ(stats.results, stats.acked_total);
  EXPECT_GT(stats.results, 0);
  // Explorers sampled with weights the trainer published (the TorchScript module's safetensors
  // through the weights store), not only with the module's own.
  std::int64_t newest_used = -1;
  for (int k = 0; k < kIterations; ++k) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 6; ++j) {
        if (const auto bytes = queue.result(run::seed_task_id(k, i, j))) {
          newest_used =
              std::max(newest_used, wire::SeedResult::decode(*bytes).weights_version_used);
        }
      }
    }
  }
  EXPECT_GE(newest_used, 1) << "explorers never loaded a published version";

  // 3. The validation reward (ODE, fixed seeds, the validation split) rose.
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  std::optional<double> base, final;
  int fallbacks = 0, lines = 0;
  for (std::string line; std::getline(metrics, line); ++lines) {
    const auto m = nlohmann::json::parse(line);
    fallbacks += m.value("fallback_prompts", 0);
    if (m.contains("reward_components")) {
      EXPECT_TRUE(m["reward_components"].contains("channel0_mean")) << line;
    }
    if (!m.contains("validation")) continue;
    const double reward = m["validation"]["mean_reward"].get<double>();
    (m["iteration"].get<int>() < 0 ? base : final) = reward;
  }
  EXPECT_EQ(lines, kIterations + 1);
  EXPECT_EQ(fallbacks, 0);
  ASSERT_TRUE(base && final);
  RecordProperty("base_validation_reward", std::to_string(*base));
  RecordProperty("final_validation_reward", std::to_string(*final));
  std::cout << "validation reward " << *base << " -> " << *final << std::endl;
  EXPECT_GT(*final, *base) << "GRPO on the channel-0 rule did not raise the reward";

  // 4. Python reproduces the C++ forward of the trained module from the final checkpoint.
  std::string latest;
  std::ifstream(dir / "run" / "checkpoints" / "latest") >> latest;
  const auto checkpoint = dir / "run" / "checkpoints" / latest / "model.safetensors";
  ASSERT_TRUE(std::filesystem::exists(checkpoint)) << checkpoint;
  testing::run_python(
      {(tools / "byom/check_checkpoint.py").string(), "inputs", "--config",
       (dir / "model.json").string(), "--out", (dir / "inputs.safetensors").string()},
      dir / "inputs.log");
  {
    policy::PolicyOptions o;
    o.kind = "torchscript";
    o.path = (dir / "model.pt").string();
    o.latent_channels = 4;
    o.latent_size = 16;
    o.prompts_file = (dir / "prompts.json").string();
    o.embeddings_file = (dir / "embeddings.safetensors").string();
    o.reward_input = "latents";
    policy::Policy trained(o);
    trained.load_state(model::load_safetensors(checkpoint));
    const auto inputs = model::load_safetensors(dir / "inputs.safetensors").tensors;
    at::NoGradGuard no_grad;
    model::TensorFile outputs;
    outputs.tensors["velocity"] =
        trained.velocity(inputs.at("latents"), inputs.at("timesteps"),
                         sampler::Conditioning{inputs.at("prompt_embeds"), inputs.at("pooled")});
    model::save_safetensors(dir / "outputs.safetensors", outputs);
  }
  testing::run_python(
      {(tools / "byom/check_checkpoint.py").string(), "compare", "--config",
       (dir / "model.json").string(), "--checkpoint", checkpoint.string(), "--inputs",
       (dir / "inputs.safetensors").string(), "--outputs", (dir / "outputs.safetensors").string(),
       "--initial", (dir / "initial.safetensors").string(), "--trainable", "*lora*", "--tolerance",
       "1e-5"},
      dir / "compare.log");
  std::ifstream compare_log(dir / "compare.log");
  std::cout << compare_log.rdbuf();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spotlight
