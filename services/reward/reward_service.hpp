#pragma once
// RewardService: the reward service's server. Receives wire::RewardRequest messages over an
// rpc::RpcServer (ZeroMQ ROUTER, batched), scores every image of a batch with one call of the
// reward function, answers each request with a wire::RewardReply.
//
//   RewardService service(reward::make_task_reward(task), RewardServiceOptions{}, registry);
//   std::string endpoint = service.bind("tcp://127.0.0.1:*");
//   std::jthread loop([&](std::stop_token st) { service.run(st); });
//
// handle(batch), which run() calls once per batch, is equivalent to:
//
//   for each request r of the batch:
//     decode r as wire::RewardRequest      WireError      -> reply {error: its text}
//     channels == 3, width == height == task.image_size   -> else reply {error: "bad image"}
//     parse every prompt text (task::parse_prompt)         -> else reply {error: names it}
//   scores = reward->score(all prompts, all images of the good requests)   // one call
//                                          throws         -> every good request gets {error}
//   reply to each good request {request_id, rewards, correct} in its image order
//
// Contract:
// - A malformed request gets an error reply (RewardReply::error non-empty; the RPC itself
//   succeeds) and is counted by kind; it never affects the other requests of its batch and
//   never stops the service.
// - Replies are pure functions of their requests (clients may retry).
// - Metrics (registry of service "reward"): spotlight_reward_requests_total, _batches_total,
//   _images_scored_total, _correct_total, _malformed_total, _errors_total{kind} (wire error
//   kinds, bad_image, bad_prompt, score_failed), _rejected_messages_total{reason} (messages
//   refused before scoring: RPC frame_count, delimiter, header, too_large, handshake (a
//   connection that failed its ZMTP/CURVE handshake), and the wire error kinds of undecodable
//   payloads), histograms _batch_size_requests,
//   _batch_size_images, _score_seconds, gauges _reward_mean and _reward_std (last scored batch).
// - bind() before run(); stop() is thread-safe; handle() is thread-safe.

#include <chrono>
#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "common/metrics/metrics.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rpc/server.hpp"
#include "common/task/options.hpp"
#include "common/zmq/curve.hpp"
#include "common/zmq/options.hpp"

namespace spotlight::reward {

inline constexpr const char* kDefaultRewardBind = "tcp://127.0.0.1:5557";

struct RewardServiceOptions {
  std::string bind = kDefaultRewardBind;                              // ZeroMQ endpoint bind() uses
  std::size_t max_batch = rpc::kDefaultMaxBatch;                      // requests per batch, >= 1
  std::chrono::microseconds batch_window = rpc::kDefaultBatchWindow;  // wait for more, >= 0
  std::size_t max_request_bytes = rpc::kDefaultMaxRequestBytes;       // larger: error reply
  task::TaskOptions task;     // images must be task.image_size square, 3 channels
  zmqio::CurveOptions curve;  // CURVE server keys of the RPC socket; none: plain text
  // Clients that do not finish the ZMTP/CURVE handshake in this time are dropped; > 0.
  std::chrono::milliseconds handshake_timeout = zmqio::kDefaultHandshakeTimeout;
};

class RewardService {
 public:
  // `registry` receives the metrics (a private one when null); its service must be "reward".
  // Throws std::invalid_argument for a null reward or a registry of another service,
  // task::TaskError for invalid task options, rpc::RpcError for bad batching options.
  RewardService(std::unique_ptr<RewardFunction> reward, RewardServiceOptions options,
                std::shared_ptr<metrics::Registry> registry = nullptr);
  ~RewardService();
  RewardService(const RewardService&) = delete;
  RewardService& operator=(const RewardService&) = delete;

  // Listens on options.bind / on `endpoint`; returns the resolved endpoint ("*" replaced by
  // the port). Throws rpc::RpcError naming the endpoint.
  std::string bind();
  std::string bind(const std::string& endpoint);

  // Serves until stop() or `stop` is requested, then answers the batch in hand and returns.
  // Throws rpc::RpcError on socket failures.
  void run(std::stop_token stop = {});
  void stop();

  // One batch, as run() handles it: replies[i] answers batch[i] (always ok at the RPC level;
  // failures are RewardReply errors). Never throws for bad input.
  std::vector<rpc::RpcReply> handle(std::vector<rpc::RpcRequest> batch);

  rpc::RpcServerCounters rpc_counters() const;
  const std::shared_ptr<metrics::Registry>& registry() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::reward
