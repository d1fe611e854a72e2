// The messages of docs/contracts.md, as plain structs.
//
// For every message M:
//   static constexpr auto M::fields();                // its body fields, once (fields.hpp)
//   std::string M::encode() const;                    // envelope {type: M::kType, version}
//   static M M::decode(std::string_view bytes, const DecodeOptions& = {});
//   static M M::decode_body(const Reader& r);         // after read_message() / for dispatch
// encode() and decode_body() are encode_fields() and decode_fields() over fields(), the latter
// followed by the message's checks across fields (messages.cpp).
// decode() is total: any byte string gives an M or throws WireError naming what is wrong; it
// never crashes and never throws anything else. Time stamps are wall-clock Unix milliseconds
// (cross-process); durations are seconds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/wire/codec.hpp"
#include "common/wire/fields.hpp"

namespace spotlight::wire {

// One exploration task: sample `seed` for one prompt of one iteration (planner -> explorer,
// through the Redis task stream).
// Version 2 added key_id and signature; version 3 adds trajectory_begin/end and max_staleness.
// Older tasks still decode with the defaults (unsigned: empty fields; no trajectory, the
// explorer's own staleness bound).
struct SeedTask {
  static constexpr std::string_view kType = "seed_task";
  static constexpr std::int64_t kVersion = 3;

  std::string run_id{};
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::string prompt_text{};
  std::uint64_t seed = 0;
  // The version explorers should use; an explorer may use one up to max_staleness older.
  std::int64_t weights_version = 0;
  std::int64_t sampler_steps = 0;
  std::int64_t deadline_unix_ms = 0;
  std::int64_t attempt = 0;  // 0 on first delivery
  // The planner's signature (common/run/task_signature.hpp): the id of the key and the
  // HMAC-SHA256 bytes (version 2; empty in version 1 tasks).
  std::string key_id{};
  std::string signature{};
  // Keep the trajectory of the trained SDE steps [trajectory_begin, trajectory_end) as a
  // SeedTrajectory (exploration.reuse=off_policy, exploration.mode=offload); end == 0: do not.
  std::int64_t trajectory_begin = 0;
  std::int64_t trajectory_end = 0;
  // Tighter staleness bound for this task (offload: 0, exactly weights_version); -1: the
  // explorer's own explorer.max_staleness.
  std::int64_t max_staleness = -1;

  static constexpr auto fields() {
    return std::tuple{field("run_id", &SeedTask::run_id),
                      field("iteration", &SeedTask::iteration),
                      field("prompt_index", &SeedTask::prompt_index),
                      field("prompt_text", &SeedTask::prompt_text),
                      field("seed", &SeedTask::seed),
                      field("weights_version", &SeedTask::weights_version),
                      field("sampler_steps", &SeedTask::sampler_steps),
                      field("deadline_unix_ms", &SeedTask::deadline_unix_ms),
                      field("attempt", &SeedTask::attempt),
                      field("key_id", &SeedTask::key_id).since(2),
                      field("signature", &SeedTask::signature).as_bin().since(2),
                      field("trajectory_begin", &SeedTask::trajectory_begin).since(3),
                      field("trajectory_end", &SeedTask::trajectory_end).since(3),
                      field("max_staleness", &SeedTask::max_staleness).since(3)};
  }
  std::string encode() const;
  static SeedTask decode(std::string_view bytes, const DecodeOptions& options = {});
  static SeedTask decode_body(const Reader& reader);
  bool operator==(const SeedTask&) const = default;
};

// The scored outcome of one SeedTask (explorer -> Redis, written idempotently by task_id).
struct SeedResult {
  static constexpr std::string_view kType = "seed_result";
  static constexpr std::int64_t kVersion = 1;

  std::string task_id{};
  std::string run_id{};
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::uint64_t seed = 0;
  std::int64_t weights_version_used = 0;
  double reward = 0.0;
  bool correct = false;
  std::string explorer_id{};
  double sample_seconds = 0.0;

