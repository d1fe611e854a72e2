#include "services/node/rank_worker.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/parallel/rendezvous.hpp"
#include "common/parallel/shared_weights.hpp"
#include "common/parallel/ulysses.hpp"
#include "common/policy/policy.hpp"
#include "common/redis/client.hpp"
#include "common/sampler/sampler.hpp"
#include "common/store/redis_weight_store.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::node {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class RankWorker {
 public:
  explicit RankWorker(const RankWorkerOptions& options)
      : options_(options),
        policy_(make_policy_options(options),
                policy::task_options_for(model::mmdit_preset(options.preset))) {
    policy_.model()->eval();
    parallel::StoreOptions store;
    store.host = options.store_host;
    store.port = options.store_port;
    store_ = parallel::open_store(store);
  }

  Json handle(const Json& command) {
    const auto op = command.at("op").get<std::string>();
    const auto start = Clock::now();
    Json reply{{"ok", true}};
    try {
      dispatch(op, command, reply);
    } catch (const parallel::CommunicatorError&) {
      sp_.reset();  // the group is broken: drop it, keep the weights
      comm_.reset();
      throw;
    }
    reply["seconds"] = since(start);
    return reply;
  }

 private:
  void dispatch(const std::string& op, const Json& command, Json& reply) {
    if (op == "load") {
      load(command, reply);
    } else if (op == "export") {
      const auto bytes = policy_.weights_bytes();
      parallel::publish_shared_weights(command.at("shm").get<std::string>(), bytes);
      reply["bytes"] = bytes.size();
    } else if (op == "form") {
      form(command);
    } else if (op == "sample") {
      sample(command, reply);
    } else if (op == "forward_bench") {
      forward_bench(command);
    } else {
      throw std::invalid_argument("unknown op '" + op + "'");
    }
  }

  static policy::PolicyOptions make_policy_options(const RankWorkerOptions& o) {
    policy::PolicyOptions p;
    p.preset = o.preset;
    p.device = o.device;
    return p;
  }

  void load(const Json& command, Json& reply) {
    if (command.contains("shm")) {
      auto bytes = parallel::read_shared_weights(command.at("shm").get<std::string>());
      if (!bytes) throw std::runtime_error("no shared weights segment " + command.at("shm").dump());
      policy_.load_weights_bytes(*bytes);
      reply["source"] = "shm";
      return;
    }
    redis::RedisOptions redis;
    redis.host = command.at("redis_host").get<std::string>();
    redis.port = command.at("redis_port").get<int>();
    store::WeightStoreOptions weights;
    weights.key_prefix = command.at("key_prefix").get<std::string>();
    store::RedisWeightStore store(redis, weights);
    const auto version = command.at("version").get<std::int64_t>();
    auto bytes = store.fetch(version);
    if (!bytes) throw std::runtime_error("weights version " + std::to_string(version) + " absent");
    policy_.load_weights_bytes(*bytes);
    reply["source"] = "store";
  }

  void form(const Json& command) {
    sp_.reset();
    comm_.reset();  // aborts the old group (its Gloo contexts close their connections)
    const auto generation = command.at("generation").get<std::int64_t>();
    parallel::GroupOptions group;
    group.device = options_.device;
    group.timeout = options_.op_timeout;
    comm_ = parallel::make_communicator(
        parallel::generation_store(store_, options_.group, generation),
        command.at("rank").get<int>(), command.at("size").get<int>(), group);
    sp_ = std::make_unique<parallel::SequenceParallelModel>(policy_.model(), *comm_);
  }

  parallel::SequenceParallelModel& group() {
    if (!sp_) throw std::runtime_error("no group formed");
    return *sp_;
  }

  void sample(const Json& command, Json& reply) {
    auto& sp = group();
    std::vector<task::Prompt> prompts;
    for (const auto& text : command.at("prompts")) {
      auto prompt = task::parse_prompt(text.get<std::string>());
      if (!prompt) throw std::invalid_argument("not a prompt: " + text.dump());
      prompts.push_back(*prompt);
    }
    auto seeds = command.at("seeds").get<std::vector<std::uint64_t>>();
    sampler::SamplerOptions sampling;
    sampling.steps = command.at("steps").get<int>();
    sampling.sde = command.value("sde", true);
    sampling.noise_level = command.value("noise_level", sampling.noise_level);
    sampling.shift = command.value("shift", sampling.shift);
    sampler::VelocityFn velocity = [&sp](const at::Tensor& x, const at::Tensor& t,
                                         const at::Tensor& text, const at::Tensor& pooled) {
      return sp.forward_encoded(x, t, text, pooled);
    };
    auto final =
        sampler::sample(policy_.model(), velocity, policy_.tokens(prompts), seeds, sampling)
            .final()
            .to(torch::kCPU, torch::kFloat)
            .contiguous();
    if (comm_->rank() != 0) return;
    reply["shape"] = final.sizes().vec();
    reply["latents"] =
        std::vector<float>(final.data_ptr<float>(), final.data_ptr<float>() + final.numel());
  }

  void forward_bench(const Json& command) {
    auto& sp = group();
    torch::NoGradGuard no_grad;
    const auto& o = policy_.model_options();
    const auto batch = command.at("batch").get<int64_t>();
    const auto options = policy_.tensor_options();
    auto x = torch::randn({batch, o.channels(), o.image_size(), o.image_size()}, options);
    auto tokens =
        torch::randint(0, o.vocab_size(), {batch, o.text_len()}, options.dtype(torch::kLong));
    comm_->broadcast(x, 0);  // every rank of the group needs the same inputs
    comm_->broadcast(tokens, 0);
    auto [text, pooled] = policy_.model()->encode_text(tokens);
    auto t = torch::full({batch}, 0.5, options);
    for (int i = 0; i < command.at("iterations").get<int>(); ++i) {
      sp.forward_encoded(x, t, text, pooled);
    }
  }

  RankWorkerOptions options_;
  policy::Policy policy_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<parallel::Communicator> comm_;
  std::unique_ptr<parallel::SequenceParallelModel> sp_;
};

}  // namespace

