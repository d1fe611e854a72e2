#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include "common/wire/codec.hpp"
#include "common/wire/dispatcher.hpp"
#include "common/wire/messages.hpp"
#include "tests/common/wire/wire_golden.hpp"

namespace spotlight::wire {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

// --- samples -------------------------------------------------------------------------------------

SeedTask sample_seed_task() {
  return SeedTask{.run_id = "run-7",
                  .iteration = 12,
                  .prompt_index = 3,
                  .prompt_text = "two red squares left of a blue disc",
                  .seed = std::numeric_limits<std::uint64_t>::max(),
                  .weights_version = 11,
                  .sampler_steps = 20,
                  .deadline_unix_ms = 1735689600123,
                  .attempt = 2,
                  .key_id = "0123456789abcdef",
                  .signature = std::string("\x00sig\xff", 5),
                  .trajectory_begin = 1,
                  .trajectory_end = 19,
                  .max_staleness = 0};
}

SeedResult sample_seed_result() {
  return SeedResult{.task_id = "1735689600123-0",
                    .run_id = "run-7",
                    .iteration = 12,
                    .prompt_index = 3,
                    .seed = 42,
                    .weights_version_used = 10,
                    .reward = -0.375,
                    .correct = true,
                    .explorer_id = "explorer-ünï-3",
                    .sample_seconds = 1.25e-3};
}

InflightCommit sample_inflight_commit() {
  InflightCommit m{.task_id = "t-9", .seed = 7, .step_index = 5, .weights_version = 4};
  m.latent_shape = {2, 3, 4};
  for (int i = 0; i < 24; ++i)
    m.latent.push_back(static_cast<float>(i) * -0.5f + 1e-7f);
  m.latent[3] = std::numeric_limits<float>::denorm_min();
  m.latent[4] = -std::numeric_limits<float>::infinity();
  return m;
}

SeedTrajectory sample_seed_trajectory() {
  SeedTrajectory m{.task_id = "i12/p3/c5",
                   .run_id = "run-7",
                   .iteration = 12,
                   .prompt_index = 3,
                   .seed = 42,
                   .weights_version = 11,
                   .weights_checksum = "0123456789abcdef",
                   .sampler_steps = 4,
                   .noise_level = 0.7,
                   .shift = 3.0,
                   .step_begin = 1,
                   .step_end = 3,
                   .latent_shape = {2, 2, 1}};
  for (int i = 0; i < 3 * 4; ++i)
    m.latents.push_back(static_cast<float>(i) * 0.25f - 1.0f);
  m.latents[5] = std::numeric_limits<float>::denorm_min();
  m.log_probs = {-1.5f, 2.25f};
  m.checksum = "fedcba9876543210";
  m.explorer_id = "explorer-3";
  return m;
}

WeightsNotice sample_weights_notice() {
  return WeightsNotice{.version = 13,
                       .checksum = "9f86d081884c7d659a2feaa0c55ad015",
                       .location = "spotlight:run-7:weights:13",
                       .bytes = 123456789,
                       .published_unix_ms = 1735689600999};
}

IterationEvent sample_iteration_event() {
  return IterationEvent{.run_id = "run-7",
                        .iteration = 12,
                        .kind = IterationKind::kTrained,
                        .deadline_unix_ms = -1,
                        .version = 13};
}

RewardRequest sample_reward_request() {
  RewardRequest m{.request_id = "rq-1",
                  .prompts = {"a red disc", ""},
                  .width = 4,
                  .height = 2,
                  .count = 2,
                  .channels = 3};
  for (int i = 0; i < 2 * 2 * 4 * 3; ++i)
    m.images.push_back(static_cast<float>(i) / 47.0f);
  return m;
}

RewardReply sample_reward_reply() {
  return RewardReply{.request_id = "rq-1",
                     .rewards = {0.5, -1.0, 1e300},
                     .correct = {true, false, true},
                     .error = ""};
}

Heartbeat sample_heartbeat() {
  return Heartbeat{.explorer_id = "explorer-3",
                   .unix_ms = 1735689600000,
                   .tasks_in_flight = 2,
                   .samples_per_second = 3.5};
}

TrainerProgress sample_trainer_progress() {
  return TrainerProgress{.iteration = 12, .finished = true, .unix_ms = 1735689600000};
}

TrainerTiming sample_trainer_timing() {
  return TrainerTiming{.iteration = 11,
                       .iteration_seconds = 2.5,
                       .explore_seconds = 0.25,
                       .rollout_seconds = 1.0,
                       .train_seconds = 1.25,
                       .group_variance = 0.04};
}

PlanRecord sample_plan_record() {
  return PlanRecord{.iteration = 12,
                    .candidates = 48,
                    .steps = 8,
                    .budget_candidates = 16,
                    .reason = R"({"policy":"bandit"})"};
}

PromptPosterior sample_prompt_posterior() {
  return PromptPosterior{.prompt_text = "two red squares left of a blue disc",
                         .a = 2.5,
                         .b = 1.5,
                         .updated_through = 11,
                         .uniform_iterations = 3};
}

PlannerProgress sample_planner_progress() {
  return PlannerProgress{.enqueued_through = 13, .unix_ms = 1735689600000};
}

std::vector<std::string> all_samples() {
  return {sample_seed_task().encode(),       sample_seed_result().encode(),
          sample_inflight_commit().encode(), sample_seed_trajectory().encode(),
          sample_weights_notice().encode(),  sample_iteration_event().encode(),
          sample_reward_request().encode(),  sample_reward_reply().encode(),
          sample_heartbeat().encode()};
}

// Every message as encode() writes it: each sample, each default, and the optional parts (a
// latents request, a reply with components and a range). The golden test pins these bytes.
std::vector<std::pair<std::string, std::string>> golden_encodings() {
  RewardRequest latents = sample_reward_request();
  latents.content = std::string(RewardRequest::kLatents);
  latents.channels = 1;
  latents.count = 3;
  latents.prompts.push_back("a third");
  latents.images.resize(3 * 2 * 4 * 1);
  RewardReply detailed = sample_reward_reply();
  detailed.components = {"aesthetic", "ocr"};
  detailed.component_rewards = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  detailed.range = {-1.0, 2.5};
  return {
      {"seed_task", sample_seed_task().encode()},
      {"seed_result", sample_seed_result().encode()},
      {"inflight_commit", sample_inflight_commit().encode()},
      {"seed_trajectory", sample_seed_trajectory().encode()},
      {"weights_notice", sample_weights_notice().encode()},
      {"iteration_event", sample_iteration_event().encode()},
      {"reward_request", sample_reward_request().encode()},
      {"reward_request latents", latents.encode()},
      {"reward_reply", sample_reward_reply().encode()},
      {"reward_reply detailed", detailed.encode()},
      {"heartbeat", sample_heartbeat().encode()},
      {"trainer_progress", sample_trainer_progress().encode()},
      {"trainer_timing", sample_trainer_timing().encode()},
      {"plan_record", sample_plan_record().encode()},
      {"prompt_posterior", sample_prompt_posterior().encode()},
      {"planner_progress", sample_planner_progress().encode()},
      {"seed_task default", SeedTask{}.encode()},
      {"seed_result default", SeedResult{}.encode()},
      {"inflight_commit default", InflightCommit{}.encode()},
      {"seed_trajectory default", SeedTrajectory{}.encode()},
      {"weights_notice default", WeightsNotice{}.encode()},
      {"iteration_event default", IterationEvent{}.encode()},
      {"reward_request default", RewardRequest{}.encode()},
      {"reward_reply default", RewardReply{}.encode()},
      {"heartbeat default", Heartbeat{}.encode()},
      {"trainer_progress default", TrainerProgress{}.encode()},
      {"trainer_timing default", TrainerTiming{}.encode()},
      {"plan_record default", PlanRecord{}.encode()},
      {"prompt_posterior default", PromptPosterior{}.encode()},
      {"planner_progress default", PlannerProgress{}.encode()},
  };
}

// --- raw msgpack helpers -------------------------------------------------------------------------

std::string to_string(const msgpack::sbuffer& buf) {
  return std::string(buf.data(), buf.size());
}

void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<std::uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

// Body field names of an encoded message, in wire order.
std::vector<std::string> body_fields(const std::string& bytes) {
  auto handle = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& root = handle.get();
  for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
    const auto& kv = root.via.map.ptr[i];
    if (kv.key.as<std::string>() != "body") continue;
    std::vector<std::string> names;
    for (std::uint32_t j = 0; j < kv.val.via.map.size; ++j) {
      names.push_back(kv.val.via.map.ptr[j].key.as<std::string>());
    }
    return names;
  }
  return {};
}