  static constexpr auto fields() {
    return std::tuple{field("task_id", &SeedResult::task_id),
                      field("run_id", &SeedResult::run_id),
                      field("iteration", &SeedResult::iteration),
                      field("prompt_index", &SeedResult::prompt_index),
                      field("seed", &SeedResult::seed),
                      field("weights_version_used", &SeedResult::weights_version_used),
                      field("reward", &SeedResult::reward),
                      field("correct", &SeedResult::correct),
                      field("explorer_id", &SeedResult::explorer_id),
                      field("sample_seconds", &SeedResult::sample_seconds)};
  }
  std::string encode() const;
  static SeedResult decode(std::string_view bytes, const DecodeOptions& options = {});
  static SeedResult decode_body(const Reader& reader);
  bool operator==(const SeedResult&) const = default;
};

// In-flight sampler state committed on a preemption notice, so another explorer resumes the
// task at step `step_index` instead of from noise.
// Invariant (checked by decode): the product of latent_shape equals latent.size() (both may be
// empty), every dimension >= 0. On the wire `latent` is one bin of float32 little-endian.
struct InflightCommit {
  static constexpr std::string_view kType = "inflight_commit";
  static constexpr std::int64_t kVersion = 1;

  std::string task_id{};
  std::uint64_t seed = 0;
  std::int64_t step_index = 0;
  std::int64_t weights_version = 0;
  std::vector<float> latent{};
  std::vector<std::int64_t> latent_shape{};

  static constexpr auto fields() {
    return std::tuple{field("task_id", &InflightCommit::task_id),
                      field("seed", &InflightCommit::seed),
                      field("step_index", &InflightCommit::step_index),
                      field("weights_version", &InflightCommit::weights_version),
                      field("latent", &InflightCommit::latent),
                      field("latent_shape", &InflightCommit::latent_shape)};
  }
  std::string encode() const;
  static InflightCommit decode(std::string_view bytes, const DecodeOptions& options = {});
  static InflightCommit decode_body(const Reader& reader);
  bool operator==(const InflightCommit&) const = default;
};

// The kept SDE trajectory of one explored seed (explorer -> trajectory store, keyed by task id):
// what the trainer trains on instead of sampling that rollout again. For the trained steps
// j in [step_begin, step_end) it holds the latents x_j and x_{j+1} (x_{step_begin} ..
// x_{step_end}) and log p(x_{j+1} | x_j) under the weights that sampled it ("old" in the clipped
// loss). The trainer checks the claims before training on it: weights_version and
// weights_checksum (that version's published manifest), and checksum (XXH64, lowercase hex, of
// the latents' float32 bytes followed by the log_probs' float32 bytes; common/rollout).
// Invariant (checked by decode): 0 <= step_begin < step_end <= sampler_steps; latent_shape is
// non-empty with every dimension >= 1; latents holds (step_end - step_begin + 1) x
// prod(latent_shape) values and log_probs step_end - step_begin. On the wire both are bins of
// float32 little-endian.
struct SeedTrajectory {
  static constexpr std::string_view kType = "seed_trajectory";
  static constexpr std::int64_t kVersion = 1;

  std::string task_id{};
  std::string run_id{};
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::uint64_t seed = 0;
  std::int64_t weights_version = 0;
  std::string weights_checksum{};  // the manifest checksum of weights_version
  std::int64_t sampler_steps = 0;
  double noise_level = 0.0;  // SDE a
  double shift = 1.0;        // time-grid shift
  std::int64_t step_begin = 0;
  std::int64_t step_end = 0;
  std::vector<std::int64_t> latent_shape{};  // one latent, e.g. {C, H, W}
  std::vector<float> latents{};
  std::vector<float> log_probs{};
  std::string checksum{};
  std::string explorer_id{};

