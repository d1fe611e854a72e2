#include "tests/fuzz/fuzz_targets.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "common/bus/detail/framing.hpp"
#include "common/metrics/detail/http_request.hpp"
#include "common/rpc/detail/protocol.hpp"
#include "common/wire/codec.hpp"
#include "common/wire/dispatcher.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::fuzz {
namespace {

void require(bool ok, std::string_view target, std::string_view what) {
  if (!ok) throw FuzzPropertyViolation(std::string(target) + ": " + std::string(what));
}

// Small limits, so the fuzzer also explores the limit checks (the defaults are 64 MiB).
wire::DecodeOptions small_limits() {
  wire::DecodeOptions o;
  o.max_bytes = 1 << 16;
  o.max_elements = 4096;
  o.max_depth = 8;
  return o;
}

// --- wire messages ------------------------------------------------------------------------------

std::vector<std::string> sample_messages() {
  wire::SeedTask task;
  task.run_id = "run-1";
  task.iteration = 3;
  task.prompt_index = 2;
  task.prompt_text = "two red squares left of a blue disc";
  task.seed = 0xfeedfacecafebeefULL;
  task.weights_version = 2;
  task.sampler_steps = 10;
  task.deadline_unix_ms = 1'700'000'000'000;
  wire::SeedResult result;
  result.task_id = "3:2:7";
  result.run_id = "run-1";
  result.seed = 42;
  result.reward = 0.75;
  result.correct = true;
  result.explorer_id = "explorer-a";
  result.sample_seconds = 1.5;
  wire::InflightCommit commit;
  commit.task_id = "3:2:7";
  commit.seed = 42;
  commit.step_index = 4;
  commit.latent = {0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, 3.5f};
  commit.latent_shape = {1, 2, 3};
  wire::SeedTrajectory trajectory;
  trajectory.task_id = "i3/p2/c7";
  trajectory.run_id = "run-1";
  trajectory.seed = 42;
  trajectory.weights_version = 2;
  trajectory.weights_checksum = "0123456789abcdef";
  trajectory.sampler_steps = 3;
  trajectory.noise_level = 0.7;
  trajectory.step_begin = 0;
  trajectory.step_end = 2;
  trajectory.latent_shape = {2};
  trajectory.latents = {0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, 3.5f};
  trajectory.log_probs = {-1.0f, 0.25f};
  trajectory.checksum = "fedcba9876543210";
  wire::WeightsNotice notice;
  notice.version = 7;
  notice.checksum = "0123456789abcdef";
  notice.location = "spotlight:run-1:weights:7";
  notice.bytes = 1 << 20;
  wire::IterationEvent event;
  event.run_id = "run-1";
  event.iteration = 4;
  event.kind = wire::IterationKind::kTrained;
  event.version = 5;
  wire::RewardRequest request;
  request.request_id = "r-1";
  request.prompts = {"a red square", "two blue discs"};
  request.width = 2;
  request.height = 1;
  request.count = 2;
  request.channels = 3;
  request.images.assign(2 * 2 * 1 * 3, 0.25f);
  wire::RewardReply reply;
  reply.request_id = "r-1";
  reply.rewards = {0.5, 1.0};
  reply.correct = {false, true};
  wire::RewardReply failed;
  failed.request_id = "r-2";
  failed.error = "bad image";
  wire::Heartbeat heartbeat;
  heartbeat.explorer_id = "explorer-a";
  heartbeat.unix_ms = 1'700'000'000'000;
  heartbeat.tasks_in_flight = 3;
  heartbeat.samples_per_second = 12.5;
  wire::RewardRequest latents = request;  // version 2: raw latents, 2 channels
  latents.content = std::string(wire::RewardRequest::kLatents);
  latents.channels = 2;
  latents.images.resize(static_cast<std::size_t>(2 * 2 * 1 * 2), 0.25f);
  wire::RewardReply parts = reply;  // with named reward components
  parts.components = {"ocr", "aesthetic"};
  parts.component_rewards = {0.1, 0.2, 0.3, 0.4};
  const wire::TrainerProgress progress{.iteration = 7, .finished = false, .unix_ms = 1};
  const wire::TrainerTiming timing{.iteration = 6,
                                   .iteration_seconds = 12.5,
                                   .explore_seconds = 0.5,
                                   .rollout_seconds = 7.0,
                                   .train_seconds = 5.0,
                                   .group_variance = 0.03};
  const wire::PlanRecord plan{
      .iteration = 8, .candidates = 16, .steps = 6, .reason = R"({"policy":"bandit"})"};
  const wire::PlannerProgress planned{.enqueued_through = 8, .unix_ms = 2};
  const wire::PromptPosterior posterior{
      .prompt_text = "a blue disc", .a = 2.5, .b = 3.5, .updated_through = 4};
  std::vector<std::string> out{task.encode(),
                               result.encode(),
                               commit.encode(),
                               trajectory.encode(),
                               notice.encode(),
                               event.encode(),
                               request.encode(),
                               reply.encode(),
                               failed.encode(),
                               heartbeat.encode(),
                               progress.encode(),
                               timing.encode(),
                               plan.encode(),
                               planned.encode(),
                               latents.encode(),
                               parts.encode(),
                               wire::Writer("unknown_type", 1).str("x", "y").finish()};
  out.push_back(posterior.encode());
  return out;
}

std::vector<std::string> wire_seeds() {
  return sample_messages();
}

// decode() is total (a message or a WireError), and what it returns survives a round trip:
// encode(decode(encode(m))) == encode(m). (Compared as bytes, so NaN fields compare equal.)
// Also: the limits only ever reject more. What decodes under the small limits decodes the same
// under the production defaults.
template <class M>
void fuzz_message(std::string_view input) {
  std::optional<M> with_defaults;
  try {
    with_defaults = M::decode(input);
  } catch (const wire::WireError&) {
  }
  M m;
  try {
    m = M::decode(input, small_limits());
  } catch (const wire::WireError&) {
    return;
  }
  require(with_defaults.has_value(), M::kType, "decodes under small limits only");
  const std::string once = m.encode();
  require(with_defaults->encode() == once, M::kType, "limits change the decoded message");
  M again;
  try {
    again = M::decode(once);
  } catch (const wire::WireError& e) {
    throw FuzzPropertyViolation(std::string(M::kType) +
                                ": re-encoded message does not decode: " + e.what());
  }
  require(again.encode() == once, M::kType, "encode(decode(encode(m))) != encode(m)");
}

void fuzz_wire_dispatch(std::string_view input) {
  static const wire::Dispatcher dispatcher = [] {
    wire::Dispatcher d;
    d.on<wire::SeedTask>([](wire::SeedTask) {});
    d.on<wire::SeedResult>([](wire::SeedResult) {});
    d.on<wire::InflightCommit>([](wire::InflightCommit) {});
    d.on<wire::SeedTrajectory>([](wire::SeedTrajectory) {});
    d.on<wire::WeightsNotice>([](wire::WeightsNotice) {});
    d.on<wire::IterationEvent>([](wire::IterationEvent) {});
    d.on<wire::RewardRequest>([](wire::RewardRequest) {});
    d.on<wire::RewardReply>([](wire::RewardReply) {});
    d.on<wire::Heartbeat>([](wire::Heartbeat) {});
    d.on<wire::TrainerProgress>([](wire::TrainerProgress) {});
    d.on<wire::TrainerTiming>([](wire::TrainerTiming) {});
    d.on<wire::PlanRecord>([](wire::PlanRecord) {});
    d.on<wire::PlannerProgress>([](wire::PlannerProgress) {});
    d.on<wire::PromptPosterior>([](wire::PromptPosterior) {});
    return d;
  }();
  std::optional<wire::MessageHeader> peeked;
  try {
    peeked = wire::peek_type(input, small_limits());
  } catch (const wire::WireError&) {
  }
  try {
    const wire::MessageHeader header = dispatcher.dispatch(input, small_limits());
    // A message that dispatches has an envelope that peek_type reads the same way.
    require(peeked.has_value() && *peeked == header, "wire_dispatch", "peek_type disagrees");
    require(wire::is_known_type(header.type), "wire_dispatch", "dispatched an unknown type");
  } catch (const wire::WireError& e) {
    if (e.kind() == wire::WireErrorKind::kUnknownType) {
      require(peeked.has_value() && !wire::is_known_type(peeked->type), "wire_dispatch",
              "kUnknownType for a known type");
    }
  }
}

// --- rpc framing --------------------------------------------------------------------------------

constexpr std::size_t kFuzzMaxRequestBytes = 64;

std::vector<std::string> rpc_request_seeds() {
  const std::string header = rpc::detail::encode_request_header(0x0102030405060708ULL);
  return {pack_frames({"", header, "payload"}),
          pack_frames({"", header, std::string(kFuzzMaxRequestBytes + 1, 'x')}),
          pack_frames({"", header, sample_messages()[5]}),
          pack_frames({"x", header, "p"}),
          pack_frames({"", "short", "p"}),
          pack_frames({"", header, "p", "extra"})};
}

void fuzz_rpc_request(std::string_view input) {
  const auto frames = unpack_frames(input);
  const rpc::detail::ParsedRequest r = rpc::detail::parse_request(frames, kFuzzMaxRequestBytes);
  if (r.reject == zmqio::FrameReject::kNone) {
    require(frames.size() == 3 && frames[0].empty(), "rpc_request", "accepted a bad envelope");
    require(r.id.has_value() && rpc::detail::encode_request_header(*r.id) == frames[1],
            "rpc_request", "header does not round-trip");
    require(r.payload == frames[2], "rpc_request", "payload is not the third frame");
    require(r.payload.size() <= kFuzzMaxRequestBytes, "rpc_request", "accepted an oversized one");
    require(r.status == rpc::RpcStatus::kOk && r.error.empty(), "rpc_request", "ok with an error");
  } else {
    require(r.status != rpc::RpcStatus::kOk && !r.error.empty(), "rpc_request",
            "rejected without an error answer");
    require((r.reject == zmqio::FrameReject::kTooLarge) == (r.status == rpc::RpcStatus::kTooLarge),
            "rpc_request", "too_large and kTooLarge disagree");
  }
}

std::vector<std::string> rpc_reply_seeds() {
  std::vector<std::string> out;
  for (auto status : {rpc::RpcStatus::kOk, rpc::RpcStatus::kHandlerError,
                      rpc::RpcStatus::kMalformed, rpc::RpcStatus::kTooLarge}) {
    out.push_back(pack_frames({"", rpc::detail::encode_reply_header(99, status), "body"}));
  }
  out.push_back(pack_frames({"", "0123456789", "body"}));
  return out;
}

void fuzz_rpc_reply(std::string_view input) {
  const auto frames = unpack_frames(input);
  const auto reply = rpc::detail::parse_reply(frames);
  if (!reply) return;
  require(frames.size() == 3 && frames[0].empty(), "rpc_reply", "accepted a bad envelope");
  require(rpc::detail::encode_reply_header(reply->header.id, reply->header.status) == frames[1],
          "rpc_reply", "header does not round-trip");
  require(reply->body == frames[2], "rpc_reply", "body is not the third frame");
}

// --- bus framing --------------------------------------------------------------------------------

std::vector<std::string> bus_notice_seeds() {
  const std::string v7 = zmqio::encode_u64(7);
  return {pack_frames({"weights", v7, sample_messages()[3]}),
          pack_frames({std::string(bus::detail::kAckTopicPrefix) + "abc/1", zmqio::encode_u64(0),
                       "instance"}),
          pack_frames({"weights", "short", "p"}), pack_frames({"weights", v7})};
}

void fuzz_bus_notice(std::string_view input) {
  const auto frames = unpack_frames(input);
  const bus::detail::ParsedNotice n = bus::detail::parse_notice(frames);
  if (n.reject != zmqio::FrameReject::kNone) {
    require(n.topic.empty() && n.payload.empty() && n.version == 0, "bus_notice",
            "rejected notice has fields");
    return;
  }
  require(frames.size() == bus::detail::kNoticeFrames, "bus_notice", "wrong frame count accepted");
  require(zmqio::encode_u64(n.version) == frames[1], "bus_notice", "version round trip");
  require(n.topic == frames[0] && n.payload == frames[2], "bus_notice", "frames mixed up");
  require(n.control == n.topic.starts_with(bus::detail::kAckTopicPrefix), "bus_notice",
          "control flag wrong");
}

std::vector<std::string> bus_subscription_seeds() {
  return {std::string("\x01weights", 8), std::string("\x00weights", 8),
          std::string("\x01") + std::string(bus::detail::kAckTopicPrefix) + "abc/1", "garbage"};
}

void fuzz_bus_subscription(std::string_view input) {
  const auto s = bus::detail::parse_subscription(input);
  if (!s) return;
  const std::string again = std::string(1, s->subscribe ? '\x01' : '\x00') + std::string(s->topic);
  require(again == input, "bus_subscription", "does not round-trip");
}

// --- metrics HTTP -------------------------------------------------------------------------------

constexpr std::size_t kFuzzMaxHttpBytes = 256;

std::vector<std::string> metrics_http_seeds() {
  return {"GET /metrics HTTP/1.1\r\nHost: localhost:9100\r\nAccept: */*\r\n\r\n",
          "GET /metrics?x=1 HTTP/1.0\r\n\r\n",
          "POST /metrics HTTP/1.1\r\n\r\n",
          "GET / HTTP/1.1\r\n\r\n",
          "GET /metrics HTTP/1.1\r\n",
          "GET /metrics HTTP/1.1\r\nX: " + std::string(kFuzzMaxHttpBytes, 'a') + "\r\n\r\n"};
}

void fuzz_metrics_http(std::string_view input) {
  using metrics::detail::HttpHeadStatus;
  const auto head = metrics::detail::parse_request_head(input, kFuzzMaxHttpBytes);
  const std::string_view window = input.substr(0, kFuzzMaxHttpBytes);
  const bool terminated = window.find("\r\n\r\n") != std::string_view::npos;
  switch (head.status) {
    case HttpHeadStatus::kIncomplete:
      require(!terminated && input.size() < kFuzzMaxHttpBytes, "metrics_http", "bad incomplete");
      break;
    case HttpHeadStatus::kTooLarge:
      require(!terminated && input.size() >= kFuzzMaxHttpBytes, "metrics_http", "bad too_large");
      break;
    case HttpHeadStatus::kBadRequest:
      require(terminated, "metrics_http", "bad_request before the head ended");
      break;
    case HttpHeadStatus::kOk:
      require(terminated && !head.method.empty() && head.target.starts_with("/"), "metrics_http",
              "ok without method and target");
      require(std::all_of(head.method.begin(), head.method.end(),
                          [](char c) { return c >= 'A' && c <= 'Z'; }),
              "metrics_http", "method not upper case");
      require(std::all_of(head.target.begin(), head.target.end(),
                          [](char c) { return c > ' ' && c <= '~'; }),
              "metrics_http", "target has spaces or control bytes");
      require(head.method.data() >= window.data() &&
                  head.target.data() + head.target.size() <= window.data() + window.size(),
              "metrics_http", "views outside the head");
      break;
  }
}

const FuzzTarget kTargets[] = {
    {"wire_seed_task", fuzz_message<wire::SeedTask>, wire_seeds},
    {"wire_seed_result", fuzz_message<wire::SeedResult>, wire_seeds},
    {"wire_inflight_commit", fuzz_message<wire::InflightCommit>, wire_seeds},
    {"wire_seed_trajectory", fuzz_message<wire::SeedTrajectory>, wire_seeds},
    {"wire_weights_notice", fuzz_message<wire::WeightsNotice>, wire_seeds},
    {"wire_iteration_event", fuzz_message<wire::IterationEvent>, wire_seeds},
    {"wire_reward_request", fuzz_message<wire::RewardRequest>, wire_seeds},
    {"wire_reward_reply", fuzz_message<wire::RewardReply>, wire_seeds},
    {"wire_heartbeat", fuzz_message<wire::Heartbeat>, wire_seeds},
    {"wire_trainer_progress", fuzz_message<wire::TrainerProgress>, wire_seeds},
    {"wire_trainer_timing", fuzz_message<wire::TrainerTiming>, wire_seeds},
    {"wire_plan_record", fuzz_message<wire::PlanRecord>, wire_seeds},
    {"wire_planner_progress", fuzz_message<wire::PlannerProgress>, wire_seeds},
    {"wire_prompt_posterior", fuzz_message<wire::PromptPosterior>, wire_seeds},
    {"wire_dispatch", fuzz_wire_dispatch, wire_seeds},
    {"rpc_request", fuzz_rpc_request, rpc_request_seeds},
    {"rpc_reply", fuzz_rpc_reply, rpc_reply_seeds},
    {"bus_notice", fuzz_bus_notice, bus_notice_seeds},
    {"bus_subscription", fuzz_bus_subscription, bus_subscription_seeds},
    {"metrics_http", fuzz_metrics_http, metrics_http_seeds},
};

}  // namespace

