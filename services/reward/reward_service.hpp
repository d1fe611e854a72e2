#pragma once
// RewardService: the reward service's server. Receives wire::RewardRequest messages over an
// rpc::RpcServer (ZeroMQ ROUTER), schedules their images fairly across clients, scores each batch
// with one call of the reward function, and answers each request with a wire::RewardReply once
// all its images are scored.
//
//   RewardService service(reward::make_task_reward(task), RewardServiceOptions{}, registry);
//   std::string endpoint = service.bind("tcp://127.0.0.1:*");
//   std::jthread loop([&](std::stop_token st) { service.run(st); });
//
// run() is two threads: the caller's reads and answers messages, a scoring thread scores.
//
//   on a request (reading thread):
//     RPC framing, payload above max_request_bytes -> RPC error reply (see rpc/server.hpp)
//     decode as wire::RewardRequest (its images stay in the received frame: not copied)
//                                               WireError -> reply {error: its text}
//     channels == 3, width == height == task.image_size -> else reply {error: "... 16x16x3 ..."}
//     admit to the FairQueue (memory budget: max_queued_bytes in all, max_client_queued_bytes
//       per client connection)                 over budget -> reply {error: "busy: ..."}
//   scoring thread, while not stopped:
//     wait for work; after an idle spell, up to batch_window for more
//     slices = queue.take()     // every small request and one heavy client's share of
//                               // client_images_per_batch images, heavy clients in turn
//     per slice: parse its prompts (task::parse_prompt), copy its images, each value finite
//                                        -> else the request is answered {error}, not scored
//     scores = reward->score(prompts, images of every good slice)   // one call
//                                 throws -> every request of the batch gets {error}
//     requests whose images are all scored -> reply {request_id, rewards, correct}, in order
//     once a reply is sent, the request's frame is freed on the reclaimer's thread, which also
//       returns memory to the system (malloc_trim) once the queue has stayed empty for 0.5 s
//       after large requests
//
// Contract:
// - A malformed request gets an error reply (RewardReply::error non-empty; the RPC itself
//   succeeds) and is counted by kind; it never affects the other requests and never stops the
//   service.
// - Fairness: while several clients wait, each batch holds at most client_images_per_batch images
//   of each: all of every light client (all it has queued fits in one share) and one share of one
//   heavy client, the heavy clients in turn. A small request waits for at most the batch in
//   progress and its own, however large the others' requests are. A lone client fills batches
//   (max_batch_images). See fair_queue.hpp.
// - Memory: requests held (received and not yet answered) never exceed max_queued_bytes; frames
//   are refused by libzmq as their size arrives when above max_request_bytes + 1 MiB; on a tcp://
//   endpoint a connection that sends more than max_request_bytes + 1 MiB + 64 KiB before its
//   answer is closed (rpc::RpcServerOptions::max_message_bytes), so a message of many frames
//   costs at most that much, not its whole size.
// - Replies are pure functions of their requests (clients may retry).
// - Metrics (registry of service "reward"): spotlight_reward_requests_total, _batches_total (reward
//   calls), _images_scored_total, _correct_total, _malformed_total, _errors_total{kind} (wire
//   error kinds, bad_image, bad_prompt, non_finite, score_failed), _rejected_messages_total{reason}
//   (refused before scoring: RPC frame_count, delimiter, header, too_large, message_size (a
//   connection closed above the per-message limit), handshake (a
//   connection that failed its ZMTP/CURVE handshake), the wire error kinds of undecodable
//   payloads, and over_budget), histograms _batch_size_requests, _batch_size_images,
//   _score_seconds, gauges _reward_mean and _reward_std (last scored batch), _queued_bytes and
//   _queued_requests.
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

inline constexpr std::size_t kDefaultMaxBatchImages = 256;
inline constexpr std::size_t kDefaultClientImagesPerBatch = 8;
inline constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{512} << 20;
inline constexpr std::size_t kDefaultMaxClientQueuedBytes = std::size_t{128} << 20;

struct RewardServiceOptions {
  std::string bind = kDefaultRewardBind;                              // ZeroMQ endpoint bind() uses
  std::size_t max_batch = rpc::kDefaultMaxBatch;                      // requests per batch, >= 1
  std::chrono::microseconds batch_window = rpc::kDefaultBatchWindow;  // wait for more, >= 0
  std::size_t max_request_bytes = rpc::kDefaultMaxRequestBytes;       // larger: error reply
  // Close a connection that sends more than max_request_bytes + 1 MiB + 64 KiB before it is
  // answered (rpc::RpcServerOptions::max_message_bytes); false: libzmq holds a message of any
  // number of frames whole before the service can refuse it.
  bool limit_message_bytes = true;
  std::size_t max_batch_images = kDefaultMaxBatchImages;  // images per reward call, >= 1
  // A client's share of a batch while others wait too; >= 1, <= max_batch_images.
  std::size_t client_images_per_batch = kDefaultClientImagesPerBatch;
  // Bytes of requests received and not yet answered, all clients / one client connection;
  // max_request_bytes <= max_client_queued_bytes <= max_queued_bytes.
  std::size_t max_queued_bytes = kDefaultMaxQueuedBytes;
  std::size_t max_client_queued_bytes = kDefaultMaxClientQueuedBytes;
  task::TaskOptions task;     // images must be task.image_size square, 3 channels
  zmqio::CurveOptions curve;  // CURVE server keys of the RPC socket; none: plain text
  // Clients that do not finish the ZMTP/CURVE handshake in this time are dropped; > 0.
  std::chrono::milliseconds handshake_timeout = zmqio::kDefaultHandshakeTimeout;
};

class RewardService {
 public:
  // `registry` receives the metrics (a private one when null); its service must be "reward".
  // Throws std::invalid_argument for a null reward or a registry of another service,
  // task::TaskError for invalid task options, rpc::RpcError for bad batching options,
  // std::invalid_argument for inconsistent budgets.
  RewardService(std::unique_ptr<RewardFunction> reward, RewardServiceOptions options,
                std::shared_ptr<metrics::Registry> registry = nullptr);
  ~RewardService();
  RewardService(const RewardService&) = delete;
  RewardService& operator=(const RewardService&) = delete;

  // Listens on options.bind / on `endpoint`; returns the resolved endpoint ("*" replaced by
  // the port). Throws rpc::RpcError naming the endpoint.
  std::string bind();
  std::string bind(const std::string& endpoint);

  // Serves until stop() or `stop` is requested, then answers the batch being scored and returns
  // (requests still queued get no answer: clients retry). Throws rpc::RpcError on socket
  // failures.
  void run(std::stop_token stop = {});
  void stop();

  // Scores `batch` at once, all in one reward call, as if each request were a client alone:
  // replies[i] answers batch[i] (always ok at the RPC level; failures are RewardReply errors).
  // Never throws for bad input. For tests and in-process use; run() schedules fairly instead.
  std::vector<rpc::RpcReply> handle(std::vector<rpc::RpcRequest> batch);

  rpc::RpcServerCounters rpc_counters() const;
  const std::shared_ptr<metrics::Registry>& registry() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotlight::reward
