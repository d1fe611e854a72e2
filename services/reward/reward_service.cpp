#include "services/reward/reward_service.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <variant>

#include "common/log/log.hpp"
#include "common/task/prompt.hpp"
#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::reward {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kBadImage = "bad_image";
constexpr std::string_view kBadPrompt = "bad_prompt";
constexpr std::string_view kScoreFailed = "score_failed";

constexpr wire::WireErrorKind kWireErrorKinds[] = {
    wire::WireErrorKind::kTooLarge,       wire::WireErrorKind::kNotMsgpack,
    wire::WireErrorKind::kBadEnvelope,    wire::WireErrorKind::kUnknownType,
    wire::WireErrorKind::kUnexpectedType, wire::WireErrorKind::kUnsupportedVersion,
    wire::WireErrorKind::kMissingField,   wire::WireErrorKind::kWrongType,
    wire::WireErrorKind::kBadValue,
};

// A request whose content is usable: its prompts and images, and where its scores go.
struct Pending {
  std::size_t index = 0;  // in the batch
  std::string request_id;
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
};

// Why a request cannot be scored.
struct Rejection {
  std::string kind;  // metric label
  std::string message;
  std::string request_id;  // empty when the request could not be decoded
  bool wire = false;       // the message itself was malformed (not its content)
};

std::string error_reply(const std::string& request_id, const std::string& message) {
  wire::RewardReply reply;
  reply.request_id = request_id;
  reply.error = message;
  return reply.encode();
}

}  // namespace

struct RewardService::Impl {
  Impl(std::unique_ptr<RewardFunction> r, RewardServiceOptions o,
       std::shared_ptr<metrics::Registry> reg);

  // Decodes and checks one request; a Pending to score or the reason it is rejected.
  std::variant<Pending, Rejection> prepare(std::size_t index, const std::string& payload) const;
  void count_error(std::string_view kind, std::size_t n = 1);

  std::unique_ptr<RewardFunction> reward;
  RewardServiceOptions options;
  std::shared_ptr<metrics::Registry> registry;
  std::mutex handle_mutex;  // one batch at a time through the (thread-compatible) reward
  std::optional<rpc::RpcServer> server;

  metrics::Counter requests, batches, images_scored, correct, malformed;
  std::map<std::string, metrics::Counter, std::less<>> errors;  // by kind
  // Messages rejected before scoring (RPC framing, size, wire decoding), by reason.
  std::map<std::string, metrics::Counter, std::less<>> rejected;
  void count_rejected(std::string_view reason) {
    auto it = rejected.find(reason);
    if (it != rejected.end()) it->second.inc();
  }
  metrics::Histogram batch_requests, batch_images, score_seconds;
  metrics::Gauge reward_mean, reward_std;
};

RewardService::Impl::Impl(std::unique_ptr<RewardFunction> r, RewardServiceOptions o,
                          std::shared_ptr<metrics::Registry> reg)
    : reward(std::move(r)), options(std::move(o)), registry(std::move(reg)) {
  if (!reward) throw std::invalid_argument("reward service: reward function is null");
  options.task.validate();
  if (!registry) registry = std::make_shared<metrics::Registry>("reward");
  if (registry->service() != "reward") {
    throw std::invalid_argument("reward service: metrics registry is for service '" +
                                registry->service() + "', expected 'reward'");
  }
  auto& m = *registry;
  requests = m.counter("spotlight_reward_requests_total", "Requests received.");
  batches = m.counter("spotlight_reward_batches_total", "Batches handled (one reward call each).");
  images_scored = m.counter("spotlight_reward_images_scored_total", "Images scored.");
  correct = m.counter("spotlight_reward_correct_total", "Images scored as strictly correct.");
  malformed = m.counter("spotlight_reward_malformed_total",
                        "Requests rejected for their content (wire errors, bad images/prompts).");
  const std::string errors_help = "Error replies by kind.";
  for (wire::WireErrorKind kind : kWireErrorKinds) {
    const std::string k(wire::to_string(kind));
    errors[k] = m.counter("spotlight_reward_errors_total", errors_help, {{"kind", k}});
  }
  for (std::string_view kind : {kBadImage, kBadPrompt, kScoreFailed}) {
    const std::string k(kind);
    errors[k] = m.counter("spotlight_reward_errors_total", errors_help, {{"kind", k}});
  }
  const std::string rejected_help =
      "Messages rejected before scoring (RPC framing, size, wire decoding), by reason.";
  std::vector<std::string> reasons = {"frame_count", "delimiter", "header", "too_large",
                                      "handshake"};
  for (wire::WireErrorKind kind : kWireErrorKinds)
    reasons.emplace_back(wire::to_string(kind));
  for (const auto& reason : reasons) {
    rejected.try_emplace(reason, m.counter("spotlight_reward_rejected_messages_total",
                                           rejected_help, {{"reason", reason}}));
  }
  batch_requests = m.histogram("spotlight_reward_batch_size_requests", "Requests per batch.",
                               metrics::exponential_buckets(1, 2, 11));
  batch_images = m.histogram("spotlight_reward_batch_size_images", "Images scored per batch.",
                             metrics::exponential_buckets(1, 2, 14));
  score_seconds =
      m.histogram("spotlight_reward_score_seconds", "Time of the reward function call of a batch.",
                  metrics::exponential_buckets(1e-5, 4, 12));
  reward_mean = m.gauge("spotlight_reward_reward_mean", "Mean reward of the last scored batch.");
  reward_std = m.gauge("spotlight_reward_reward_std",
                       "Standard deviation of the rewards of the last scored batch.");
}