std::span<const FuzzTarget> fuzz_targets() {
  return kTargets;
}

const FuzzTarget* find_fuzz_target(std::string_view name) {
  for (const auto& t : kTargets) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string_view> unpack_frames(std::string_view input) {
  std::vector<std::string_view> frames;
  if (input.empty()) return frames;
  const std::size_t n = static_cast<std::uint8_t>(input[0]) % 8;
  input.remove_prefix(1);
  if (n == 0) return frames;
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (input.empty()) {
      lengths.push_back(0);
      continue;
    }
    lengths.push_back(static_cast<std::uint8_t>(input[0]));
    input.remove_prefix(1);
  }
  for (const std::size_t length : lengths) {
    const std::size_t take = std::min(length, input.size());
    frames.push_back(input.substr(0, take));
    input.remove_prefix(take);
  }
  frames.push_back(input);
  return frames;
}

std::string pack_frames(const std::vector<std::string>& frames) {
  std::string out(1, static_cast<char>(frames.size() % 8));
  for (std::size_t i = 0; i + 1 < frames.size(); ++i)
    out.push_back(static_cast<char>(std::min<std::size_t>(frames[i].size(), 255)));
  for (std::size_t i = 0; i < frames.size(); ++i) {
    out += i + 1 < frames.size() ? frames[i].substr(0, 255) : frames[i];
  }
  return out;
}

}  // namespace spotlight::fuzz