// Re-encodes a message with the value of envelope entry `key` written by `rewrite` (given the
// old value); the other entries are copied.
std::string rewrite_envelope(const std::string& bytes, std::string_view key,
                             const std::function<void(Packer&, const msgpack::object&)>& rewrite) {
  auto handle = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& root = handle.get();
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(root.via.map.size);
  for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
    const auto& kv = root.via.map.ptr[i];
    pk.pack(kv.key);
    if (kv.key.as<std::string>() == key) {
      rewrite(pk, kv.val);
    } else {
      pk.pack(kv.val);
    }
  }
  return to_string(buf);
}

// Re-encodes a valid message with body field `field` dropped (no `replace`) or its value
// written by `replace`; `extra` appends one more field.
std::string rewrite_body(const std::string& bytes, const std::string& field,
                         const std::function<void(Packer&)>& replace,
                         const std::function<void(Packer&)>& extra = nullptr) {
  return rewrite_envelope(bytes, "body", [&](Packer& pk, const msgpack::object& value) {
    const auto& body = value.via.map;
    std::uint32_t count = body.size;
    bool present = false;
    for (std::uint32_t j = 0; j < body.size; ++j) {
      present |= body.ptr[j].key.as<std::string>() == field;
    }
    if (present && !replace) --count;
    if (!present && replace) ++count;
    if (extra) ++count;
    pk.pack_map(count);
    for (std::uint32_t j = 0; j < body.size; ++j) {
      if (body.ptr[j].key.as<std::string>() == field) {
        if (replace) {
          pk.pack(body.ptr[j].key);
          replace(pk);
        }
        continue;
      }
      pk.pack(body.ptr[j].key);
      pk.pack(body.ptr[j].val);
    }
    if (!present && replace) {
      pack_str(pk, field);
      replace(pk);
    }
    if (extra) extra(pk);
  });
}

// An envelope written by hand: entries are (key, value writer).
std::string envelope(const std::vector<std::pair<std::string, std::function<void(Packer&)>>>& kv) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(static_cast<std::uint32_t>(kv.size()));
  for (const auto& [key, write] : kv) {
    pack_str(pk, key);
    write(pk);
  }
  return to_string(buf);
}

std::function<void(Packer&)> str_value(std::string s) {
  return [s](Packer& pk) { pack_str(pk, s); };
}
std::function<void(Packer&)> int_value(std::int64_t v) {
  return [v](Packer& pk) { pk.pack_int64(v); };
}
std::function<void(Packer&)> empty_map() {
  return [](Packer& pk) { pk.pack_map(0); };
}

template <class Fn>
WireError expect_wire_error(Fn&& fn) {
  try {
    fn();
  } catch (const WireError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a WireError";
  return WireError(WireErrorKind::kNotMsgpack, "");
}

// --- round trips ---------------------------------------------------------------------------------

template <class M>
void expect_round_trip(const M& original) {
  const std::string bytes = original.encode();
  EXPECT_EQ(M::decode(bytes), original) << M::kType;
  const MessageHeader header = peek_type(bytes);
  EXPECT_EQ(header.type, M::kType);
  // The lowest version that expresses the message (reward_request: 1 for images, 2 for latents).
  EXPECT_GE(header.version, 1);
  EXPECT_LE(header.version, M::kVersion);
  EXPECT_TRUE(is_known_type(M::kType));
  // Encoding is deterministic.
  EXPECT_EQ(M::decode(bytes).encode(), bytes) << M::kType;
  // Defaults round-trip too (a trajectory holds at least one step: its default is malformed).
  if constexpr (std::is_same_v<M, SeedTrajectory>) {
    EXPECT_THROW(M::decode(M{}.encode()), WireError);
  } else {
    EXPECT_EQ(M::decode(M{}.encode()), M{}) << M::kType;
  }
}

TEST(WireRunState, NegativeCountsAreRejectedWithTheFieldName) {
  const WireError plan = expect_wire_error(
      [] { PlanRecord::decode(PlanRecord{.iteration = 1, .candidates = -2}.encode()); });
  EXPECT_EQ(plan.kind(), WireErrorKind::kBadValue);
  EXPECT_NE(std::string(plan.what()).find("candidates"), std::string::npos) << plan.what();
  const WireError budget = expect_wire_error(
      [] { PlanRecord::decode(PlanRecord{.iteration = 1, .budget_candidates = -1}.encode()); });
  EXPECT_EQ(budget.field(), "budget_candidates");
  const WireError progress = expect_wire_error(
      [] { PlannerProgress::decode(PlannerProgress{.enqueued_through = -2}.encode()); });
  EXPECT_NE(std::string(progress.what()).find("enqueued_through"), std::string::npos);
  EXPECT_NO_THROW(PlannerProgress::decode(PlannerProgress{.enqueued_through = -1}.encode()));
  const WireError trainer =
      expect_wire_error([] { TrainerProgress::decode(TrainerProgress{.iteration = -1}.encode()); });
  EXPECT_NE(std::string(trainer.what()).find("iteration"), std::string::npos);
  const WireError beta =
      expect_wire_error([] { PromptPosterior::decode(PromptPosterior{.a = 0}.encode()); });
  EXPECT_NE(std::string(beta.what()).find("a"), std::string::npos) << beta.what();
  EXPECT_THROW(PromptPosterior::decode(PromptPosterior{.b = -1}.encode()), WireError);
  EXPECT_THROW(PromptPosterior::decode(PromptPosterior{.updated_through = -2}.encode()), WireError);
  EXPECT_NO_THROW(PromptPosterior::decode(PromptPosterior{}.encode()));
  // The encodings that were used before these records had a version are refused, not misread.
  EXPECT_THROW(TrainerProgress::decode("3"), WireError);
  EXPECT_THROW(TrainerTiming::decode(R"({"iteration":0,"iteration_seconds":1.5})"), WireError);
  EXPECT_THROW(PlanRecord::decode(R"({"iteration":0,"candidates":3,"steps":5})"), WireError);
}

TEST(WireRoundTrip, EveryMessage) {
  expect_round_trip(sample_seed_task());
  expect_round_trip(sample_seed_result());
  expect_round_trip(sample_inflight_commit());
  expect_round_trip(sample_seed_trajectory());
  expect_round_trip(sample_weights_notice());
  expect_round_trip(sample_iteration_event());
  expect_round_trip(sample_reward_request());
  expect_round_trip(sample_reward_reply());
  expect_round_trip(sample_heartbeat());
  expect_round_trip(
      TrainerProgress{.iteration = 12, .finished = false, .unix_ms = 1'700'000'000'000});
  expect_round_trip(TrainerProgress{.iteration = 40, .finished = true, .unix_ms = 1});
  expect_round_trip(TrainerTiming{.iteration = 3,
                                  .iteration_seconds = 12.5,
                                  .explore_seconds = 1.25,
                                  .rollout_seconds = 6.0,
                                  .train_seconds = 5.0,
                                  .group_variance = 0.04});
  expect_round_trip(
      PlanRecord{.iteration = 4, .candidates = 16, .steps = 6, .reason = R"({"policy":"bandit"})"});
  expect_round_trip(PlanRecord{.iteration = 5, .candidates = 0, .steps = 0});
  expect_round_trip(PlannerProgress{.enqueued_through = 7, .unix_ms = 9});
  expect_round_trip(PromptPosterior{.prompt_text = "two red squares",
                                    .a = 1.75,
                                    .b = 6.25,
                                    .updated_through = 11,
                                    .uniform_iterations = 2});
  RewardReply failed{.request_id = "rq-2", .error = "reward model not loaded"};
  expect_round_trip(failed);
  EXPECT_FALSE(RewardReply::decode(failed.encode()).ok());
}

TEST(WireRoundTrip, ExtremeValues) {
  SeedTask t = sample_seed_task();
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
    t.seed = seed;
    t.iteration = std::numeric_limits<std::int64_t>::min();
    t.attempt = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(SeedTask::decode(t.encode()), t);
  }
  for (auto kind : {IterationKind::kStarted, IterationKind::kExplore, IterationKind::kTrained,
                    IterationKind::kFinished}) {
    IterationEvent e = sample_iteration_event();
    e.kind = kind;
    EXPECT_EQ(IterationEvent::decode(e.encode()).kind, kind);
    EXPECT_EQ(parse_iteration_kind(to_string(kind)), kind);
  }
  // A latent of realistic size keeps every bit.
  InflightCommit big = sample_inflight_commit();
  big.latent_shape = {16, 64, 64};
  big.latent.assign(16 * 64 * 64, 0.0f);
  std::mt19937 rng(1);
  for (float& v : big.latent)
    v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x7f7fffffu);
  const InflightCommit back = InflightCommit::decode(big.encode());
  ASSERT_EQ(back.latent.size(), big.latent.size());
  EXPECT_EQ(std::memcmp(back.latent.data(), big.latent.data(), big.latent.size() * 4), 0);
}

