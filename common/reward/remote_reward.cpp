#include "common/reward/remote_reward.hpp"

#include <atomic>
#include <random>
#include <sstream>

#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"
#include "common/zmq/curve_config.hpp"

namespace spotlight::reward {
namespace {

// A prefix that makes request ids unique across clients and processes.
std::string instance_prefix() {
  static std::atomic<std::uint64_t> instances{0};
  std::random_device device;
  std::ostringstream out;
  out << std::hex << device() << device() << '.' << instances++;
  return out.str();
}

}  // namespace

struct RemoteReward::Impl {
  explicit Impl(RemoteRewardOptions o)
      : options(std::move(o)), client(options.endpoint, options.rpc), prefix(instance_prefix()) {
    if (options.max_images_per_request < 1) {
      throw std::invalid_argument("remote reward: max_images_per_request must be >= 1");
    }
    if (options.content != "images" && options.content != "latents") {
      throw std::invalid_argument("remote reward: content must be images or latents");
    }
  }
  // Scores images [begin, end) (all of one size) with one request into `out`.
  void score_piece(const std::vector<task::Prompt>& prompts, const std::vector<task::Image>& images,
                   std::size_t begin, std::size_t end, std::vector<Scored>& out);

  RemoteRewardOptions options;
  rpc::RpcClient client;
  std::string prefix;
  std::uint64_t next_request = 0;
  RewardRange declared = options.range;  // of the latest reply
};

void RemoteReward::Impl::score_piece(const std::vector<task::Prompt>& prompts,
                                     const std::vector<task::Image>& images, std::size_t begin,
                                     std::size_t end, std::vector<Scored>& out) {
  wire::RewardRequest request;
  request.request_id = prefix + "-" + std::to_string(next_request++);
  request.width = images[begin].width;
  request.height = images[begin].height;
  request.channels = images[begin].channels;
  request.content = options.content;
  request.count = static_cast<std::int64_t>(end - begin);
  const std::size_t per_image =
      static_cast<std::size_t>(request.width) * request.height * request.channels;
  request.images.reserve(per_image * (end - begin));
  for (std::size_t i = begin; i < end; ++i) {
    request.prompts.push_back(prompts[i].text());
    request.images.insert(request.images.end(), images[i].rgb.begin(), images[i].rgb.end());
  }

  const std::string bytes = client.call(request.encode());
  wire::RewardReply reply;
  try {
    reply = wire::RewardReply::decode(bytes);
  } catch (const wire::WireError& e) {
    throw RemoteRewardError("remote reward " + options.endpoint + ": malformed reply to '" +
                                request.request_id + "': " + e.what(),
                            request.request_id);
  }
  if (!reply.ok()) {
    throw RemoteRewardError("remote reward " + options.endpoint + ": request '" +
                                request.request_id + "' rejected: " + reply.error,
                            request.request_id);
  }
  if (reply.request_id != request.request_id || reply.rewards.size() != end - begin) {
    throw RemoteRewardError(
        "remote reward " + options.endpoint + ": reply for '" + reply.request_id + "' with " +
            std::to_string(reply.rewards.size()) + " rewards does not answer '" +
            request.request_id + "' with " + std::to_string(end - begin) + " images",
        request.request_id);
  }
  declared = reply.range.empty() ? options.range : RewardRange{reply.range[0], reply.range[1]};
  const std::size_t parts = reply.components.size();
  for (std::size_t i = 0; i < reply.rewards.size(); ++i) {
    Scored scored{reply.rewards[i], reply.correct[i], {}};
    for (std::size_t j = 0; j < parts; ++j) {
      scored.components.emplace_back(reply.components[j], reply.component_rewards[i * parts + j]);
    }
    out.push_back(std::move(scored));
  }
}

RemoteReward::RemoteReward(RemoteRewardOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

RemoteReward::~RemoteReward() = default;
RemoteReward::RemoteReward(RemoteReward&&) noexcept = default;
RemoteReward& RemoteReward::operator=(RemoteReward&&) noexcept = default;

std::vector<Scored> RemoteReward::score(const std::vector<task::Prompt>& prompts,
                                        const std::vector<task::Image>& images) {
  if (prompts.size() != images.size()) {
    throw std::invalid_argument("remote reward: " + std::to_string(prompts.size()) +
                                " prompts for " + std::to_string(images.size()) + " images");
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto& im = images[i];
    if (im.width < 0 || im.height < 0 || im.channels < 1 ||
        im.rgb.size() != static_cast<std::size_t>(im.width) * im.height * im.channels) {
      throw std::invalid_argument("remote reward: images[" + std::to_string(i) + "] has " +
                                  std::to_string(im.rgb.size()) + " values for " +
                                  std::to_string(im.width) + "x" + std::to_string(im.height) + "x" +
                                  std::to_string(im.channels));
    }
  }
  std::vector<Scored> out;
  out.reserve(images.size());
  std::size_t begin = 0;
  while (begin < images.size()) {
    std::size_t end = begin + 1;
    while (end < images.size() && end - begin < impl_->options.max_images_per_request &&
           images[end].width == images[begin].width && images[end].height == images[begin].height &&
           images[end].channels == images[begin].channels) {
      ++end;
    }
    impl_->score_piece(prompts, images, begin, end, out);
    begin = end;
  }
  return out;
}

std::string RemoteReward::name() const {
  return "remote(" + impl_->options.endpoint + ")";
}

RewardRange RemoteReward::range() const {
  return impl_->declared;
}

rpc::RpcClientCounters RemoteReward::counters() const {
  return impl_->client.counters();
}

std::optional<RemoteRewardOptions> remote_reward_options(const config::Config& config) {
  RemoteRewardOptions options;
  options.endpoint = config.get_string("reward.endpoint");
  // CURVE keys are checked even without an endpoint: a key file named in vain is a mistake.
  options.rpc.curve = zmqio::curve_client_options(config, "reward.curve.server_public_file",
                                                  "reward.curve.client_secret_file");
  if (options.endpoint.empty()) return std::nullopt;
  options.rpc.timeout = std::chrono::milliseconds(config.get_int("reward.timeout_ms"));
  options.rpc.retries = config.get<int>("reward.retries");
  options.max_images_per_request = config.get<std::size_t>("reward.max_images_per_request");
  options.content = config.get_string("reward.input");
  const auto& range = config.get_double_list("reward.range");
  options.range = RewardRange{range[0], range[1]};  // checked by the schema
  return options;
}

}  // namespace spotlight::reward