void RewardService::Impl::count_error(std::string_view kind, std::size_t n) {
  auto it = errors.find(kind);
  if (it != errors.end()) it->second.inc(static_cast<double>(n));
}

std::variant<Pending, Rejection> RewardService::Impl::prepare(std::size_t index,
                                                              const std::string& payload) const {
  wire::DecodeOptions decode_options;
  decode_options.max_bytes = options.max_request_bytes;
  wire::RewardRequest request;
  try {
    request = wire::RewardRequest::decode(payload, decode_options);
  } catch (const wire::WireError& e) {
    return Rejection{std::string(wire::to_string(e.kind())), e.what(), {}, true};
  }
  const std::string what = "reward_request '" + request.request_id + "'";
  if (request.content != wire::RewardRequest::kImages) {
    return Rejection{std::string(kBadImage),
                     what + ": carries " + request.content +
                         "; this service scores images (decode latents in a reward service of "
                         "your own: docs/reward-protocol.md)",
                     request.request_id};
  }
  const int size = options.task.image_size;
  if (request.count > 0 &&
      (request.channels != 3 || request.width != size || request.height != size)) {
    return Rejection{std::string(kBadImage),
                     what + ": images are " + std::to_string(request.width) + "x" +
                         std::to_string(request.height) + "x" + std::to_string(request.channels) +
                         ", this service scores " + std::to_string(size) + "x" +
                         std::to_string(size) + "x3",
                     request.request_id};
  }
  Pending pending;
  pending.index = index;
  pending.request_id = request.request_id;
  pending.prompts.reserve(request.prompts.size());
  for (std::size_t i = 0; i < request.prompts.size(); ++i) {
    auto prompt = task::parse_prompt(request.prompts[i]);
    if (!prompt) {
      return Rejection{std::string(kBadPrompt),
                       what + ": prompts[" + std::to_string(i) + "] '" + request.prompts[i] +
                           "' is not a prompt of the embedded task",
                       request.request_id};
    }
    pending.prompts.push_back(std::move(*prompt));
  }
  const std::size_t per_image = static_cast<std::size_t>(size) * size * 3;
  pending.images.reserve(pending.prompts.size());
  for (std::size_t i = 0; i < pending.prompts.size(); ++i) {
    const auto first = request.images.begin() + static_cast<std::ptrdiff_t>(i * per_image);
    pending.images.push_back(task::Image{
        size, size, std::vector<float>(first, first + static_cast<std::ptrdiff_t>(per_image))});
  }
  return pending;
}

RewardService::RewardService(std::unique_ptr<RewardFunction> reward, RewardServiceOptions options,
                             std::shared_ptr<metrics::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(reward), std::move(options), std::move(registry))) {
  rpc::RpcServerOptions rpc_options;
  rpc_options.max_batch = impl_->options.max_batch;
  rpc_options.batch_window = impl_->options.batch_window;
  rpc_options.max_request_bytes = impl_->options.max_request_bytes;
  rpc_options.curve = impl_->options.curve;
  rpc_options.handshake_timeout = impl_->options.handshake_timeout;
  rpc_options.on_reject = [impl = impl_.get()](std::string_view reason) {
    impl->count_rejected(reason);
  };
  rpc_options.max_message_size =
      std::max<std::int64_t>(rpc::kDefaultRpcMaxMessageSize,
                             static_cast<std::int64_t>(impl_->options.max_request_bytes) + 4096);
  impl_->server.emplace(
      [this](std::vector<rpc::RpcRequest> batch) { return handle(std::move(batch)); }, rpc_options);
}