TEST(WireVersions, ASeedTaskOfVersionOneDecodesWithTheDefaultsOfLaterVersions) {
  // What a version-1 planner wrote: no trajectory fields, no staleness override.
  const SeedTask v2 = sample_seed_task();
  const std::string v1 = Writer(SeedTask::kType, 1)
                             .str("run_id", v2.run_id)
                             .i64("iteration", v2.iteration)
                             .i64("prompt_index", v2.prompt_index)
                             .str("prompt_text", v2.prompt_text)
                             .u64("seed", v2.seed)
                             .i64("weights_version", v2.weights_version)
                             .i64("sampler_steps", v2.sampler_steps)
                             .i64("deadline_unix_ms", v2.deadline_unix_ms)
                             .i64("attempt", v2.attempt)
                             .finish();
  const SeedTask decoded = SeedTask::decode(v1);
  EXPECT_EQ(decoded.seed, v2.seed);
  EXPECT_EQ(decoded.trajectory_begin, 0);
  EXPECT_EQ(decoded.trajectory_end, 0);
  EXPECT_EQ(decoded.max_staleness, -1);
  EXPECT_TRUE(decoded.signature.empty());
  // Version 4 is not known yet.
  const std::string v4 = Writer(SeedTask::kType, 4).str("run_id", "x").finish();
  EXPECT_EQ(expect_wire_error([&] { SeedTask::decode(v4); }).kind(),
            WireErrorKind::kUnsupportedVersion);
}

TEST(WireLayout, EnvelopeAndFloatBytesAreTheDocumentedOnes) {
  InflightCommit m{.task_id = "t", .latent = {1.0f, -2.0f}, .latent_shape = {2}};
  const std::string bytes = m.encode();
  auto handle = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& root = handle.get();
  ASSERT_EQ(root.type, msgpack::type::MAP);
  std::map<std::string, msgpack::object> env;
  for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
    env[root.via.map.ptr[i].key.as<std::string>()] = root.via.map.ptr[i].val;
  }
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env["type"].as<std::string>(), "inflight_commit");
  EXPECT_EQ(env["version"].as<int>(), 1);
  ASSERT_EQ(env["body"].type, msgpack::type::MAP);
  std::map<std::string, msgpack::object> body;
  env["body"].convert(body);
  ASSERT_EQ(body["latent"].type, msgpack::type::BIN);
  const std::string latent(body["latent"].via.bin.ptr, body["latent"].via.bin.size);
  EXPECT_EQ(latent, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));  // float32 LE
  EXPECT_EQ(body["latent_shape"].as<std::vector<std::int64_t>>(), std::vector<std::int64_t>{2});
}

TEST(WireLayout, ForeignProducersMayUseOtherNumericEncodings) {
  // A Python producer may write float32, or an integer where a double is expected.
  std::string bytes = rewrite_body(sample_seed_result().encode(), "reward",
                                   [](Packer& pk) { pk.pack_float(0.5f); });
  EXPECT_EQ(SeedResult::decode(bytes).reward, 0.5);
  bytes =
      rewrite_body(sample_seed_result().encode(), "reward", [](Packer& pk) { pk.pack_int(-3); });
  EXPECT_EQ(SeedResult::decode(bytes).reward, -3.0);
  // Unknown body fields are ignored (additive changes need no new version).
  bytes = rewrite_body(sample_heartbeat().encode(), "", nullptr, [](Packer& pk) {
    pack_str(pk, "gpu_kind");
    pack_str(pk, "H100");
  });
  EXPECT_EQ(Heartbeat::decode(bytes), sample_heartbeat());
}

