#include "services/trainer/section/trainer_section.hpp"

#include "common/task/task_config.hpp"

namespace spotlight::trainer {

using config::Entry;

const config::Schema& pretrain_schema() {
  static const config::Schema schema{
      Entry::double_list("pretrain.category_weights", {1, 1, 1, 1, 1},
                         "Category mix of the pretraining data (as task.category_weights).")
          .check(task::kCategoryWeightsRule, task::valid_category_weights),
      Entry::integer("pretrain.steps", 600, "Flow-matching steps.").range(1, 10000000),
      Entry::integer("pretrain.batch", 64, "Images per step.").range(1, 65536),
      Entry::real("pretrain.lr", 1e-3, "Peak AdamW learning rate (warmup, then cosine).")
          .positive(),
      Entry::integer("pretrain.warmup", 50, "Warmup steps.").at_least(0),
      Entry::integer("pretrain.seed", 1, "Data seed of pretraining.").at_least(0),
      Entry::real("pretrain.max_seconds", 0,
                  "Stop pretraining after this wall time (0: no limit); an early stop is logged, "
                  "recorded in the checkpoint and part of its cache key.")
          .at_least(0),
      Entry::string("pretrain.output", "",
                    "Where to write the base checkpoint (default: <run.dir>/base.safetensors); "
                    "not with pretrain.cache_dir."),
      Entry::string("pretrain.cache_dir", "",
                    "Cache of base checkpoints keyed by the pretraining recipe: pretrain reuses "
                    "<dir>/base-<key>.safetensors or writes it, and prints its path."),
  };
  return schema;
}

const config::Schema& training_schema() {
  static const config::Schema schema{
      Entry::string_list("trainer.trainable", {"*"},
                         "Trained parameters by name pattern (fnmatch; e.g. ['*lora*']); the "
                         "others stay frozen.")
          .non_empty(),
      Entry::integer("trainer.iterations", 30, "GRPO iterations.").range(1, 10000000),
      Entry::real("trainer.max_seconds", 0,
                  "Wall-time budget: the run ends, validated and finished, after the first "
                  "iteration whose elapsed_seconds reaches it (0: only trainer.iterations).")
          .at_least(0),
      Entry::integer("trainer.prompts_per_iteration", 8, "Prompts per iteration.").range(1, 65536),
      Entry::integer("trainer.group_size", 8, "Samples per prompt group (G).").range(2, 4096),
      Entry::real("trainer.lr", 3e-5, "AdamW learning rate.").positive(),
      Entry::real("trainer.weight_decay", 0.0, "AdamW weight decay.").at_least(0),
      Entry::real("trainer.grad_clip", 1.0, "Gradient-norm clip (0: off).").at_least(0),
      Entry::integer("trainer.micro_batch", 16, "Samples per forward/backward and rollout chunk.")
          .range(1, 65536),
      Entry::integer("trainer.micro_batches_per_update", 2, "Micro-batches per optimizer step.")
          .range(1, 65536),
      Entry::integer("trainer.inner_epochs", 1, "Passes over each iteration's samples.")
          .range(1, 100),
      Entry::integer("trainer.train_step_begin", 0, "First trained SDE step.").at_least(0),
      Entry::integer("trainer.train_step_end", -1,
                     "End of trained steps (<= 0 counts from the last; -1: all but the last).")
          .range(-1000, 1000),
      Entry::real("trainer.clip_range", 1e-4, "PPO ratio clip epsilon.").positive(),
      Entry::real("trainer.kl_beta", 0.0, "KL weight to the frozen base (0: off).").at_least(0),
      Entry::boolean("trainer.global_std", false,
                     "Normalise advantages by the batch std instead of the group's."),
      Entry::real("trainer.advantage_clip", 5.0, "Advantage clip.").positive(),
      Entry::real("trainer.grace_seconds", 30,
                  "After SIGTERM/SIGINT the trainer abandons the iteration in progress and exits "
                  "0 within this time (its newest checkpoint holds every completed iteration).")
          .positive(),
      Entry::integer("trainer.ranks", 1,
                     "Data-parallel trainer processes (R). Each is started with RANK (0..R-1), "
                     "WORLD_SIZE (= R), MASTER_ADDR and MASTER_PORT (rank 0 hosts the rendezvous "
                     "store there), as torchrun, spotlight-cluster --trainer-ranks and the "
                     "deployments set them.")
          .range(1, 4096),
      Entry::real("trainer.rendezvous_timeout_seconds", 60,
                  "How long the ranks wait for each other to form the group.")
          .positive(),
      Entry::real("trainer.collective_timeout_seconds", 900,
                  "Longest wait of a rank in a collective (a dead peer fails it at once; this "
                  "bounds a hung one). Above rank 0's longest solo work: validation, audit, "
                  "checkpoint, weight publishing, exploration.max_wait_seconds.")
          .positive(),
      Entry::integer("trainer.checksum_every", 10,
                     "With trainer.ranks > 1: compare the ranks' weights every this many "
                     "iterations (and at start); a difference stops the group (0: only at start).")
          .at_least(0),
      Entry::real("trainer.redis_outage_limit_seconds", 0,
                  "async: after Redis has been unavailable this long the trainer exits with code 5 "
                  "(every completed iteration is checkpointed; a restart resumes); 0: wait.")
          .at_least(0),
      Entry::integer("validation.every", 5, "Validate every this many iterations.")
          .range(1, 1000000),
      Entry::real("validation.every_seconds", 0,
                  "> 0: validate at each multiple of this many seconds of the trainer's time line "
                  "(validation and audit excluded) instead of every validation.every iterations, "
                  "so that modes iterating at different speeds get the same resolution under "
                  "trainer.max_seconds.")
          .at_least(0),
      Entry::boolean("validation.defer", false,
                     "Instead of validating during the run, save the weights of each validation "
                     "point under <run.dir>/validation/; `spotlight-trainer validate` scores them "
                     "later into <run.dir>/validation.jsonl (keeps validation off the run's time "
                     "line and cores)."),
      Entry::integer("validation.prompts", 64, "Held-out validation prompts.").range(1, 100000),
      Entry::integer("validation.steps", 10, "ODE steps of validation sampling.").range(2, 1000),
      Entry::integer("validation.grid_prompts", 8,
                     "Rows of the image grid written at every validation (<run.dir>/validation/): "
                     "the first validation prompts (0: no grids).")
          .range(0, 256),
      Entry::integer("validation.grid_seeds", 4,
                     "Images per grid row: the validation's own seed plus extra fixed seeds, "
                     "sampled the same way.")
          .range(1, 64),
      Entry::integer("audit.every", 5, "Staleness audit every this many iterations (0: off).")
          .at_least(0),
      Entry::integer("audit.prompts", 4, "Prompts re-scored by the staleness audit.")
          .range(1, 4096),
  };
  return schema;
}

const config::Schema& bench_schema() {
  static const config::Schema schema{
      // spotlight-trainer bench (services/trainer/bench.hpp).
      Entry::integer("bench.batch", 64, "bench: samples per forward and per sampler batch.")
          .range(1, 65536),
      Entry::real("bench.seconds", 2.0, "bench: measure each phase for at least this long.")
          .range(0.01, 3600),
      Entry::integer("bench.hidden", 0,
                     "bench: build the model this wide (same head size); 0: the preset's width.")
          .range(0, 65536),
      Entry::integer("bench.depth", 0,
                     "bench: build this many joint blocks; 0: the preset's depth. The report adds "
                     "the preset's forward time at the measured FLOP rate.")
          .range(0, 1000),
      Entry::integer("bench.image_size", 0,
                     "bench: the latent's height and width (a multiple of the patch, so the image "
                     "tokens); 0: the preset's.")
          .range(0, 4096),
      Entry::integer("bench.matmul_size", 0,
                     "bench: n of the n x n x n peak matrix product; 0: 8192 on CUDA, 1024 on CPU.")
          .range(0, 65536),
      Entry::boolean("bench.sampler", true, "bench: also measure the sampler."),
      Entry::boolean("bench.grpo", false,
                     "bench: also time two GRPO iterations of the trainer.* settings, with a "
                     "stand-in reward that trains every chunk (the second one is reported)."),
      Entry::string("bench.output", "", "bench: also write the JSON report to this file."),
  };
  return schema;
}

}  // namespace spotlight::trainer
