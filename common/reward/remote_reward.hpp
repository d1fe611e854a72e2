#pragma once
// RemoteReward: a reward::RewardFunction that scores through the reward service, so explorers
// and the trainer can swap it in for the in-process reward.
//
//   if (auto o = reward::remote_reward_options(cfg)) reward = std::make_unique<RemoteReward>(*o);
//   std::vector<reward::Scored> s = reward->score(prompts, images);
//
// score() is equivalent to:
//
//   for each run of consecutive images of one size and channel count, in pieces of
//   max_images_per_request:
//     reply = rpc call(RewardRequest{fresh request_id, prompt texts, images, content})
//                                                          // retried on timeout
//     reply.error non-empty or reply not for this request -> throw RemoteRewardError
//     declared = reply.range if the reply declares one, else options.range
//   return the rewards (and the reply's named components, if any) in image order
//
// range() is `declared` of the latest reply: rewards are returned as the service sent them, and
// the caller checks each against range() (reward_fault()) before using it.
//
// Contract: thread-compatible like every RewardFunction (one caller at a time per instance; use
// one instance per thread for parallel calls). Requests are idempotent, so retries are safe.
// The service does not have to be up when a RemoteReward is created.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config/config.hpp"
#include "common/config/schema.hpp"
#include "common/reward/reward_function.hpp"
#include "common/rpc/client.hpp"

namespace spotlight::reward {

inline constexpr const char* kDefaultRewardEndpoint = "tcp://127.0.0.1:5557";
inline constexpr std::size_t kDefaultMaxImagesPerRequest = 256;
// The defaults of the reward.* client keys (scoring a batch of images takes longer than an RPC's
// default attempt).
inline constexpr std::chrono::milliseconds kDefaultRewardTimeout{10000};
inline constexpr int kDefaultRewardRetries = 2;

struct RemoteRewardOptions {
  std::string endpoint = kDefaultRewardEndpoint;
  // What the images are (wire::RewardRequest::content): "images" (RGB) or "latents" (raw
  // latents, channels-last, task::Image::channels of them).
  std::string content = "images";
  rpc::RpcClientOptions rpc;  // per-attempt timeout, retries after the first attempt, CURVE
  std::size_t max_images_per_request = kDefaultMaxImagesPerRequest;  // >= 1
  // The range of a service that declares none in its replies (reward.range).
  RewardRange range = kUnitRewardRange;
};

// The service answered, but not with scores for this request: it rejected it (the message is
// the service's reason), or its reply is malformed or for another request.
class RemoteRewardError : public std::runtime_error {
 public:
  RemoteRewardError(const std::string& message, std::string request_id)
      : std::runtime_error(message), request_id_(std::move(request_id)) {}
  const std::string& request_id() const { return request_id_; }

 private:
  std::string request_id_;
};

class RemoteReward final : public RewardFunction {
 public:
  // Does not connect yet. Throws std::invalid_argument for max_images_per_request == 0,
  // rpc::RpcError for bad RPC options.
  explicit RemoteReward(RemoteRewardOptions options = {});
  ~RemoteReward() override;
  RemoteReward(RemoteReward&&) noexcept;
  RemoteReward& operator=(RemoteReward&&) noexcept;

  // One Scored per image, in order. Throws std::invalid_argument when the counts differ or an
  // image's pixel count does not match its size, task::TaskError for an invalid prompt,
  // RemoteRewardError (see above), rpc::RpcTimeout when the service does not answer after every
  // retry, rpc::RpcRemoteError when its RPC layer refuses the request (e.g. larger than its
  // max_request_bytes).
  std::vector<Scored> score(const std::vector<task::Prompt>& prompts,
                            const std::vector<task::Image>& images) override;
  std::string name() const override;   // "remote(<endpoint>)"
  RewardRange range() const override;  // see above

  rpc::RpcClientCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The one schema fragment of the reward service's clients (the run schema adds it; the service
// itself has server keys only): reward.endpoint (empty: score in-process), reward.timeout_ms
// (per attempt), reward.retries (attempts after the first), reward.max_images_per_request,
// reward.range (of a service that declares none), reward.curve.server_public_file,
// reward.curve.client_secret_file.
config::Schema remote_reward_schema();
// The client's options; std::nullopt when reward.endpoint is empty. Throws config::ConfigError
// naming a CURVE key file that is unusable.
std::optional<RemoteRewardOptions> remote_reward_options(const config::Config& config);

}  // namespace spotlight::reward