// --- golden bytes --------------------------------------------------------------------------------

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// The wire format does not drift: every message encodes to the recorded bytes, and those bytes
// decode to a message that encodes to them again.
TEST(WireGolden, EncodingsAreTheRecordedBytes) {
  std::map<std::string, std::string, std::less<>> recorded;
  for (const auto& [name, hex] : golden::kEncodings)
    recorded.emplace(name, from_hex(hex));
  const auto encodings = golden_encodings();
  ASSERT_EQ(encodings.size(), recorded.size());
  Dispatcher d;
  std::string reencoded;
  const auto again = [&](const auto& m) { reencoded = m.encode(); };
  d.on<SeedTask>(again).on<SeedResult>(again).on<InflightCommit>(again).on<SeedTrajectory>(again);
  d.on<WeightsNotice>(again).on<IterationEvent>(again).on<RewardRequest>(again);
  d.on<RewardReply>(again).on<Heartbeat>(again).on<TrainerProgress>(again);
  d.on<TrainerTiming>(again).on<PlanRecord>(again).on<PromptPosterior>(again);
  d.on<PlannerProgress>(again);
  for (const auto& [name, bytes] : encodings) {
    const auto it = recorded.find(name);
    ASSERT_NE(it, recorded.end()) << name;
    EXPECT_EQ(bytes, it->second) << name << " encodes to other bytes than recorded";
    if (name == "seed_trajectory default") continue;  // a trajectory of no steps is malformed
    reencoded.clear();
    d.dispatch(it->second);
    EXPECT_EQ(reencoded, it->second) << name << " does not decode to what it was";
  }
}

// --- malformed bodies ----------------------------------------------------------------------------

// The encoding of `bytes` relabelled as schema version `version`, without the body fields of
// later versions than it (what a writer of that version wrote).
template <class M>
std::string as_version(std::string bytes, std::int64_t version) {
  std::apply(
      [&](const auto&... f) {
        ((bytes = f.first_version > version ? rewrite_body(bytes, std::string(f.name), nullptr)
                                            : bytes),
         ...);
      },
      M::fields());
  return rewrite_envelope(bytes, "version",
                          [&](Packer& pk, const msgpack::object&) { pk.pack_int64(version); });
}

// A value of another msgpack type than the one field `f` is read as (nil and maps aside): the
// nearest wrong one where there is one (bin for str, str for bin, a float for an integer).
template <class F>
std::function<void(Packer&)> other_kind(const F& f) {
  using T = typename F::Value;
  if constexpr (std::is_same_v<T, std::string>) {
    if (f.bin) return str_value("x");
    return [](Packer& pk) {
      pk.pack_bin(1);
      pk.pack_bin_body("x", 1);
    };
  } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t>) {
    return [](Packer& pk) { pk.pack_double(1.5); };
  } else if constexpr (std::is_same_v<T, bool>) {
    return int_value(1);
  } else if constexpr (std::is_enum_v<T>) {
    return int_value(1);
  } else {  // float64, f32 bins and arrays
    return str_value("1");
  }
}

// Every field of M::fields() that `sample` encodes (its version's fields, its non-empty optional
// groups): the encoding holds exactly those, in list order; missing -> kMissingField (or, for the
// only field of an optional group, the group's default), nil, a map or a value of another type ->
// kWrongType, naming the field. Each field of a later version than 1 may be absent from a message
// of an earlier version. A field added to a list is checked here without a new line.
template <class M>
void expect_every_field_checked(const M& sample) {
  const std::string bytes = sample.encode();
  // The version the sample encodes as (an older one when it needs no newer field).
  const std::int64_t version = peek_type(bytes).version;
  const std::string prefix =
      "wire: message '" + std::string(M::kType) + "' v" + std::to_string(version) + ": field '";
  const auto fields = M::fields();
  const M decoded = M::decode(bytes);
  std::vector<std::string> listed;
  const auto check = [&](const auto& f) {
    const std::string field(f.name);
    if (f.first_version > version) return;
    if (f.optional_group != 0 && decoded.*f.member == M{}.*f.member) return;  // group not sent
    listed.push_back(field);
    if (f.first_version > 1) {
      const std::string older = as_version<M>(bytes, f.first_version - 1);
      EXPECT_NO_THROW(M::decode(older)) << M::kType << "." << field << " before its version";
    }

    int group_size = 0;
    std::apply(
        [&](const auto&... g) { ((group_size += g.optional_group == f.optional_group), ...); },
        fields);
    if (f.optional_group != 0 && group_size == 1) {
      EXPECT_EQ(M::decode(rewrite_body(bytes, field, nullptr)).*f.member, M{}.*f.member)
          << M::kType << "." << field << " is optional";
    } else {
      WireError e = expect_wire_error([&] { M::decode(rewrite_body(bytes, field, nullptr)); });
      EXPECT_EQ(e.kind(), WireErrorKind::kMissingField) << M::kType << "." << field;
      EXPECT_EQ(e.field(), field);
      EXPECT_EQ(e.type(), M::kType);
      EXPECT_EQ(e.version(), version);
      EXPECT_EQ(std::string(e.what()), prefix + field + "' missing");
    }

    WireError e = expect_wire_error(
        [&] { M::decode(rewrite_body(bytes, field, [](Packer& pk) { pk.pack_nil(); })); });
    EXPECT_EQ(e.kind(), WireErrorKind::kWrongType) << M::kType << "." << field;
    EXPECT_EQ(e.field(), field);
    EXPECT_EQ(std::string(e.what()).rfind(prefix + field + "' has wrong type (expected ", 0), 0u)
        << e.what();

    // A map is never a valid field value either.
    e = expect_wire_error(
        [&] { M::decode(rewrite_body(bytes, field, [](Packer& pk) { pk.pack_map(0); })); });
    EXPECT_EQ(e.kind(), WireErrorKind::kWrongType) << M::kType << "." << field;
    EXPECT_EQ(e.field(), field);

    e = expect_wire_error([&] { M::decode(rewrite_body(bytes, field, other_kind(f))); });
    EXPECT_EQ(e.kind(), WireErrorKind::kWrongType) << M::kType << "." << field << ": " << e.what();
    EXPECT_EQ(e.field(), field);
  };
  std::apply([&](const auto&... f) { (check(f), ...); }, fields);
  // The encoder writes the list, in its order, and nothing else.
  EXPECT_FALSE(listed.empty()) << M::kType;
  EXPECT_EQ(body_fields(bytes), listed) << M::kType;
}

TEST(WireMalformed, EveryFieldOfEveryMessageIsChecked) {
  std::set<std::string_view> checked;
  const auto check = [&](const auto& sample) {
    expect_every_field_checked(sample);
    checked.insert(std::decay_t<decltype(sample)>::kType);
  };
  check(sample_seed_task());
  check(sample_seed_result());
  check(sample_inflight_commit());
  check(sample_seed_trajectory());
  check(sample_weights_notice());
  check(sample_iteration_event());
  check(sample_reward_request());
  check(sample_reward_reply());
  check(sample_heartbeat());
  check(sample_trainer_progress());
  check(sample_trainer_timing());
  check(sample_plan_record());
  check(sample_prompt_posterior());
  check(sample_planner_progress());
  // The optional parts: a latents request (version 2) and a reply with components and a range.
  for (const auto& [name, bytes] : golden_encodings()) {
    if (name == "reward_request latents") check(RewardRequest::decode(bytes));
    if (name == "reward_reply detailed") check(RewardReply::decode(bytes));
  }
  // Every message the codec knows is in the list above, so a new message cannot skip the check.
  for (const std::string_view type : known_types()) {
    EXPECT_TRUE(checked.count(type)) << "message '" << type << "' is not checked here";
  }
}