RewardService::~RewardService() = default;

std::string RewardService::bind() {
  return bind(impl_->options.bind);
}

std::string RewardService::bind(const std::string& endpoint) {
  return impl_->server->bind(endpoint);
}

void RewardService::run(std::stop_token stop) {
  impl_->server->run(std::move(stop));
}

void RewardService::stop() {
  impl_->server->stop();
}

std::vector<rpc::RpcReply> RewardService::handle(std::vector<rpc::RpcRequest> batch) {
  Impl& s = *impl_;
  std::lock_guard lock(s.handle_mutex);
  s.batches.inc();
  s.requests.inc(static_cast<double>(batch.size()));
  s.batch_requests.observe(static_cast<double>(batch.size()));

  std::vector<rpc::RpcReply> replies(batch.size(), rpc::RpcReply(std::string()));
  std::vector<Pending> pending;
  std::vector<task::Prompt> prompts;
  std::vector<task::Image> images;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto prepared = s.prepare(i, batch[i].payload);
    if (auto* rejection = std::get_if<Rejection>(&prepared)) {
      s.malformed.inc();
      s.count_error(rejection->kind);
      if (rejection->wire) s.count_rejected(rejection->kind);
      SPOTLIGHT_LOG(debug) << "rejected request " << batch[i].id << ": " << rejection->message;
      replies[i] = rpc::RpcReply(error_reply(rejection->request_id, rejection->message));
      continue;
    }
    auto& p = std::get<Pending>(prepared);
    prompts.insert(prompts.end(), p.prompts.begin(), p.prompts.end());
    for (auto& image : p.images)
      images.push_back(std::move(image));
    p.images.clear();
    pending.push_back(std::move(p));
  }
  if (pending.empty()) return replies;

  std::vector<Scored> scores;
  std::string failure;
  const auto started = Clock::now();
  if (!images.empty()) {
    try {
      scores = s.reward->score(prompts, images);
      if (scores.size() != images.size()) {
        failure = "reward function '" + s.reward->name() + "' returned " +
                  std::to_string(scores.size()) + " scores for " + std::to_string(images.size()) +
                  " images";
      }
    } catch (const std::exception& e) {
      failure = "reward function '" + s.reward->name() + "' failed: " + e.what();
    }
    s.score_seconds.observe(std::chrono::duration<double>(Clock::now() - started).count());
  }
  if (!failure.empty()) {
    log::error("batch of {} requests: {}", pending.size(), failure);
    s.count_error(kScoreFailed, pending.size());
    for (const auto& p : pending)
      replies[p.index] = rpc::RpcReply(error_reply(p.request_id, failure));
    return replies;
  }

  std::size_t next = 0;
  double sum = 0.0, sum_sq = 0.0;
  std::size_t n_correct = 0;
  for (const auto& p : pending) {
    wire::RewardReply reply;
    reply.request_id = p.request_id;
    for (std::size_t j = 0; j < p.prompts.size(); ++j, ++next) {
      reply.rewards.push_back(scores[next].reward);
      reply.correct.push_back(scores[next].correct);
      sum += scores[next].reward;
      sum_sq += scores[next].reward * scores[next].reward;
      n_correct += scores[next].correct ? 1 : 0;
    }
    replies[p.index] = rpc::RpcReply(reply.encode());
  }
  if (!scores.empty()) {
    const double n = static_cast<double>(scores.size());
    const double mean = sum / n;
    s.images_scored.inc(n);
    s.correct.inc(static_cast<double>(n_correct));
    s.batch_images.observe(n);
    s.reward_mean.set(mean);
    s.reward_std.set(std::sqrt(std::max(0.0, sum_sq / n - mean * mean)));
  }
  return replies;
}

rpc::RpcServerCounters RewardService::rpc_counters() const {
  return impl_->server->counters();
}

const std::shared_ptr<metrics::Registry>& RewardService::registry() const {
  return impl_->registry;
}

}  // namespace spotlight::reward
