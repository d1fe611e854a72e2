#include "services/reward/reward_config.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/config/error.hpp"
#include "common/metrics/server.hpp"
#include "common/task/task_config.hpp"
#include "common/zmq/curve_config.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::reward {

using config::Entry;

const std::vector<std::string>& reward_function_names() {
  static const std::vector<std::string> names = {"task"};
  return names;
}

const config::Schema& reward_schema() {
  static const config::Schema schema = [] {
    config::Schema s{
        Entry::string("reward.bind", kDefaultRewardBind,
                      "ZeroMQ endpoint to listen on (\"tcp://127.0.0.1:*\": a free port, logged).")
            .non_empty(),
        Entry::string_list("reward.functions", {"task"},
                           "Reward functions, summed with reward.weights. task: the embedded "
                           "task's rule-based scorer.")
            .non_empty()
            .one_of(reward_function_names()),
        Entry::double_list("reward.weights", {1.0}, "One weight per entry of reward.functions.")
            .non_empty()
            .check("must be finite",
                   [](const config::Value& v) {
                     const auto& w = std::get<std::vector<double>>(v);
                     return std::all_of(w.begin(), w.end(),
                                        [](double x) { return std::isfinite(x); });
                   }),
        Entry::integer("reward.max_batch", static_cast<std::int64_t>(rpc::kDefaultMaxBatch),
                       "Most requests scored together in one batch.")
            .range(1, 65536),
        Entry::integer(
            "reward.batch_window_ms",
            std::chrono::duration_cast<std::chrono::milliseconds>(rpc::kDefaultBatchWindow).count(),
            "How long a batch waits for more requests after its first, in ms.")
            .range(0, 60000),
        Entry::integer("reward.max_request_bytes",
                       static_cast<std::int64_t>(rpc::kDefaultMaxRequestBytes),
                       "Larger requests get an error reply.")
            .range(1024, std::int64_t{1} << 31),
        Entry::boolean("reward.limit_message_bytes", true,
                       "Close a client connection that sends more than reward.max_request_bytes "
                       "+ 1 MiB + 64 KiB before it is answered (one message of many frames), "
                       "counted as message_size; false: a message is held whole, however many "
                       "frames it has, before it is refused."),
        Entry::integer("reward.max_batch_images", static_cast<std::int64_t>(kDefaultMaxBatchImages),
                       "Most images scored together in one reward call.")
            .range(1, 1 << 20),
        Entry::integer("reward.client_images_per_batch",
                       static_cast<std::int64_t>(kDefaultClientImagesPerBatch),
                       "While several clients wait, each one's share of a batch, in images (larger "
                       "requests are scored over several batches).")
            .range(1, 1 << 20),
        Entry::integer("reward.max_queued_bytes", static_cast<std::int64_t>(kDefaultMaxQueuedBytes),
                       "Bytes of requests received and not yet answered, all clients (more: a "
                       "'busy' error reply, counted).")
            .range(1024, std::int64_t{1} << 40),
        Entry::integer("reward.max_client_queued_bytes",
                       static_cast<std::int64_t>(kDefaultMaxClientQueuedBytes),
                       "The same for one client connection; >= reward.max_request_bytes.")
            .range(1024, std::int64_t{1} << 40),
        Entry::integer("reward.handshake_timeout_ms", zmqio::kDefaultHandshakeTimeout.count(),
                       "Clients that do not complete the ZeroMQ (CURVE) handshake in this time "
                       "are dropped and counted.")
            .range(1, 600000),
        Entry::string("reward.curve.server_secret_file", "",
                      "zcert key pair file (spotlight-keygen): requests are CURVE-encrypted; "
                      "empty: plain text."),
    };
    s.add(task::scoring_schema()).add(task::image_size_schema()).add(metrics::metrics_schema());
    return s;
  }();
  return schema;
}

RewardServiceOptions reward_service_options(const config::Config& config) {
  RewardServiceOptions options;
  options.bind = config.get_string("reward.bind");
  options.max_batch = config.get<std::size_t>("reward.max_batch");
  options.batch_window = std::chrono::milliseconds(config.get_int("reward.batch_window_ms"));
  options.max_request_bytes = config.get<std::size_t>("reward.max_request_bytes");
  options.limit_message_bytes = config.get_bool("reward.limit_message_bytes");
  options.max_batch_images = config.get<std::size_t>("reward.max_batch_images");
  options.client_images_per_batch = config.get<std::size_t>("reward.client_images_per_batch");
  options.max_queued_bytes = config.get<std::size_t>("reward.max_queued_bytes");
  options.max_client_queued_bytes = config.get<std::size_t>("reward.max_client_queued_bytes");
  const auto at_most = [&](const char* small, const char* large) {
    if (config.get_int(small) > config.get_int(large)) {
      throw config::ConfigError(large, std::string("config: '") + large + "' (" +
                                           std::to_string(config.get_int(large)) +
                                           ") must be >= '" + small + "' (" +
                                           std::to_string(config.get_int(small)) + ")");
    }
  };
  at_most("reward.client_images_per_batch", "reward.max_batch_images");
  at_most("reward.max_request_bytes", "reward.max_client_queued_bytes");
  at_most("reward.max_client_queued_bytes", "reward.max_queued_bytes");
  options.task = task::task_options(config);
  options.curve = zmqio::curve_server_options(config, "reward.curve.server_secret_file");
  options.handshake_timeout =
      std::chrono::milliseconds(config.get_int("reward.handshake_timeout_ms"));
  return options;
}

std::unique_ptr<RewardFunction> make_reward_function(const std::vector<std::string>& functions,
                                                     const std::vector<double>& weights,
                                                     const task::TaskOptions& task) {
  if (functions.empty()) throw std::invalid_argument("reward: no reward functions");
  if (functions.size() != weights.size()) {
    throw std::invalid_argument("reward: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(functions.size()) + " reward functions");
  }
  std::vector<std::pair<double, std::unique_ptr<RewardFunction>>> parts;
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (!std::isfinite(weights[i])) {
      throw std::invalid_argument("reward: weight of '" + functions[i] + "' is not finite");
    }
    if (functions[i] == "task") {
      parts.emplace_back(weights[i], make_task_reward(task));
    } else {
      throw std::invalid_argument("reward: unknown reward function '" + functions[i] +
                                  "' (known: task)");
    }
  }
  return make_weighted_reward(std::move(parts));
}

std::unique_ptr<RewardFunction> make_reward_function(const config::Config& config) {
  const auto& functions = config.get_string_list("reward.functions");
  const auto& weights = config.get_double_list("reward.weights");
  if (functions.size() != weights.size()) {
    throw config::ConfigError("reward.weights",
                              "config: 'reward.weights' must have one weight per entry of "
                              "'reward.functions' (" +
                                  std::to_string(functions.size()) + "), got " +
                                  std::to_string(weights.size()) + " (" +
                                  config.origin("reward.weights") + ")");
  }
  try {
    return make_reward_function(functions, weights, task::task_options(config));
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("reward.functions", std::string("config: ") + e.what());
  }
}

}  // namespace spotlight::reward