// Version 1 seed tasks (before signatures) still decode, unsigned.
TEST(WireCompatibility, VersionOneSeedTasksDecodeWithoutSignature) {
  SeedTask v1 = sample_seed_task();
  v1.key_id.clear();
  v1.signature.clear();
  v1.trajectory_begin = 0;  // version 3's fields take their defaults
  v1.trajectory_end = 0;
  v1.max_staleness = -1;
  Writer w("seed_task", 1);
  w.str("run_id", v1.run_id)
      .i64("iteration", v1.iteration)
      .i64("prompt_index", v1.prompt_index)
      .str("prompt_text", v1.prompt_text)
      .u64("seed", v1.seed)
      .i64("weights_version", v1.weights_version)
      .i64("sampler_steps", v1.sampler_steps)
      .i64("deadline_unix_ms", v1.deadline_unix_ms)
      .i64("attempt", v1.attempt);
  EXPECT_EQ(SeedTask::decode(w.finish()), v1);
}

// Version 1 plan records (before budget_candidates) still decode: their budget is the whole plan.
TEST(WireCompatibility, VersionOnePlanRecordsDecodeWithTheirCandidatesAsBudget) {
  Writer w("plan_record", 1);
  w.i64("iteration", 3).i64("candidates", 12).i64("steps", 5).str("reason", "");
  EXPECT_EQ(PlanRecord::decode(w.finish()),
            (PlanRecord{.iteration = 3, .candidates = 12, .steps = 5, .budget_candidates = 12}));
  // Version 2 carries its own budget, and it must be there.
  EXPECT_EQ(peek_type(sample_plan_record().encode()).version, 2);
  const WireError e = expect_wire_error([] {
    PlanRecord::decode(rewrite_body(sample_plan_record().encode(), "budget_candidates", nullptr));
  });
  EXPECT_EQ(e.kind(), WireErrorKind::kMissingField);
  EXPECT_EQ(e.field(), "budget_candidates");
}

TEST(WireRewardContent, ImagesStayVersionOneAndLatentsAreVersionTwo) {
  // Images encode exactly as before `content` existed, so version-1 readers keep working.
  const RewardRequest images = sample_reward_request();
  EXPECT_EQ(peek_type(images.encode()).version, 1);
  EXPECT_EQ(body_fields(images.encode()),
            (std::vector<std::string>{"request_id", "prompts", "images", "width", "height", "count",
                                      "channels"}));
  EXPECT_EQ(RewardRequest::decode(images.encode()).content, RewardRequest::kImages);

  RewardRequest latents = sample_reward_request();
  latents.content = std::string(RewardRequest::kLatents);
  latents.channels = 1;
  latents.count = 3;
  latents.prompts.push_back("a third");
  latents.images.resize(3 * 2 * 4 * 1);
  EXPECT_EQ(peek_type(latents.encode()).version, 2);
  expect_round_trip(latents);

  // A version-2 message must say what it carries, with a known word.
  const std::string v2 = latents.encode();
  WireError e =
      expect_wire_error([&] { RewardRequest::decode(rewrite_body(v2, "content", nullptr)); });
  EXPECT_EQ(e.kind(), WireErrorKind::kMissingField);
  EXPECT_EQ(e.field(), "content");
  e = expect_wire_error(
      [&] { RewardRequest::decode(rewrite_body(v2, "content", str_value("pixels"))); });
  EXPECT_EQ(e.kind(), WireErrorKind::kBadValue);
  EXPECT_EQ(e.field(), "content");
  EXPECT_NE(std::string(e.what()).find("'pixels'"), std::string::npos) << e.what();
}

TEST(WireRewardContent, ReplyComponentsRoundTripAndAreChecked) {
  RewardReply reply = sample_reward_reply();
  reply.components = {"aesthetic", "ocr"};
  reply.component_rewards = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  expect_round_trip(reply);
  // Without components the reply is what it always was.
  EXPECT_EQ(body_fields(sample_reward_reply().encode()),
            (std::vector<std::string>{"request_id", "rewards", "correct", "error"}));

  reply.component_rewards.pop_back();  // 5 values for 3 rewards x 2 components
  WireError e = expect_wire_error([&] { RewardReply::decode(reply.encode()); });
  EXPECT_EQ(e.kind(), WireErrorKind::kBadValue);
  EXPECT_EQ(e.field(), "component_rewards");

  reply.component_rewards.push_back(0.6);
  e = expect_wire_error(
      [&] { RewardReply::decode(rewrite_body(reply.encode(), "component_rewards", nullptr)); });
  EXPECT_EQ(e.kind(), WireErrorKind::kMissingField);
  EXPECT_EQ(e.field(), "component_rewards");
}

TEST(WireRewardContent, ReplyRangeRoundTripsAndMustBeAnInterval) {
  RewardReply reply = sample_reward_reply();
  reply.range = {-1.0, 2.5};
  expect_round_trip(reply);
  for (const std::vector<double>& bad : std::vector<std::vector<double>>{
           {1.0, 1.0}, {2.0, 1.0}, {0.0}, {0.0, 1.0, 2.0}, {0.0, std::nan("")}}) {
    reply.range = bad;
    WireError e = expect_wire_error([&] { RewardReply::decode(reply.encode()); });
    EXPECT_EQ(e.kind(), WireErrorKind::kBadValue);
    EXPECT_EQ(e.field(), "range");
  }
}

TEST(WireMalformed, WrongTypeMessageNamesExpectedAndActual) {
  const std::string bytes =
      rewrite_body(sample_seed_task().encode(), "seed", str_value("forty-two"));
  const WireError e = expect_wire_error([&] { SeedTask::decode(bytes); });
  EXPECT_EQ(std::string(e.what()),
            "wire: message 'seed_task' v3: field 'seed' has wrong type (expected uint64, got "
            "string)");
}

// The reward service reads requests without copying their images: the view points into the
// message bytes, decodes what RewardRequest::decode decodes, and rejects what it rejects.
TEST(WireRewardRequestView, PointsIntoTheBytesAndAgreesWithTheCopyingDecoder) {
  const RewardRequest m = sample_reward_request();
  const std::string bytes = m.encode();
  const RewardRequestView view = RewardRequestView::decode(bytes);
  EXPECT_EQ(view.request_id, m.request_id);
  EXPECT_EQ(view.prompts, m.prompts);
  EXPECT_EQ(view.count, 2);
  EXPECT_EQ(view.image_values(), 4u * 2 * 3);
  EXPECT_GE(view.images.data(), bytes.data());
  EXPECT_LE(view.images.data() + view.images.size(), bytes.data() + bytes.size());
  std::vector<float> second(view.image_values());
  copy_f32_le(view.images, view.image_values(), second.size(), second.data());
  EXPECT_EQ(second, std::vector<float>(m.images.begin() + 24, m.images.end()));
  RewardRequest short_images = m;
  short_images.images.pop_back();
  const std::string bad = short_images.encode();
  const WireError e = expect_wire_error([&] { RewardRequestView::decode(bad); });
  EXPECT_EQ(e.field(), "images");
  EXPECT_EQ(e.kind(), WireErrorKind::kBadValue);
}

