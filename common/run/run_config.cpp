#include "common/run/run_config.hpp"

#include <algorithm>

#include "common/bus/publisher.hpp"
#include "common/config/error.hpp"
#include "common/metrics/server.hpp"
#include "common/reward/remote_reward.hpp"
#include "common/run/bus_subscription.hpp"
#include "common/task/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/prompt_file.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/curve_config.hpp"

namespace spotlight::run {

using config::Entry;

namespace {

// cpu, cuda or cuda:<index> (whether the device exists is checked where tensors live:
// policy::check_device).
bool valid_device(const config::Value& value) {
  const auto& d = std::get<std::string>(value);
  if (d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 9) return false;
  return std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool whole_numbers_at_least(const config::Value& value, double lo) {
  const auto& v = std::get<std::vector<double>>(value);
  return !v.empty() && std::all_of(v.begin(), v.end(), [&](double x) {
    return x >= lo && x == static_cast<double>(static_cast<long long>(x));
  });
}

}  // namespace

const config::Schema& run_schema() {
  static const config::Schema entries{
      Entry::string("run.dir", "runs/default", "Run directory: checkpoints, metrics, summary.")
          .non_empty(),
      Entry::integer("run.seed", 0,
                     "Run seed: prompts, candidate seeds and rollouts derive from it.")
          .at_least(0),
      Entry::integer("run.threads", 0, "Intra-op CPU threads (0: LibTorch's default).").at_least(0),
      Entry::string("model.preset", "tiny", "Model size preset.")
          .one_of({"micro", "mini", "tiny", "small", "base", "qwen-image-like"}),
      Entry::string("model.device", "cpu", "Device of every tensor: cpu, cuda, cuda:N.")
          .check("must be cpu, cuda or cuda:<index>", valid_device),
      Entry::string("model.dtype", "float32", "Parameter and activation dtype.")
          .one_of({"float32", "bfloat16"}),
      Entry::string("model.autocast", "none",
                    "bfloat16: the DiT forward's matrix products in bf16 under autocast, the "
                    "parameters, sampler and log-probabilities in fp32 (needs model.dtype "
                    "float32); none: all in model.dtype.")
          .one_of({"none", "bfloat16"}),
      Entry::integer("model.init_seed", 0, "Seed of the weight initialisation.").at_least(0),
      Entry::string("model.base", "",
                    "Base checkpoint (safetensors) to start RL from; empty: fresh weights "
                    "(torchscript: the module's own)."),
      Entry::string("model.kind", "native",
                    "native: the built-in MMDiT of model.preset; torchscript: a user's transformer "
                    "exported with torch.jit (model.path; docs/your-model.md).")
          .one_of({"native", "torchscript"}),
      Entry::string("model.path", "",
                    "torchscript: the exported module, forward(latents [B,C,H,W], timesteps [B], "
                    "prompt_embeds [B,L,D], pooled [B,P]) -> velocity [B,C,H,W]."),
      Entry::integer("model.latent_channels", 4, "torchscript: latent channels C.").range(1, 4096),
      Entry::integer("model.latent_size", 32, "torchscript: latent height and width H = W.")
          .range(1, 4096),
      Entry::string("task.kind", "embedded",
                    "embedded: the built-in GenEval-like task; prompt_file: a user's prompts "
                    "(task.prompts_file) with precomputed embeddings (task.embeddings_file).")
          .one_of({"embedded", "prompt_file"}),
      Entry::string("task.prompts_file", "",
                    "prompt_file: prompts with train and validation splits "
                    "(tools/encode_prompts.py writes it)."),
      Entry::string("task.embeddings_file", "",
                    "prompt_file: the prompts' prompt_embeds and pooled (safetensors; "
                    "tools/encode_prompts.py writes it)."),
      Entry::string_list("trainer.trainable", {"*"},
                         "Trained parameters by name pattern (fnmatch; e.g. ['*lora*']); the "
                         "others stay frozen.")
          .non_empty(),
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
      Entry::integer("sampler.steps", 10, "SDE/ODE steps per sample.").range(2, 1000),
      Entry::real("sampler.noise_level", 0.7, "SDE noise level a.").range(0, 5),
      Entry::real("sampler.shift", 1.0, "Time-grid shift toward the noise end.").positive(),
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
      Entry::string("run.id", "default",
                    "Run id: every Redis key of the run is under spotlight:<run.id>.")
          .non_empty(),
      Entry::string("redis.host", "127.0.0.1",
                    "Redis host (password: env SPOTLIGHT_REDIS_PASSWORD)."),
      Entry::integer("redis.port", 6379, "Redis port.").range(1, 65535),
      Entry::integer("redis.db", 0, "Redis database number.").range(0, 1024),
      Entry::integer("redis.command_timeout_ms", 5000, "Timeout of one Redis command.")
          .range(1, 3600000),
      Entry::integer("redis.retry_initial_ms", 100,
                     "First back-off after Redis is lost; doubles per failed attempt.")
          .range(1, 600000),
      Entry::integer("redis.retry_max_ms", 2000,
                     "Longest back-off between attempts while Redis is unavailable (bounds how "
                     "late a recovery is noticed).")
          .range(1, 600000),
      Entry::string("bus.trainer_endpoint", "tcp://127.0.0.1:5560",
                    "ZeroMQ PUB endpoint the trainer binds (weights, iteration notices)."),
      Entry::string("bus.subscribe_endpoint", "",
                    "Where the planner and explorers connect to the trainer's bus (empty: "
                    "bus.trainer_endpoint; set it when the trainer binds a wildcard address). "
                    "Unreachable: they follow Redis alone."),
      Entry::boolean("bus.subscribe", true,
                     "Planner and explorers follow the trainer's notices (the planner plans on "
                     "iteration events, explorers prefetch each new weights version) and the "
                     "trainer waits on the result bell; false: all of them poll Redis."),
      Entry::integer("bus.resync_ms", 1000,
                     "Recovery period of every notice: a subscriber re-reads the state from Redis "
                     "when it has heard nothing this long, and the trainer re-reads the results "
                     "at least this often while it waits on the result bell.")
          .range(10, 600000),
      Entry::string("explorer.id", "", "Explorer id (consumer name); empty: <hostname>-<pid>."),
      Entry::integer("explorer.batch", 8, "Seed tasks leased and sampled together.").range(1, 4096),
      Entry::integer("explorer.max_staleness", 1,
                     "Weights may be this many versions older than a task asks for.")
          .range(0, 1000),
      Entry::integer("explorer.heartbeat_ms", 1000, "Heartbeat period.").range(10, 600000),
      Entry::real("explorer.grace_seconds", 30,
                  "After a preemption notice (SIGTERM), exit within this time.")
          .positive(),
      Entry::boolean("explorer.commit_inflight", true,
                     "On a preemption notice, commit in-flight samples for another explorer."),
      Entry::string("explorer.preemption_notice_file", "",
                    "A preemption notice is this file appearing; empty: off."),
      Entry::string("explorer.preemption_notice_url", "",
                    "http:// URL polled for a preemption notice (200 with a body other than "
                    "FALSE: notice; 404: none); empty: off."),
      Entry::integer("explorer.preemption_poll_ms", 1000,
                     "Poll period of the preemption notice file and URL.")
          .range(10, 600000),
      // Sequence parallelism (services/explorer/sp_sampler.hpp): sp.size > 1 samples every chunk
      // on an SP group of rank processes kept by the explorer's node scheduler.
      Entry::integer("explorer.sp.size", 1, "SP group size; 1: sample in-process.").range(1, 64),
      Entry::integer("explorer.sp.spares", 1, "Spare rank processes kept warm for regrouping.")
          .range(0, 64),
      Entry::integer("explorer.sp.op_timeout_ms", 5000, "SP collective / rendezvous timeout.")
          .range(10, 600000),
      Entry::string("explorer.sp.rank_binary", "",
                    "spotlight-node executable; empty: ../node/spotlight-node next to this one."),
      Entry::integer("planner.lookahead", 1, "Iterations explored ahead of the trainer.")
          .range(1, 100),
      Entry::integer("planner.poll_ms", 100, "Planner loop period.").range(1, 600000),
      Entry::boolean("planner.reap_dead_explorers", true,
                     "Hand back the leases of explorers whose heartbeats stopped at once "
                     "(else they wait for exploration.lease_timeout_ms)."),
      Entry::boolean("planner.purge_passed", true,
                     "Remove the waiting seed tasks of iterations the trainer has passed (counted "
                     "as purged, not lost); false: they stay queued and run (the old behaviour)."),
      Entry::real("planner.finish_probability", 0.9,
                  "deadline: the probability the chosen exploration must finish in time; also "
                  "what spotlight_planner_desired_explorers is sized for.")
          .check("must be in (0, 1)",
                 [](const config::Value& v) {
                   const double p = std::get<double>(v);
                   return p > 0 && p < 1;
                 }),
      Entry::real("planner.preemption_delay_seconds", 1.0,
                  "Finish-time model: how long a preempted sample waits for a new explorer.")
          .at_least(0),
      Entry::double_list("planner.candidates", {8, 16, 24, 32},
                         "bandit, deadline: candidates-per-prompt (N) arms.")
          .check("must be integers >= 1",
                 [](const config::Value& v) { return whole_numbers_at_least(v, 1); }),
      Entry::double_list("planner.steps", {4, 6, 10},
                         "bandit, deadline: exploration sampler-step arms.")
          .check("must be integers >= 2",
                 [](const config::Value& v) { return whole_numbers_at_least(v, 2); }),
      Entry::real("planner.time_margin", 0.9,
                  "bandit: an arm is feasible if its predicted exploration time is at most this "
                  "share of the trainer's predicted training time.")
          .positive(),
      Entry::real("planner.ucb_exploration", 0.5, "bandit: UCB exploration width c.").at_least(0),
      Entry::real("planner.ucb_discount", 0.95,
                  "bandit: per-observation decay of the arm statistics (1: plain UCB1).")
          .range(0.01, 1),
      Entry::real("planner.prior_sample_step_seconds", 0,
                  "bandit: seconds per sample per sampler step before any measurement (0: probe "
                  "with the cheapest arm).")
          .at_least(0),
      Entry::string("planner.decisions_file", "",
                    "JSONL of every plan and its reason (default: <run.dir>/planner.jsonl)."),
      Entry::real("cost.reserved_price_per_hour", 4.0,
                  "Price of one reserved device-hour (the trainer's class).")
          .at_least(0),
      Entry::real("cost.spot_price_ratio", 0.27,
                  "Spot price as a share of the reserved price (explorers' class).")
          .at_least(0),
      Entry::real("cost.devices", 0,
                  "Devices this process holds, for cost accounting (0: run.threads when set, "
                  "else 1).")
          .at_least(0),
      Entry::integer("bus.max_message_bytes", bus::kDefaultMaxMessageSize,
                     "Largest ZeroMQ frame of the trainer's bus, either way (ZMQ_MAXMSGSIZE).")
          .range(zmqio::kMinMaxMessageSize, std::int64_t{1} << 30),
      Entry::integer("bus.handshake_timeout_ms", zmqio::kDefaultHandshakeTimeout.count(),
                     "Peers of the trainer's bus that do not complete the ZeroMQ (CURVE) "
                     "handshake in this time are dropped.")
          .range(1, 600000),
      Entry::string("bus.curve.server_secret_file", "",
                    "zcert key pair file (spotlight-keygen): the trainer's bus is CURVE-encrypted; "
                    "empty: plain text."),
      Entry::string("bus.curve.server_public_file", "",
                    "Planner, explorers: zcert file with the trainer bus's public key (set when "
                    "the bus is CURVE-encrypted)."),
      Entry::string("bus.curve.client_secret_file", "",
                    "Planner, explorers: zcert key pair of this subscriber (empty: an "
                    "ephemeral pair).")};
  // The reward service's client keys (reward.*), which a core-only build reads too (reward.input,
  // and reward.endpoint to refuse a prompt file it cannot score).
#ifdef SPOTLIGHT_RUN_SERVICES
  // metrics.bind (empty: off), metrics.max_request_bytes, metrics.request_timeout_ms.
  static const config::Schema schema = config::Schema(entries)
                                           .add(task::prompts_schema())
                                           .add(task::scoring_schema())
                                           .add(exploration_schema())
                                           .add(metrics::metrics_schema(""))
                                           .add(reward::remote_reward_schema());
#else
  // A core-only build (SPOTLIGHT_CORE_ONLY) serves no metrics: no metrics.* keys.
  static const config::Schema schema = config::Schema(entries)
                                           .add(task::prompts_schema())
                                           .add(task::scoring_schema())
                                           .add(exploration_schema())
                                           .add(reward::remote_reward_schema());
#endif
  return schema;
}

void check_model_config(const config::Config& c) {
  const auto fail = [&](const std::string& key, const std::string& what) {
    throw config::ConfigError(key, "config: '" + key + "' " + what + " (" + c.origin(key) + ")");
  };
  const bool torchscript = c.get_string("model.kind") == "torchscript";
  const bool prompt_file = c.get_string("task.kind") == "prompt_file";
  if (torchscript && c.get_string("model.path").empty()) {
    fail("model.path", "must name the exported module when model.kind is torchscript");
  }
  if (torchscript && c.get_string("model.autocast") != "none") {
    fail("model.autocast", "applies to the built-in MMDiT only, not to model.kind torchscript");
  }
  if (torchscript != prompt_file) {
    fail("task.kind", torchscript ? "must be prompt_file when model.kind is torchscript (a "
                                    "TorchScript module is conditioned on precomputed embeddings)"
                                  : "prompt_file needs model.kind torchscript (the built-in "
                                    "MMDiT encodes the embedded task's words itself)");
  }
  if (prompt_file) {
    for (const char* key : {"task.prompts_file", "task.embeddings_file"}) {
      if (c.get_string(key).empty()) fail(key, "must name a file when task.kind is prompt_file");
    }
    if (c.get_string("reward.endpoint").empty()) {
      fail("reward.endpoint",
           "must name a reward service when task.kind is prompt_file (the embedded scorer "
           "cannot grade a user's prompts)");
    }
    if (c.get_int("explorer.sp.size") > 1) {
      fail("explorer.sp.size", "must be 1 with model.kind torchscript (no SP runtime for it)");
    }
  }
  if (c.get_string("reward.input") == "latents" && c.get_string("reward.endpoint").empty()) {
    fail("reward.input", "latents needs a reward service (reward.endpoint) that decodes them");
  }
}

std::unique_ptr<task::PromptSource> prompt_source(const config::Config& c) {
  check_model_config(c);
  if (c.get_string("task.kind") == "prompt_file") {
    try {
      return std::make_unique<task::PromptFile>(
          task::PromptFile::load(c.get_string("task.prompts_file")));
    } catch (const task::TaskError& e) {
      throw config::ConfigError("task.prompts_file", std::string("config: ") + e.what());
    }
  }
  return std::make_unique<task::PromptGenerator>(task::task_options(c));
}

policy::PolicyOptions policy_options(const config::Config& c) {
  check_model_config(c);
  policy::PolicyOptions o;
  o.kind = c.get_string("model.kind");
  o.path = c.get_string("model.path");
  o.latent_channels = c.get_int("model.latent_channels");
  o.latent_size = c.get_int("model.latent_size");
  o.prompts_file = c.get_string("task.prompts_file");
  o.embeddings_file = c.get_string("task.embeddings_file");
  o.trainable = c.get_string_list("trainer.trainable");
  o.reward_input = c.get_string("reward.input");
  o.preset = c.get_string("model.preset");
  o.device = c.get_string("model.device");
  o.dtype = c.get_string("model.dtype");
  o.autocast = c.get_string("model.autocast");
  if (o.autocast != "none" && o.dtype != "float32") {
    throw config::ConfigError("model.autocast", "config: 'model.autocast' " + o.autocast +
                                                    " needs model.dtype float32, got " + o.dtype +
                                                    " (in " + c.origin("model.dtype") + ")");
  }
  o.init_seed = c.get<uint64_t>("model.init_seed");
  return o;
}

sampler::SamplerOptions sampler_options(const config::Config& c) {
  sampler::SamplerOptions o;
  o.steps = c.get<int>("sampler.steps");
  o.noise_level = c.get_double("sampler.noise_level");
  o.shift = c.get_double("sampler.shift");
  return o;
}

// The services' settings (Redis, ZeroMQ): not part of a core-only build.
#ifdef SPOTLIGHT_RUN_SERVICES
redis::RedisOptions redis_options(const config::Config& c) {
  redis::RedisOptions o;
  o.host = c.get_string("redis.host");
  o.port = c.get<int>("redis.port");
  o.db = c.get<int>("redis.db");
  o.command_timeout = std::chrono::milliseconds(c.get_int("redis.command_timeout_ms"));
  return redis::with_env_credentials(o);
}

outage::BackoffOptions redis_backoff(const config::Config& c) {
  outage::BackoffOptions o;
  o.initial = std::chrono::milliseconds(c.get_int("redis.retry_initial_ms"));
  o.max = std::max(o.initial, std::chrono::milliseconds(c.get_int("redis.retry_max_ms")));
  return o;
}

bus::PublisherOptions trainer_bus_options(const config::Config& c) {
  bus::PublisherOptions o;
  o.max_message_size = c.get_int("bus.max_message_bytes");
  o.curve = zmqio::curve_server_options(c, "bus.curve.server_secret_file");
  o.handshake_timeout = std::chrono::milliseconds(c.get_int("bus.handshake_timeout_ms"));
  return o;
}

std::optional<BusSubscription> bus_subscription(const config::Config& c) {
  if (!c.get_bool("bus.subscribe")) return std::nullopt;
  BusSubscription s;
  s.endpoint = c.get_string("bus.subscribe_endpoint");
  if (s.endpoint.empty()) s.endpoint = c.get_string("bus.trainer_endpoint");
  if (s.endpoint.empty()) return std::nullopt;
  s.subscriber.max_message_size = c.get_int("bus.max_message_bytes");
  s.subscriber.curve = zmqio::curve_client_options(c, "bus.curve.server_public_file",
                                                   "bus.curve.client_secret_file");
  s.follower.follower.resync_interval = std::chrono::milliseconds(c.get_int("bus.resync_ms"));
  return s;
}

bool samples_explored_images(std::int64_t iteration, std::int64_t prompt, int every) {
  return every > 0 && prompt == 0 && iteration >= 0 && iteration % every == 0;
}

queue::LeaseQueueOptions explore_queue_options(const config::Config& c) {
  queue::LeaseQueueOptions o;
  o.key_prefix = RunKeys(c.get_string("run.id")).explore_queue;
  const ExplorationOptions exploration = exploration_options(c);
  o.lease_timeout = exploration.lease_timeout;
  o.max_deliveries = exploration.max_deliveries;
  return o;
}
#endif

store::TrajectoryStoreOptions trajectory_store_options(const config::Config& c) {
  store::TrajectoryStoreOptions o;
  o.key_prefix = RunKeys(c.get_string("run.id")).trajectories;
  o.ttl = exploration_options(c).trajectory_ttl;
  return o;
}

}  // namespace spotlight::run