  static constexpr auto fields() {
    return std::tuple{field("task_id", &SeedTrajectory::task_id),
                      field("run_id", &SeedTrajectory::run_id),
                      field("iteration", &SeedTrajectory::iteration),
                      field("prompt_index", &SeedTrajectory::prompt_index),
                      field("seed", &SeedTrajectory::seed),
                      field("weights_version", &SeedTrajectory::weights_version),
                      field("weights_checksum", &SeedTrajectory::weights_checksum),
                      field("sampler_steps", &SeedTrajectory::sampler_steps),
                      field("noise_level", &SeedTrajectory::noise_level),
                      field("shift", &SeedTrajectory::shift),
                      field("step_begin", &SeedTrajectory::step_begin),
                      field("step_end", &SeedTrajectory::step_end),
                      field("latent_shape", &SeedTrajectory::latent_shape),
                      field("latents", &SeedTrajectory::latents),
                      field("log_probs", &SeedTrajectory::log_probs),
                      field("checksum", &SeedTrajectory::checksum),
                      field("explorer_id", &SeedTrajectory::explorer_id)};
  }
  std::string encode() const;
  static SeedTrajectory decode(std::string_view bytes, const DecodeOptions& options = {});
  static SeedTrajectory decode_body(const Reader& reader);
  bool operator==(const SeedTrajectory&) const = default;
};

// Weights version `version` is published (trainer -> everyone, ZeroMQ); the blob itself is in
// the weight store under `location`.
struct WeightsNotice {
  static constexpr std::string_view kType = "weights_notice";
  static constexpr std::int64_t kVersion = 1;

  std::int64_t version = 0;
  std::string checksum{};  // lowercase hex digest of the blob
  std::string location{};  // weight-store key
  std::int64_t bytes = 0;  // blob size, >= 0
  std::int64_t published_unix_ms = 0;

  static constexpr auto fields() {
    return std::tuple{field("version", &WeightsNotice::version),
                      field("checksum", &WeightsNotice::checksum),
                      field("location", &WeightsNotice::location),
                      field("bytes", &WeightsNotice::bytes).check(at_least<0>),
                      field("published_unix_ms", &WeightsNotice::published_unix_ms)};
  }
  std::string encode() const;
  static WeightsNotice decode(std::string_view bytes, const DecodeOptions& options = {});
  static WeightsNotice decode_body(const Reader& reader);
  bool operator==(const WeightsNotice&) const = default;
};

enum class IterationKind { kStarted, kExplore, kTrained, kFinished };
// The wire spelling of each kind.
template <>
struct WireEnum<IterationKind> {
  static constexpr std::array kNames = {
      std::pair{IterationKind::kStarted, std::string_view("started")},
      std::pair{IterationKind::kExplore, std::string_view("explore")},
      std::pair{IterationKind::kTrained, std::string_view("trained")},
      std::pair{IterationKind::kFinished, std::string_view("finished")}};
};
// The wire spelling ("started", ...; WireEnum above).
std::string_view to_string(IterationKind kind);
std::optional<IterationKind> parse_iteration_kind(std::string_view text);

// A step of the run's schedule (planner/trainer -> everyone, ZeroMQ).
struct IterationEvent {
  static constexpr std::string_view kType = "iteration_event";
  static constexpr std::int64_t kVersion = 1;

  std::string run_id{};
  std::int64_t iteration = 0;
  IterationKind kind = IterationKind::kStarted;
  std::int64_t deadline_unix_ms = 0;
  std::int64_t version = 0;  // weights version current at the event