config::ArgumentParser rank_command_line() {
  const RankWorkerOptions defaults;
  config::ArgumentParser p(
      "usage: spotlight-node rank --store-port=P [options]\n"
      "One rank process of a node's SP group (the node scheduler starts these): reads JSON\n"
      "commands on stdin, answers on stdout.");
  p.option("store-port", "P", "the node scheduler's c10d TCPStore port (required)")
      .option("store-host", "HOST", "the TCPStore host", defaults.store_host)
      .option("group", "NAME", "store key prefix of this node's groups", defaults.group)
      .option("preset", "NAME", "model preset", defaults.preset)
      .option("device", "DEVICE", "cpu, cuda, cuda:N", defaults.device)
      .option("threads", "N", "intra-op threads of this rank", std::to_string(defaults.threads))
      .option("op-timeout-ms", "MS", "timeout of one collective",
              std::to_string(defaults.op_timeout.count()));
  return p;
}

RankWorkerOptions RankWorkerOptions::from(const config::Arguments& a) {
  RankWorkerOptions o;
  const std::int64_t port = a.integer("store-port");
  if (port < 1 || port > 65535) {
    throw config::ConfigError("", "option --store-port: must be in [1, 65535]");
  }
  o.store_port = static_cast<std::uint16_t>(port);
  o.store_host = a.text("store-host");
  o.group = a.text("group");
  o.preset = a.text("preset");
  o.device = a.text("device");
  o.threads = static_cast<int>(a.integer("threads"));
  if (o.threads < 1) throw config::ConfigError("", "option --threads: must be >= 1");
  o.op_timeout = std::chrono::milliseconds(a.integer("op-timeout-ms"));
  return o;
}

int run_rank_worker(const RankWorkerOptions& options, std::istream& in, std::ostream& out) {
  at::set_num_threads(options.threads);
  std::unique_ptr<RankWorker> worker;
  try {
    worker = std::make_unique<RankWorker>(options);
  } catch (const std::exception& e) {
    out << Json{{"ready", false}, {"error", e.what()}}.dump() << std::endl;
    return 1;
  }
  out << Json{{"ready", true}, {"pid", getpid()}}.dump() << std::endl;
  std::string line;
  while (std::getline(in, line)) {
    Json reply;
    try {
      auto command = Json::parse(line);
      if (command.at("op") == "quit") return 0;
      reply = worker->handle(command);
    } catch (const parallel::CommunicatorError& e) {
      reply = {{"ok", false}, {"error", e.what()}, {"communicator", true}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"error", e.what()}, {"communicator", false}};
    }
    out << reply.dump() << std::endl;
  }
  return 0;  // the scheduler closed our stdin
}

}  // namespace spotlight::node
