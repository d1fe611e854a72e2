#include "services/trainer/trainer_config.hpp"

#include "common/run/run_config.hpp"
#include "services/job/job_schema.hpp"

namespace spotlight::trainer {

const config::Schema& trainer_schema() {
  return job::run_schema();
}

PretrainOptions pretrain_options(const config::Config& c) {
  PretrainOptions o;
  o.steps = c.get<int>("pretrain.steps");
  o.batch = c.get<int>("pretrain.batch");
  o.lr = c.get_double("pretrain.lr");
  o.warmup = c.get<int>("pretrain.warmup");
  o.seed = c.get<uint64_t>("pretrain.seed");
  o.max_seconds = c.get_double("pretrain.max_seconds");
  o.category_weights = c.get_double_list("pretrain.category_weights");
  return o;
}

GrpoOptions grpo_options(const config::Config& c) {
  const run::ExplorationOptions exploration = run::exploration_options(c);
  GrpoOptions o;
  o.mode = exploration.mode;
  o.reuse = exploration.reuse;
  o.candidates = exploration.candidates;
  o.exploration_steps = exploration.steps;
  o.iterations = c.get<int>("trainer.iterations");
  o.max_seconds = c.get_double("trainer.max_seconds");
  o.prompts_per_iteration = c.get<int>("trainer.prompts_per_iteration");
  o.group_size = c.get<int>("trainer.group_size");
  o.sampler = run::sampler_options(c);
  o.train_step_begin = c.get<int>("trainer.train_step_begin");
  o.train_step_end = c.get<int>("trainer.train_step_end");
  o.lr = c.get_double("trainer.lr");
  o.weight_decay = c.get_double("trainer.weight_decay");
  o.grad_clip = c.get_double("trainer.grad_clip");
  o.micro_batch = c.get<int>("trainer.micro_batch");
  o.micro_batches_per_update = c.get<int>("trainer.micro_batches_per_update");
  o.inner_epochs = c.get<int>("trainer.inner_epochs");
  o.advantages.group_size = o.group_size;
  o.advantages.global_std = c.get_bool("trainer.global_std");
  o.advantages.clip = c.get_double("trainer.advantage_clip");
  o.loss.clip_range = c.get_double("trainer.clip_range");
  o.loss.kl_beta = c.get_double("trainer.kl_beta");
  o.validate_every = c.get<int>("validation.every");
  o.validate_every_seconds = c.get_double("validation.every_seconds");
  o.defer_validation = c.get_bool("validation.defer");
  o.validation_prompts = c.get<int>("validation.prompts");
  o.validation_steps = c.get<int>("validation.steps");
  o.validation_images = c.get<int>("validation.grid_prompts");
  o.audit_every = c.get<int>("audit.every");
  o.audit_prompts = c.get<int>("audit.prompts");
  o.checksum_every = c.get<int>("trainer.checksum_every");
  o.seed = c.get<uint64_t>("run.seed");
  o.run_dir = c.get_string("run.dir");
  o.prompts = run::prompt_source(c);
  if (o.candidates < o.group_size && o.mode != run::ExplorationMode::kNone &&
      o.mode != run::ExplorationMode::kOffload) {
    throw config::ConfigError("exploration.candidates",
                              "config: 'exploration.candidates' must be >= trainer.group_size (" +
                                  std::to_string(o.group_size) + "), got " +
                                  std::to_string(o.candidates));
  }
  return o;
}

BenchOptions bench_options(const config::Config& c) {
  BenchOptions o;
  o.policy = run::policy_options(c);
  o.base = c.get_string("model.base");
  o.hidden = c.get_int("bench.hidden");
  o.depth = c.get_int("bench.depth");
  o.image_size = c.get_int("bench.image_size");
  o.batch = c.get_int("bench.batch");
  o.seconds = c.get_double("bench.seconds");
  o.matmul_size = c.get_int("bench.matmul_size");
  o.sampler = c.get_bool("bench.sampler");
  o.sampling = run::sampler_options(c);
  o.grpo = c.get_bool("bench.grpo");
  o.grpo_options = grpo_options(c);
  return o;
}

}  // namespace spotlight::trainer