  static constexpr auto fields() {
    return std::tuple{field("run_id", &IterationEvent::run_id),
                      field("iteration", &IterationEvent::iteration),
                      field("kind", &IterationEvent::kind),
                      field("deadline_unix_ms", &IterationEvent::deadline_unix_ms),
                      field("version", &IterationEvent::version)};
  }
  std::string encode() const;
  static IterationEvent decode(std::string_view bytes, const DecodeOptions& options = {});
  static IterationEvent decode_body(const Reader& reader);
  bool operator==(const IterationEvent&) const = default;
};

// The fields of RewardRequest and of RewardRequestView (M), which share their names: images is a
// std::vector<float> in one and a std::string_view of its bytes in the other.
template <class M>
constexpr auto reward_request_fields() {
  return std::tuple{field("request_id", &M::request_id),
                    field("prompts", &M::prompts),
                    field("images", &M::images),
                    field("width", &M::width).check(at_least<0>),
                    field("height", &M::height).check(at_least<0>),
                    field("count", &M::count).check(at_least<0>),
                    field("channels", &M::channels).check(at_least<1>),
                    field("content", &M::content).since(2).check(one_of<M::kImages, M::kLatents>)};
}

// Images (or latents) to score (explorer/trainer -> reward, ZeroMQ request).
// Invariant (checked by decode): prompts.size() == count, and images holds count samples of
// height x width x channels float32 values in HWC order, sample after sample; count, width and
// height >= 0, channels >= 1. On the wire `images` is one bin of float32 little-endian.
// `content` says what the samples are: "images" (RGB in [0, 1]) or "latents" (the sampler's final
// latents, channels-last, unbounded; the reward service decodes them, e.g. with a VAE). Version 2
// added `content`; encode() writes version 1 (no `content` field) for images, so version-1
// readers keep working, and version 2 for latents, which a version-1 reader refuses.
struct RewardRequest {
  static constexpr std::string_view kType = "reward_request";
  static constexpr std::int64_t kVersion = 2;
  static constexpr std::string_view kImages = "images";
  static constexpr std::string_view kLatents = "latents";

  std::string request_id{};
  std::vector<std::string> prompts{};
  std::vector<float> images{};
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::int64_t count = 0;
  std::int64_t channels = 3;
  std::string content{kImages};  // "images" or "latents"

  static constexpr auto fields() { return reward_request_fields<RewardRequest>(); }
  std::string encode() const;
  static RewardRequest decode(std::string_view bytes, const DecodeOptions& options = {});
  static RewardRequest decode_body(const Reader& reader);
  bool operator==(const RewardRequest&) const = default;
};

// A RewardRequest decoded without copying its images: `images` points at the float32
// little-endian bytes inside the decoded message (valid while those bytes live). Same checks as
// RewardRequest::decode; images.size() == 4 x count x height x width x channels. For services
// that take images a slice at a time (wire::copy_f32_le).
struct RewardRequestView {
  // The message it reads.
  static constexpr std::string_view kType = RewardRequest::kType;
  static constexpr std::int64_t kVersion = RewardRequest::kVersion;
  static constexpr std::string_view kImages = RewardRequest::kImages;
  static constexpr std::string_view kLatents = RewardRequest::kLatents;

  std::string request_id{};
  std::vector<std::string> prompts{};
  std::string_view images{};
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::int64_t count = 0;
  std::int64_t channels = 3;
  std::string content{RewardRequest::kImages};

  static RewardRequestView decode(std::string_view bytes, const DecodeOptions& options = {});
  static RewardRequestView decode_body(const Reader& reader);
  static constexpr auto fields() { return reward_request_fields<RewardRequestView>(); }
  // Values (floats) per image: height x width x channels.
  std::size_t image_values() const;
};

// Scores for one RewardRequest, in its image order (reward -> requester, ZeroMQ reply).
// Invariant (checked by decode): rewards.size() == correct.size(). A failed request has a
// non-empty `error` (and usually no rewards).
// Optional breakdown (additive, so no new version; both fields or neither): `components` names K
// parts of the reward and `component_rewards` holds rewards.size() x K values, sample-major
// (sample i, part j at [i * K + j]). encode() writes them only when `components` is non-empty.
struct RewardReply {
  static constexpr std::string_view kType = "reward_reply";
  static constexpr std::int64_t kVersion = 1;

  std::string request_id{};
  std::vector<double> rewards{};
  std::vector<bool> correct{};
  std::string error{};
  std::vector<std::string> components{};
  std::vector<double> component_rewards{};
  // The service's declared reward range [lo, hi] (finite, lo < hi); empty: not declared.
  std::vector<double> range{};