TEST(WireMalformed, ListElementsAreNamedByIndex) {
  std::string bytes = rewrite_body(sample_reward_request().encode(), "prompts", [](Packer& pk) {
    pk.pack_array(2);
    pack_str(pk, "ok");
    pk.pack_int(5);
  });
  WireError e = expect_wire_error([&] { RewardRequest::decode(bytes); });
  EXPECT_EQ(e.kind(), WireErrorKind::kWrongType);
  EXPECT_EQ(e.field(), "prompts[1]");

  bytes = rewrite_body(sample_reward_reply().encode(), "correct", [](Packer& pk) {
    pk.pack_array(3);
    pk.pack_true();
    pk.pack_true();
    pk.pack_int(1);
  });
  e = expect_wire_error([&] { RewardReply::decode(bytes); });
  EXPECT_EQ(e.field(), "correct[2]");
}

TEST(WireMalformed, ImpossibleValues) {
  struct Case {
    std::string bytes;
    std::function<void(const std::string&)> decode;
    std::string field;
  };
  auto seed_task = [](const std::string& b) { SeedTask::decode(b); };
  auto commit = [](const std::string& b) { InflightCommit::decode(b); };
  auto trajectory = [](const std::string& b) { SeedTrajectory::decode(b); };
  const std::string tra = sample_seed_trajectory().encode();
  auto request = [](const std::string& b) { RewardRequest::decode(b); };
  const std::string task = sample_seed_task().encode();
  const std::string com = sample_inflight_commit().encode();
  const std::string req = sample_reward_request().encode();
  const std::vector<Case> cases = {
      {rewrite_body(task, "seed", int_value(-1)), seed_task, "seed"},
      {rewrite_body(task, "iteration", [](Packer& pk) { pk.pack_uint64(std::uint64_t{1} << 63); }),
       seed_task, "iteration"},
      {rewrite_body(com, "latent",
                    [](Packer& pk) {
                      pk.pack_bin(7);
                      pk.pack_bin_body("1234567", 7);
                    }),
       commit, "latent"},
      {rewrite_body(com, "latent_shape",
                    [](Packer& pk) {
                      pk.pack_array(2);
                      pk.pack_int(4);
                      pk.pack_int(7);
                    }),
       commit, "latent"},
      {rewrite_body(com, "latent_shape",
                    [](Packer& pk) {
                      pk.pack_array(2);
                      pk.pack_int(-4);
                      pk.pack_int(-6);
                    }),
       commit, "latent_shape"},
      // 2^32 x 2^32 wraps to 0 in uint64, which would match an empty latent.
      {rewrite_body(rewrite_body(com, "latent", [](Packer& pk) { pk.pack_bin(0); }), "latent_shape",
                    [](Packer& pk) {
                      pk.pack_array(2);
                      pk.pack_int64(std::int64_t{1} << 32);
                      pk.pack_int64(std::int64_t{1} << 32);
                    }),
       commit, "latent"},
      {rewrite_body(com, "latent_shape", [](Packer& pk) { pk.pack_array(0); }), commit,
       "latent_shape"},
      {rewrite_body(tra, "step_end", int_value(1)), trajectory, "step_end"},
      {rewrite_body(tra, "step_end", int_value(5)), trajectory, "step_end"},
      {rewrite_body(tra, "step_begin", int_value(-1)), trajectory, "step_end"},
      {rewrite_body(tra, "step_begin", int_value(2)), trajectory, "latents"},
      {rewrite_body(tra, "latent_shape",
                    [](Packer& pk) {
                      pk.pack_array(2);
                      pk.pack_int(4);
                      pk.pack_int(0);
                    }),
       trajectory, "latent_shape"},
      {rewrite_body(tra, "latent_shape", [](Packer& pk) { pk.pack_array(0); }), trajectory,
       "latent_shape"},
      {rewrite_body(tra, "log_probs",
                    [](Packer& pk) {
                      pk.pack_bin(4);
                      pk.pack_bin_body("\0\0\0\0", 4);
                    }),
       trajectory, "log_probs"},
      // 2^32 x 2^32 x 3 steps wraps in uint64: must not match anything.
      {rewrite_body(rewrite_body(tra, "latents", [](Packer& pk) { pk.pack_bin(0); }),
                    "latent_shape",
                    [](Packer& pk) {
                      pk.pack_array(2);
                      pk.pack_int64(std::int64_t{1} << 32);
                      pk.pack_int64(std::int64_t{1} << 32);
                    }),
       trajectory, "latents"},
      {rewrite_body(req, "count", int_value(3)), request, "prompts"},
      {rewrite_body(req, "width", int_value(5)), request, "images"},
      {rewrite_body(req, "width", int_value(-4)), request, "width"},
      {rewrite_body(req, "channels", int_value(0)), request, "channels"},
      {rewrite_body(sample_reward_reply().encode(), "rewards",
                    [](Packer& pk) {
                      pk.pack_array(1);
                      pk.pack_double(1.0);
                    }),
       [](const std::string& b) { RewardReply::decode(b); }, "correct"},
      {rewrite_body(sample_iteration_event().encode(), "kind", str_value("paused")),
       [](const std::string& b) { IterationEvent::decode(b); }, "kind"},
      {rewrite_body(sample_weights_notice().encode(), "bytes", int_value(-1)),
       [](const std::string& b) { WeightsNotice::decode(b); }, "bytes"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const WireError e = expect_wire_error([&] { cases[i].decode(cases[i].bytes); });
    EXPECT_EQ(e.kind(), WireErrorKind::kBadValue) << "case " << i << ": " << e.what();
    EXPECT_EQ(e.field(), cases[i].field) << "case " << i << ": " << e.what();
  }
}

TEST(WireMalformed, DuplicateAndNonStringBodyKeys) {
  std::string bytes = envelope(
      {{"type", str_value("heartbeat")}, {"version", int_value(1)}, {"body", [](Packer& pk) {
                                                                       pk.pack_map(2);
                                                                       pack_str(pk, "unix_ms");
                                                                       pk.pack_int(1);
                                                                       pack_str(pk, "unix_ms");
                                                                       pk.pack_int(2);
                                                                     }}});
  WireError e = expect_wire_error([&] { Heartbeat::decode(bytes); });
  EXPECT_EQ(e.kind(), WireErrorKind::kBadValue);
  EXPECT_EQ(e.field(), "unix_ms");

  bytes = envelope(
      {{"type", str_value("heartbeat")}, {"version", int_value(1)}, {"body", [](Packer& pk) {
                                                                       pk.pack_map(1);
                                                                       pk.pack_int(7);
                                                                       pk.pack_int(2);
                                                                     }}});
  e = expect_wire_error([&] { Heartbeat::decode(bytes); });
  EXPECT_EQ(e.kind(), WireErrorKind::kWrongType);
}

// --- envelope, type and version ------------------------------------------------------------------

TEST(WireEnvelope, MalformedEnvelopes) {
  const std::vector<std::string> bad = {
      envelope({{"version", int_value(1)}, {"body", empty_map()}}),  // no type
      envelope({{"type", int_value(3)}, {"version", int_value(1)}, {"body", empty_map()}}),
      envelope({{"type", str_value("heartbeat")}, {"body", empty_map()}}),  // no version
      envelope(
          {{"type", str_value("heartbeat")}, {"version", str_value("1")}, {"body", empty_map()}}),
      envelope({{"type", str_value("heartbeat")},
                {"version", [](Packer& pk) { pk.pack_uint64(~std::uint64_t{0}); }},
                {"body", empty_map()}}),
      envelope({{"type", str_value("heartbeat")}, {"version", int_value(1)}}),  // no body
      envelope(
          {{"type", str_value("heartbeat")}, {"version", int_value(1)}, {"body", int_value(0)}}),
      envelope({{"type", str_value("a")},
                {"type", str_value("b")},
                {"version", int_value(1)},
                {"body", empty_map()}}),
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    const WireError e = expect_wire_error([&] { Heartbeat::decode(bad[i]); });
    EXPECT_EQ(e.kind(), WireErrorKind::kBadEnvelope) << "case " << i << ": " << e.what();
  }
  // Not a map at all.
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(3);
  pack_str(pk, "heartbeat");
  pk.pack_int(1);
  pk.pack_map(0);
  EXPECT_EQ(expect_wire_error([&] { peek_type(to_string(buf)); }).kind(),
            WireErrorKind::kBadEnvelope);
  // Unknown envelope keys are ignored.
  const std::string extra =
      envelope({{"type", str_value("heartbeat")},
                {"version", int_value(1)},
                {"trace_id", str_value("abc")},
                {"body", [](Packer& p) {
                   const std::string hb = sample_heartbeat().encode();
                   auto h = msgpack::unpack(hb.data(), hb.size());
                   for (std::uint32_t i = 0; i < h.get().via.map.size; ++i) {
                     if (h.get().via.map.ptr[i].key.as<std::string>() == "body") {
                       p.pack(h.get().via.map.ptr[i].val);
                     }
                   }
                 }}});
  EXPECT_EQ(Heartbeat::decode(extra), sample_heartbeat());
}

TEST(WireEnvelope, UnknownTypeUnexpectedTypeAndVersions) {
  const std::string foo =
      envelope({{"type", str_value("foo")}, {"version", int_value(1)}, {"body", empty_map()}});
  WireError e = expect_wire_error([&] { SeedTask::decode(foo); });
  EXPECT_EQ(e.kind(), WireErrorKind::kUnknownType);
  EXPECT_EQ(std::string(e.what()), "wire: unknown type 'foo'");
  EXPECT_EQ(e.type(), "foo");
  EXPECT_EQ(peek_type(foo), (MessageHeader{"foo", 1}));  // peeking does not judge the type
  EXPECT_FALSE(is_known_type("foo"));

  e = expect_wire_error([&] { SeedTask::decode(sample_heartbeat().encode()); });
  EXPECT_EQ(e.kind(), WireErrorKind::kUnexpectedType);
  EXPECT_EQ(std::string(e.what()), "wire: expected message 'seed_task', got 'heartbeat'");

  for (std::int64_t version : {std::int64_t{4}, std::int64_t{0}, std::int64_t{-1}}) {
    msgpack::sbuffer buf;
    Packer pk(buf);
    const std::string task = sample_seed_task().encode();
    // Same body, other version.
    auto h = msgpack::unpack(task.data(), task.size());
    pk.pack_map(3);
    pack_str(pk, "type");
    pack_str(pk, "seed_task");
    pack_str(pk, "version");
    pk.pack_int64(version);
    pack_str(pk, "body");
    for (std::uint32_t i = 0; i < h.get().via.map.size; ++i) {
      if (h.get().via.map.ptr[i].key.as<std::string>() == "body")
        pk.pack(h.get().via.map.ptr[i].val);
    }
    e = expect_wire_error([&] { SeedTask::decode(to_string(buf)); });
    EXPECT_EQ(e.kind(), WireErrorKind::kUnsupportedVersion);
    EXPECT_EQ(e.version(), version);
    EXPECT_EQ(std::string(e.what()), "wire: message 'seed_task': unsupported version " +
                                         std::to_string(version) + " (supported: 1-3)");
    EXPECT_EQ(peek_type(to_string(buf)).version, version);
  }
}

// --- not msgpack, limits -------------------------------------------------------------------------

TEST(WireBytes, NotMsgpack) {
  const std::string valid = sample_seed_task().encode();
  struct Case {
    std::string bytes;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", "not msgpack (empty)"},
      {valid.substr(0, valid.size() - 1), "not msgpack (truncated)"},
      {valid + "x", "not msgpack (1 trailing bytes after offset"},
      {std::string("\xc1", 1), "not msgpack (invalid byte at offset"},
      {"hello world", "not msgpack"},
  };
  for (const auto& c : cases) {
    const WireError e = expect_wire_error([&] { SeedTask::decode(c.bytes); });
    EXPECT_EQ(e.kind(), WireErrorKind::kNotMsgpack) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
  }
}

TEST(WireBytes, SizeLimit) {
  const std::string bytes = sample_reward_request().encode();
  DecodeOptions options;
  options.max_bytes = bytes.size();
  EXPECT_EQ(RewardRequest::decode(bytes, options), sample_reward_request());
  options.max_bytes = bytes.size() - 1;
  const WireError e = expect_wire_error([&] { RewardRequest::decode(bytes, options); });
  EXPECT_EQ(e.kind(), WireErrorKind::kTooLarge);
  EXPECT_EQ(std::string(e.what()), "wire: message larger than limit (" +
                                       std::to_string(bytes.size()) + " bytes > " +
                                       std::to_string(bytes.size() - 1) + ")");
  EXPECT_EQ(expect_wire_error([&] { peek_type(bytes, options); }).kind(), WireErrorKind::kTooLarge);
}

TEST(WireBytes, SmallInputsCannotForceLargeAllocations) {
  // An array/map header claiming 4G elements, alone and under an envelope key.
  const std::vector<std::string> bombs = {
      std::string("\xdd\xff\xff\xff\xff", 5), std::string("\xdf\xff\xff\xff\xff", 5),
      std::string("\x81\xa4"
                  "body\xdd\xff\xff\xff\xff",
                  10),
      std::string("\xc6\xff\xff\xff\xff", 5),  // bin32 of 4 GiB
  };
  for (const auto& b : bombs) {
    EXPECT_EQ(expect_wire_error([&] { peek_type(b); }).kind(), WireErrorKind::kNotMsgpack);
  }
  // Complete but too many elements: 2M nils.
  std::string many("\xdd\x00\x20\x00\x00", 5);
  many.append(std::size_t{1} << 21, '\xc0');
  WireError e = expect_wire_error([&] { peek_type(many); });
  EXPECT_EQ(e.kind(), WireErrorKind::kNotMsgpack);
  EXPECT_NE(std::string(e.what()).find("elements"), std::string::npos) << e.what();
  // Deep nesting.
  std::string deep(1000, '\x91');
  deep.push_back('\xc0');
  e = expect_wire_error([&] { peek_type(deep); });
  EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
}

// --- totality ------------------------------------------------------------------------------------

Dispatcher everything_dispatcher() {
  Dispatcher d;
  d.on<SeedTask>([](SeedTask) {});
  d.on<SeedResult>([](SeedResult) {});
  d.on<InflightCommit>([](InflightCommit) {});
  d.on<SeedTrajectory>([](SeedTrajectory) {});
  d.on<WeightsNotice>([](WeightsNotice) {});
  d.on<IterationEvent>([](IterationEvent) {});
  d.on<RewardRequest>([](RewardRequest) {});
  d.on<RewardReply>([](RewardReply) {});
  d.on<Heartbeat>([](Heartbeat) {});
  return d;
}

// Feeds `bytes` to every decoder. Only WireError may come out (anything else fails the test, a
// crash fails the binary). Returns the error kinds seen and how many decoders accepted it.
int decode_everything(std::string_view bytes, const Dispatcher& dispatcher,
                      std::set<WireErrorKind>& kinds) {
  int accepted = 0;
  auto attempt = [&](auto&& fn) {
    try {
      fn();
      ++accepted;
    } catch (const WireError& e) {
      kinds.insert(e.kind());
    }
  };
  attempt([&] { peek_type(bytes); });
  attempt([&] { SeedTask::decode(bytes); });
  attempt([&] { SeedResult::decode(bytes); });
  attempt([&] { InflightCommit::decode(bytes); });
  attempt([&] { SeedTrajectory::decode(bytes); });
  attempt([&] { WeightsNotice::decode(bytes); });
  attempt([&] { IterationEvent::decode(bytes); });
  attempt([&] { RewardRequest::decode(bytes); });
  attempt([&] { RewardReply::decode(bytes); });
  attempt([&] { Heartbeat::decode(bytes); });
  attempt([&] { dispatcher.dispatch(bytes); });
  return accepted;
}

TEST(WireTotality, EveryStrictPrefixIsRejectedAsNotMsgpack) {
  for (const std::string& bytes : all_samples()) {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const std::string_view prefix(bytes.data(), n);
      const WireError e = expect_wire_error([&] { peek_type(prefix); });
      ASSERT_EQ(e.kind(), WireErrorKind::kNotMsgpack) << "prefix " << n << ": " << e.what();
    }
  }
}