  static constexpr auto fields() {
    return std::tuple{field("request_id", &RewardReply::request_id),
                      field("rewards", &RewardReply::rewards),
                      field("correct", &RewardReply::correct),
                      field("error", &RewardReply::error),
                      field("components", &RewardReply::components).optional(1),
                      field("component_rewards", &RewardReply::component_rewards).optional(1),
                      field("range", &RewardReply::range).optional(2).check(finite_interval)};
  }
  bool ok() const { return error.empty(); }
  std::string encode() const;
  static RewardReply decode(std::string_view bytes, const DecodeOptions& options = {});
  static RewardReply decode_body(const Reader& reader);
  bool operator==(const RewardReply&) const = default;
};

// Liveness and throughput of one explorer (explorer -> planner, through the run's Redis state
// under RunKeys::explorer_heartbeat(explorer_id), every explorer.heartbeat_ms).
struct Heartbeat {
  static constexpr std::string_view kType = "heartbeat";
  static constexpr std::int64_t kVersion = 1;

  std::string explorer_id{};
  std::int64_t unix_ms = 0;
  std::int64_t tasks_in_flight = 0;
  double samples_per_second = 0.0;

  static constexpr auto fields() {
    return std::tuple{field("explorer_id", &Heartbeat::explorer_id),
                      field("unix_ms", &Heartbeat::unix_ms),
                      field("tasks_in_flight", &Heartbeat::tasks_in_flight),
                      field("samples_per_second", &Heartbeat::samples_per_second)};
  }
  std::string encode() const;
  static Heartbeat decode(std::string_view bytes, const DecodeOptions& options = {});
  static Heartbeat decode_body(const Reader& reader);
  bool operator==(const Heartbeat&) const = default;
};

// The trainer's progress (trainer -> planner, explorers, through the run's Redis state): the
// iteration it works on, or, once `finished`, the number of iterations it trained.
struct TrainerProgress {
  static constexpr std::string_view kType = "trainer_progress";
  static constexpr std::int64_t kVersion = 1;

  std::int64_t iteration = 0;  // >= 0
  bool finished = false;       // the run is over (iteration == the run's iterations)
  std::int64_t unix_ms = 0;    // when it was written

  static constexpr auto fields() {
    return std::tuple{field("iteration", &TrainerProgress::iteration).check(at_least<0>),
                      field("finished", &TrainerProgress::finished),
                      field("unix_ms", &TrainerProgress::unix_ms)};
  }
  std::string encode() const;
  static TrainerProgress decode(std::string_view bytes, const DecodeOptions& options = {});
  static TrainerProgress decode_body(const Reader& reader);
  bool operator==(const TrainerProgress&) const = default;
};

// The time split of the trainer's last iteration (trainer -> planner, through Redis): what the
// bandit planner predicts the next iteration's training time and rewards its arms with.
struct TrainerTiming {
  static constexpr std::string_view kType = "trainer_timing";
  static constexpr std::int64_t kVersion = 1;

  std::int64_t iteration = 0;      // the iteration timed (-1: none yet, a time estimate only)
  double iteration_seconds = 0.0;  // wall time of the whole iteration, waiting included
  double explore_seconds = 0.0;    // waiting for explored seeds
  double rollout_seconds = 0.0;
  double train_seconds = 0.0;
  double group_variance = 0.0;  // mean within-group reward variance trained on

  static constexpr auto fields() {
    return std::tuple{field("iteration", &TrainerTiming::iteration),
                      field("iteration_seconds", &TrainerTiming::iteration_seconds),
                      field("explore_seconds", &TrainerTiming::explore_seconds),
                      field("rollout_seconds", &TrainerTiming::rollout_seconds),
                      field("train_seconds", &TrainerTiming::train_seconds),
                      field("group_variance", &TrainerTiming::group_variance)};
  }
  std::string encode() const;
  static TrainerTiming decode(std::string_view bytes, const DecodeOptions& options = {});
  static TrainerTiming decode_body(const Reader& reader);
  bool operator==(const TrainerTiming&) const = default;
};

// The planner's per-iteration plan (planner -> trainer, through Redis; written before the
// iteration's seed tasks and never rewritten): N candidates per prompt with S sampler steps.
// Version 2 adds budget_candidates; a version 1 record decodes with budget_candidates =
// candidates (its budget is the whole plan).
struct PlanRecord {
  static constexpr std::string_view kType = "plan_record";
  static constexpr std::int64_t kVersion = 2;