TEST(WireTotality, RandomBytesNeverCrash) {
  const Dispatcher dispatcher = everything_dispatcher();
  std::mt19937_64 rng(20240601);
  std::set<WireErrorKind> kinds;
  for (int i = 0; i < 10000; ++i) {
    std::string bytes(rng() % 96, '\0');
    for (char& c : bytes)
      c = static_cast<char>(rng());
    if (i % 4 == 0 && !bytes.empty()) bytes[0] = static_cast<char>(0x80 | (rng() % 16));  // fixmap
    decode_everything(bytes, dispatcher, kinds);
  }
  EXPECT_TRUE(kinds.count(WireErrorKind::kNotMsgpack));
}

TEST(WireTotality, MutatedAndTruncatedMessagesNeverCrash) {
  const Dispatcher dispatcher = everything_dispatcher();
  const std::vector<std::string> samples = all_samples();
  std::mt19937_64 rng(7);
  std::set<WireErrorKind> kinds;
  int accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string bytes = samples[rng() % samples.size()];
    switch (rng() % 4) {
      case 0:  // flip a few bytes
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
        }
        break;
      case 1:  // truncate
        bytes.resize(rng() % bytes.size());
        break;
      case 2:  // splice a random chunk in
        bytes.insert(rng() % bytes.size(), std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
      default:  // flip one bit
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
    }
    accepted += decode_everything(bytes, dispatcher, kinds);
  }
  // The mutations reached past the msgpack layer into envelope and field checks.
  EXPECT_TRUE(kinds.count(WireErrorKind::kNotMsgpack));
  EXPECT_GE(kinds.size(), 5u);
  EXPECT_GT(accepted, 0);
}