  std::int64_t iteration = 0;   // >= 0
  std::int64_t candidates = 0;  // N >= 0; 0: nothing explored, the trainer uses random seeds
  std::int64_t steps = 0;       // S >= 0 (0 when candidates is 0)
  // The exploration work, prompts x budget_candidates samples, after which the planner purges the
  // iteration's waiting tasks (>= 0). Equals candidates, except with adaptive allocation, where
  // candidates is the cap (room for the prompts that need more) and this is the policy's N.
  std::int64_t budget_candidates = 0;
  std::string reason{};  // the planner's reason as JSON text, for people; may be empty

  static constexpr auto fields() {
    return std::tuple{
        field("iteration", &PlanRecord::iteration).check(at_least<0>),
        field("candidates", &PlanRecord::candidates).check(at_least<0>),
        field("steps", &PlanRecord::steps).check(at_least<0>),
        field("budget_candidates", &PlanRecord::budget_candidates).since(2).check(at_least<0>),
        field("reason", &PlanRecord::reason)};
  }
  std::string encode() const;
  static PlanRecord decode(std::string_view bytes, const DecodeOptions& options = {});
  static PlanRecord decode_body(const Reader& reader);
  bool operator==(const PlanRecord&) const = default;
};

// One prompt's Beta(a, b) posterior of success across iterations (planner -> a restarted planner,
// through Redis; exploration.allocation=adaptive). A reward r in [0, 1] adds r to a and 1 - r to
// b; an iteration's rewards are added once (updated_through guards against counting twice).
struct PromptPosterior {
  static constexpr std::string_view kType = "prompt_posterior";
  static constexpr std::int64_t kVersion = 1;

  std::string prompt_text{};            // the prompt (the key is a hash of it)
  double a = 1.0;                       // > 0
  double b = 1.0;                       // > 0
  std::int64_t updated_through = -1;    // the last iteration whose rewards are in, >= -1
  std::int64_t uniform_iterations = 0;  // iterations whose explored rewards were all alike

  static constexpr auto fields() {
    return std::tuple{
        field("prompt_text", &PromptPosterior::prompt_text),
        field("a", &PromptPosterior::a).check(positive_finite),
        field("b", &PromptPosterior::b).check(positive_finite),
        field("updated_through", &PromptPosterior::updated_through).check(at_least<-1>),
        field("uniform_iterations", &PromptPosterior::uniform_iterations).check(at_least<0>)};
  }
  std::string encode() const;
  static PromptPosterior decode(std::string_view bytes, const DecodeOptions& options = {});
  static PromptPosterior decode_body(const Reader& reader);
  bool operator==(const PromptPosterior&) const = default;
};

// How far the planner has enqueued (planner -> a restarted planner, through Redis).
struct PlannerProgress {
  static constexpr std::string_view kType = "planner_progress";
  static constexpr std::int64_t kVersion = 1;

  std::int64_t enqueued_through = -1;  // the highest iteration whose tasks are enqueued, >= -1
  std::int64_t unix_ms = 0;

  static constexpr auto fields() {
    return std::tuple{
        field("enqueued_through", &PlannerProgress::enqueued_through).check(at_least<-1>),
        field("unix_ms", &PlannerProgress::unix_ms)};
  }
  std::string encode() const;
  static PlannerProgress decode(std::string_view bytes, const DecodeOptions& options = {});
  static PlannerProgress decode_body(const Reader& reader);
  bool operator==(const PlannerProgress&) const = default;
};

}  // namespace spotlight::wire