// --- dispatcher ----------------------------------------------------------------------------------

TEST(WireDispatcher, RoutesByTypeAndRejectsTheRest) {
  std::vector<std::string> seen;
  Dispatcher d;
  d.on<WeightsNotice>([&](WeightsNotice n) {
     seen.push_back("weights v" + std::to_string(n.version));
   }).on<IterationEvent>([&](IterationEvent e) { seen.push_back(std::string(to_string(e.kind))); });
  EXPECT_TRUE(d.handles("weights_notice"));
  EXPECT_FALSE(d.handles("heartbeat"));

  EXPECT_EQ(d.dispatch(sample_weights_notice().encode()), (MessageHeader{"weights_notice", 1}));
  d.dispatch(sample_iteration_event().encode());
  EXPECT_EQ(seen, (std::vector<std::string>{"weights v13", "trained"}));

  EXPECT_EQ(expect_wire_error([&] { d.dispatch(sample_heartbeat().encode()); }).kind(),
            WireErrorKind::kUnexpectedType);
  const std::string foo =
      envelope({{"type", str_value("foo")}, {"version", int_value(1)}, {"body", empty_map()}});
  EXPECT_EQ(expect_wire_error([&] { d.dispatch(foo); }).kind(), WireErrorKind::kUnknownType);
  const std::string broken = rewrite_body(sample_weights_notice().encode(), "checksum", nullptr);
  const WireError e = expect_wire_error([&] { d.dispatch(broken); });
  EXPECT_EQ(e.kind(), WireErrorKind::kMissingField);
  EXPECT_EQ(e.field(), "checksum");
  EXPECT_EQ(seen.size(), 2u);

  Dispatcher throwing;
  throwing.on<Heartbeat>([](Heartbeat) { throw std::runtime_error("handler failed"); });
  EXPECT_THROW(throwing.dispatch(sample_heartbeat().encode()), std::runtime_error);
}

// --- writer --------------------------------------------------------------------------------------

TEST(WireWriter, CustomMessagesUseTheSameFramework) {
  const std::string bytes = Writer("custom_probe", 2)
                                .str("name", "p")
                                .i64_list("dims", std::vector<std::int64_t>{1, -2})
                                .bin("blob", std::string("\x00\x01", 2))
                                .bool_list("flags", {true, false})
                                .finish();
  Reader r = read_message(bytes);
  EXPECT_EQ(r.type(), "custom_probe");
  EXPECT_EQ(r.version(), 2);
  EXPECT_NO_THROW(r.expect("custom_probe", 1, 2));
  EXPECT_EQ(expect_wire_error([&] { r.expect("custom_probe", 3, 4); }).kind(),
            WireErrorKind::kUnsupportedVersion);
  EXPECT_TRUE(r.has("dims"));
  EXPECT_FALSE(r.has("nope"));
  EXPECT_EQ(r.str("name"), "p");
  EXPECT_EQ(r.i64_list("dims"), (std::vector<std::int64_t>{1, -2}));
  EXPECT_EQ(r.bin("blob"), std::string("\x00\x01", 2));
  EXPECT_EQ(r.bool_list("flags"), (std::vector<bool>{true, false}));
  EXPECT_EQ(expect_wire_error([&] { r.f32_bin("blob"); }).kind(), WireErrorKind::kBadValue);
  EXPECT_EQ(expect_wire_error([&] { r.u64("dims"); }).kind(), WireErrorKind::kWrongType);

  Writer w("x", 1);
  w.i64("a", 1);
  EXPECT_THROW(w.i64("a", 2), std::logic_error);
}

TEST(WireErrorKinds, NamesAreStable) {
  EXPECT_EQ(to_string(WireErrorKind::kTooLarge), "too_large");
  EXPECT_EQ(to_string(WireErrorKind::kMissingField), "missing_field");
  EXPECT_EQ(to_string(WireErrorKind::kUnsupportedVersion), "unsupported_version");
}

}  // namespace
}  // namespace spotlight::wire
