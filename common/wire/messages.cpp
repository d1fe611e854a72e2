#include "common/wire/messages.hpp"

#include <array>
#include <cmath>
#include <limits>

#include "common/wire/dispatcher.hpp"

namespace spotlight::wire {
namespace {

constexpr std::array<std::string_view, 14> kKnownTypes = {
    SeedTask::kType,        SeedResult::kType,      InflightCommit::kType, SeedTrajectory::kType,
    WeightsNotice::kType,   IterationEvent::kType,  RewardRequest::kType,  RewardReply::kType,
    Heartbeat::kType,       TrainerProgress::kType, TrainerTiming::kType,  PlanRecord::kType,
    PlannerProgress::kType, PromptPosterior::kType,
};

template <class Message>
Message decode_as(std::string_view bytes, const DecodeOptions& options) {
  return Message::decode_body(read_message(bytes, options));
}

template <class Message>
void expect(const Reader& r) {
  r.expect(Message::kType, 1, Message::kVersion);
}

void non_negative(const Reader& r, std::string_view field, std::int64_t value) {
  if (value < 0)
    r.fail(WireErrorKind::kBadValue, field, "must be >= 0, got " + std::to_string(value));
}

// a * b, or nullopt on overflow; a, b >= 0.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

}  // namespace

std::span<const std::string_view> known_types() {
  return kKnownTypes;
}

bool is_known_type(std::string_view type) {
  for (std::string_view known : kKnownTypes) {
    if (known == type) return true;
  }
  return false;
}

// --- SeedTask ----------------------------------------------------------------------------------

std::string SeedTask::encode() const {
  return Writer(kType, kVersion)
      .str("run_id", run_id)
      .i64("iteration", iteration)
      .i64("prompt_index", prompt_index)
      .str("prompt_text", prompt_text)
      .u64("seed", seed)
      .i64("weights_version", weights_version)
      .i64("sampler_steps", sampler_steps)
      .i64("deadline_unix_ms", deadline_unix_ms)
      .i64("attempt", attempt)
      .str("key_id", key_id)
      .bin("signature", signature)
      .i64("trajectory_begin", trajectory_begin)
      .i64("trajectory_end", trajectory_end)
      .i64("max_staleness", max_staleness)
      .finish();
}

SeedTask SeedTask::decode_body(const Reader& r) {
  expect<SeedTask>(r);
  SeedTask m;
  m.run_id = r.str("run_id");
  m.iteration = r.i64("iteration");
  m.prompt_index = r.i64("prompt_index");
  m.prompt_text = r.str("prompt_text");
  m.seed = r.u64("seed");
  m.weights_version = r.i64("weights_version");
  m.sampler_steps = r.i64("sampler_steps");
  m.deadline_unix_ms = r.i64("deadline_unix_ms");
  m.attempt = r.i64("attempt");
  if (r.version() >= 2) {
    m.key_id = r.str("key_id");
    m.signature = r.bin("signature");
  }
  if (r.version() >= 3) {
    m.trajectory_begin = r.i64("trajectory_begin");
    m.trajectory_end = r.i64("trajectory_end");
    m.max_staleness = r.i64("max_staleness");
  }
  return m;
}

SeedTask SeedTask::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<SeedTask>(bytes, options);
}

// --- SeedResult --------------------------------------------------------------------------------

std::string SeedResult::encode() const {
  return Writer(kType, kVersion)
      .str("task_id", task_id)
      .str("run_id", run_id)
      .i64("iteration", iteration)
      .i64("prompt_index", prompt_index)
      .u64("seed", seed)
      .i64("weights_version_used", weights_version_used)
      .f64("reward", reward)
      .boolean("correct", correct)
      .str("explorer_id", explorer_id)
      .f64("sample_seconds", sample_seconds)
      .finish();
}

SeedResult SeedResult::decode_body(const Reader& r) {
  expect<SeedResult>(r);
  SeedResult m;
  m.task_id = r.str("task_id");
  m.run_id = r.str("run_id");
  m.iteration = r.i64("iteration");
  m.prompt_index = r.i64("prompt_index");
  m.seed = r.u64("seed");
  m.weights_version_used = r.i64("weights_version_used");
  m.reward = r.f64("reward");
  m.correct = r.boolean("correct");
  m.explorer_id = r.str("explorer_id");
  m.sample_seconds = r.f64("sample_seconds");
  return m;
}

SeedResult SeedResult::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<SeedResult>(bytes, options);
}

// --- InflightCommit ------------------------------------------------------------------------------

std::string InflightCommit::encode() const {
  return Writer(kType, kVersion)
      .str("task_id", task_id)
      .u64("seed", seed)
      .i64("step_index", step_index)
      .i64("weights_version", weights_version)
      .f32_bin("latent", latent)
      .i64_list("latent_shape", latent_shape)
      .finish();
}

InflightCommit InflightCommit::decode_body(const Reader& r) {
  expect<InflightCommit>(r);
  InflightCommit m;
  m.task_id = r.str("task_id");
  m.seed = r.u64("seed");
  m.step_index = r.i64("step_index");
  m.weights_version = r.i64("weights_version");
  m.latent_shape = r.i64_list("latent_shape");
  m.latent = r.f32_bin("latent");
  if (m.latent_shape.empty()) {
    if (!m.latent.empty()) {
      r.fail(WireErrorKind::kBadValue, "latent_shape",
             "is empty but 'latent' has " + std::to_string(m.latent.size()) + " values");
    }
    return m;
  }
  std::optional<std::uint64_t> elements = 1;
  for (std::size_t i = 0; i < m.latent_shape.size(); ++i) {
    const std::int64_t dim = m.latent_shape[i];
    if (dim < 0) {
      r.fail(WireErrorKind::kBadValue, "latent_shape",
             "has negative dimension " + std::to_string(dim) + " at index " + std::to_string(i));
    }
    if (elements) elements = checked_mul(*elements, static_cast<std::uint64_t>(dim));
  }
  if (!elements || *elements != m.latent.size()) {
    r.fail(
        WireErrorKind::kBadValue, "latent",
        "has " + std::to_string(m.latent.size()) + " values, which does not match 'latent_shape'");
  }
  return m;
}

InflightCommit InflightCommit::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<InflightCommit>(bytes, options);
}

// --- SeedTrajectory ------------------------------------------------------------------------------

std::string SeedTrajectory::encode() const {
  return Writer(kType, kVersion)
      .str("task_id", task_id)
      .str("run_id", run_id)
      .i64("iteration", iteration)
      .i64("prompt_index", prompt_index)
      .u64("seed", seed)
      .i64("weights_version", weights_version)
      .str("weights_checksum", weights_checksum)
      .i64("sampler_steps", sampler_steps)
      .f64("noise_level", noise_level)
      .f64("shift", shift)
      .i64("step_begin", step_begin)
      .i64("step_end", step_end)
      .i64_list("latent_shape", latent_shape)
      .f32_bin("latents", latents)
      .f32_bin("log_probs", log_probs)
      .str("checksum", checksum)
      .str("explorer_id", explorer_id)
      .finish();
}

SeedTrajectory SeedTrajectory::decode_body(const Reader& r) {
  expect<SeedTrajectory>(r);
  SeedTrajectory m;
  m.task_id = r.str("task_id");
  m.run_id = r.str("run_id");
  m.iteration = r.i64("iteration");
  m.prompt_index = r.i64("prompt_index");
  m.seed = r.u64("seed");
  m.weights_version = r.i64("weights_version");
  m.weights_checksum = r.str("weights_checksum");
  m.sampler_steps = r.i64("sampler_steps");
  m.noise_level = r.f64("noise_level");
  m.shift = r.f64("shift");
  m.step_begin = r.i64("step_begin");
  m.step_end = r.i64("step_end");
  m.latent_shape = r.i64_list("latent_shape");
  m.latents = r.f32_bin("latents");
  m.log_probs = r.f32_bin("log_probs");
  m.checksum = r.str("checksum");
  m.explorer_id = r.str("explorer_id");
  if (m.step_begin < 0 || m.step_begin >= m.step_end || m.step_end > m.sampler_steps) {
    r.fail(WireErrorKind::kBadValue, "step_end",
           "steps [" + std::to_string(m.step_begin) + ", " + std::to_string(m.step_end) +
               ") are not a non-empty range within [0, sampler_steps = " +
               std::to_string(m.sampler_steps) + "]");
  }
  if (m.latent_shape.empty()) r.fail(WireErrorKind::kBadValue, "latent_shape", "is empty");
  std::optional<std::uint64_t> elements = 1;
  for (std::size_t i = 0; i < m.latent_shape.size(); ++i) {
    const std::int64_t dim = m.latent_shape[i];
    if (dim < 1) {
      r.fail(WireErrorKind::kBadValue, "latent_shape",
             "has dimension " + std::to_string(dim) + " < 1 at index " + std::to_string(i));
    }
    if (elements) elements = checked_mul(*elements, static_cast<std::uint64_t>(dim));
  }
  const auto steps = static_cast<std::uint64_t>(m.step_end - m.step_begin);
  if (elements) elements = checked_mul(*elements, steps + 1);
  if (!elements || *elements != m.latents.size()) {
    r.fail(WireErrorKind::kBadValue, "latents",
           "has " + std::to_string(m.latents.size()) +
               " values, expected (step_end - step_begin + 1) x the latent_shape's elements");
  }
  if (m.log_probs.size() != steps) {
    r.fail(WireErrorKind::kBadValue, "log_probs",
           "has " + std::to_string(m.log_probs.size()) + " values, expected " +
               std::to_string(steps) + " (one per step)");
  }
  return m;
}

SeedTrajectory SeedTrajectory::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<SeedTrajectory>(bytes, options);
}

// --- WeightsNotice -------------------------------------------------------------------------------

std::string WeightsNotice::encode() const {
  return Writer(kType, kVersion)
      .i64("version", version)
      .str("checksum", checksum)
      .str("location", location)
      .i64("bytes", bytes)
      .i64("published_unix_ms", published_unix_ms)
      .finish();
}

WeightsNotice WeightsNotice::decode_body(const Reader& r) {
  expect<WeightsNotice>(r);
  WeightsNotice m;
  m.version = r.i64("version");
  m.checksum = r.str("checksum");
  m.location = r.str("location");
  m.bytes = r.i64("bytes");
  non_negative(r, "bytes", m.bytes);
  m.published_unix_ms = r.i64("published_unix_ms");
  return m;
}

WeightsNotice WeightsNotice::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<WeightsNotice>(bytes, options);
}

// --- IterationEvent ------------------------------------------------------------------------------

std::string_view to_string(IterationKind kind) {
  switch (kind) {
    case IterationKind::kStarted:
      return "started";
    case IterationKind::kExplore:
      return "explore";
    case IterationKind::kTrained:
      return "trained";
    case IterationKind::kFinished:
      return "finished";
  }
  return "unknown";
}

std::optional<IterationKind> parse_iteration_kind(std::string_view text) {
  for (IterationKind k : {IterationKind::kStarted, IterationKind::kExplore, IterationKind::kTrained,
                          IterationKind::kFinished}) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

std::string IterationEvent::encode() const {
  return Writer(kType, kVersion)
      .str("run_id", run_id)
      .i64("iteration", iteration)
      .str("kind", to_string(kind))
      .i64("deadline_unix_ms", deadline_unix_ms)
      .i64("version", version)
      .finish();
}

IterationEvent IterationEvent::decode_body(const Reader& r) {
  expect<IterationEvent>(r);
  IterationEvent m;
  m.run_id = r.str("run_id");
  m.iteration = r.i64("iteration");
  const std::string kind = r.str("kind");
  const auto parsed = parse_iteration_kind(kind);
  if (!parsed) {
    r.fail(WireErrorKind::kBadValue, "kind",
           "must be one of started|explore|trained|finished, got '" + kind + "'");
  }
  m.kind = *parsed;
  m.deadline_unix_ms = r.i64("deadline_unix_ms");
  m.version = r.i64("version");
  return m;
}

IterationEvent IterationEvent::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<IterationEvent>(bytes, options);
}

// --- RewardRequest -------------------------------------------------------------------------------

std::string RewardRequest::encode() const {
  const bool images_only = content == kImages;
  Writer w(kType, images_only ? 1 : kVersion);
  w.str("request_id", request_id)
      .str_list("prompts", prompts)
      .f32_bin("images", images)
      .i64("width", width)
      .i64("height", height)
      .i64("count", count)
      .i64("channels", channels);
  if (!images_only) w.str("content", content);
  return w.finish();
}

RewardRequestView RewardRequestView::decode_body(const Reader& r) {
  r.expect(RewardRequest::kType, 1, RewardRequest::kVersion);
  RewardRequestView m;
  m.request_id = r.str("request_id");
  m.width = r.i64("width");
  m.height = r.i64("height");
  m.count = r.i64("count");
  m.channels = r.i64("channels");
  non_negative(r, "width", m.width);
  non_negative(r, "height", m.height);
  non_negative(r, "count", m.count);
  if (m.channels < 1) {
    r.fail(WireErrorKind::kBadValue, "channels", "must be >= 1, got " + std::to_string(m.channels));
  }
  if (r.version() >= 2) {
    m.content = r.str("content");
    if (m.content != RewardRequest::kImages && m.content != RewardRequest::kLatents) {
      r.fail(WireErrorKind::kBadValue, "content",
             "must be 'images' or 'latents', got '" + m.content + "'");
    }
  }
  m.prompts = r.str_list("prompts");
  if (m.prompts.size() != static_cast<std::uint64_t>(m.count)) {
    r.fail(WireErrorKind::kBadValue, "prompts",
           "has " + std::to_string(m.prompts.size()) + " entries, 'count' is " +
               std::to_string(m.count));
  }
  m.images = r.bin_view("images");
  if (m.images.size() % sizeof(float) != 0) {
    r.fail(WireErrorKind::kBadValue, "images",
           "has " + std::to_string(m.images.size()) + " bytes, not a whole number of float32");
  }
  std::optional<std::uint64_t> expected = static_cast<std::uint64_t>(m.count);
  for (std::int64_t dim : {m.height, m.width, m.channels}) {
    if (expected) expected = checked_mul(*expected, static_cast<std::uint64_t>(dim));
  }
  const std::size_t values = m.images.size() / sizeof(float);
  if (!expected || *expected != values) {
    r.fail(WireErrorKind::kBadValue, "images",
           "has " + std::to_string(values) + " values, expected count x height x width x channels");
  }
  return m;
}

RewardRequestView RewardRequestView::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_body(read_message(bytes, options));
}

std::size_t RewardRequestView::image_values() const {
  return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
         static_cast<std::size_t>(channels);
}

RewardRequest RewardRequest::decode_body(const Reader& r) {
  const RewardRequestView view = RewardRequestView::decode_body(r);
  RewardRequest m;
  m.request_id = view.request_id;
  m.prompts = view.prompts;
  m.width = view.width;
  m.height = view.height;
  m.count = view.count;
  m.channels = view.channels;
  m.content = view.content;
  m.images.resize(view.images.size() / sizeof(float));
  copy_f32_le(view.images, 0, m.images.size(), m.images.data());
  return m;
}

RewardRequest RewardRequest::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<RewardRequest>(bytes, options);
}

// --- RewardReply ---------------------------------------------------------------------------------

std::string RewardReply::encode() const {
  Writer w(kType, kVersion);
  w.str("request_id", request_id)
      .f64_list("rewards", rewards)
      .bool_list("correct", correct)
      .str("error", error);
  if (!components.empty()) {
    w.str_list("components", components).f64_list("component_rewards", component_rewards);
  }
  if (!range.empty()) w.f64_list("range", range);
  return w.finish();
}

RewardReply RewardReply::decode_body(const Reader& r) {
  expect<RewardReply>(r);
  RewardReply m;
  m.request_id = r.str("request_id");
  m.rewards = r.f64_list("rewards");
  m.correct = r.bool_list("correct");
  m.error = r.str("error");
  if (m.correct.size() != m.rewards.size()) {
    r.fail(WireErrorKind::kBadValue, "correct",
           "has " + std::to_string(m.correct.size()) + " entries, 'rewards' has " +
               std::to_string(m.rewards.size()));
  }
  if (r.has("components") || r.has("component_rewards")) {
    m.components = r.str_list("components");
    m.component_rewards = r.f64_list("component_rewards");
    const auto expected = checked_mul(m.rewards.size(), m.components.size());
    if (!expected || *expected != m.component_rewards.size()) {
      r.fail(WireErrorKind::kBadValue, "component_rewards",
             "has " + std::to_string(m.component_rewards.size()) +
                 " values, expected one per reward and component (" +
                 std::to_string(m.rewards.size()) + " x " + std::to_string(m.components.size()) +
                 ")");
    }
  }
  if (r.has("range")) {
    m.range = r.f64_list("range");
    if (m.range.size() != 2 || !std::isfinite(m.range[0]) || !std::isfinite(m.range[1]) ||
        !(m.range[0] < m.range[1])) {
      r.fail(WireErrorKind::kBadValue, "range", "must be two finite numbers [lo, hi] with lo < hi");
    }
  }
  return m;
}

RewardReply RewardReply::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<RewardReply>(bytes, options);
}

// --- Heartbeat -----------------------------------------------------------------------------------

std::string Heartbeat::encode() const {
  return Writer(kType, kVersion)
      .str("explorer_id", explorer_id)
      .i64("unix_ms", unix_ms)
      .i64("tasks_in_flight", tasks_in_flight)
      .f64("samples_per_second", samples_per_second)
      .finish();
}

Heartbeat Heartbeat::decode_body(const Reader& r) {
  expect<Heartbeat>(r);
  Heartbeat m;
  m.explorer_id = r.str("explorer_id");
  m.unix_ms = r.i64("unix_ms");
  m.tasks_in_flight = r.i64("tasks_in_flight");
  m.samples_per_second = r.f64("samples_per_second");
  return m;
}

Heartbeat Heartbeat::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<Heartbeat>(bytes, options);
}

// --- TrainerProgress -----------------------------------------------------------------------------

std::string TrainerProgress::encode() const {
  return Writer(kType, kVersion)
      .i64("iteration", iteration)
      .boolean("finished", finished)
      .i64("unix_ms", unix_ms)
      .finish();
}

TrainerProgress TrainerProgress::decode_body(const Reader& r) {
  expect<TrainerProgress>(r);
  TrainerProgress m;
  m.iteration = r.i64("iteration");
  m.finished = r.boolean("finished");
  m.unix_ms = r.i64("unix_ms");
  non_negative(r, "iteration", m.iteration);
  return m;
}

TrainerProgress TrainerProgress::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<TrainerProgress>(bytes, options);
}

// --- TrainerTiming -------------------------------------------------------------------------------

std::string TrainerTiming::encode() const {
  return Writer(kType, kVersion)
      .i64("iteration", iteration)
      .f64("iteration_seconds", iteration_seconds)
      .f64("explore_seconds", explore_seconds)
      .f64("rollout_seconds", rollout_seconds)
      .f64("train_seconds", train_seconds)
      .f64("group_variance", group_variance)
      .finish();
}

TrainerTiming TrainerTiming::decode_body(const Reader& r) {
  expect<TrainerTiming>(r);
  TrainerTiming m;
  m.iteration = r.i64("iteration");
  m.iteration_seconds = r.f64("iteration_seconds");
  m.explore_seconds = r.f64("explore_seconds");
  m.rollout_seconds = r.f64("rollout_seconds");
  m.train_seconds = r.f64("train_seconds");
  m.group_variance = r.f64("group_variance");
  return m;
}

TrainerTiming TrainerTiming::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<TrainerTiming>(bytes, options);
}

// --- PlannerProgress -----------------------------------------------------------------------------

std::string PlannerProgress::encode() const {
  return Writer(kType, kVersion)
      .i64("enqueued_through", enqueued_through)
      .i64("unix_ms", unix_ms)
      .finish();
}

PlannerProgress PlannerProgress::decode_body(const Reader& r) {
  expect<PlannerProgress>(r);
  PlannerProgress m;
  m.enqueued_through = r.i64("enqueued_through");
  m.unix_ms = r.i64("unix_ms");
  if (m.enqueued_through < -1) {
    r.fail(WireErrorKind::kBadValue, "enqueued_through",
           "must be >= -1, got " + std::to_string(m.enqueued_through));
  }
  return m;
}

PlannerProgress PlannerProgress::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<PlannerProgress>(bytes, options);
}

// --- PlanRecord ----------------------------------------------------------------------------------

std::string PlanRecord::encode() const {
  return Writer(kType, kVersion)
      .i64("iteration", iteration)
      .i64("candidates", candidates)
      .i64("steps", steps)
      .i64("budget_candidates", budget_candidates)
      .str("reason", reason)
      .finish();
}

PlanRecord PlanRecord::decode_body(const Reader& r) {
  expect<PlanRecord>(r);
  PlanRecord m;
  m.iteration = r.i64("iteration");
  m.candidates = r.i64("candidates");
  m.steps = r.i64("steps");
  m.budget_candidates = r.version() >= 2 ? r.i64("budget_candidates") : m.candidates;
  m.reason = r.str("reason");
  non_negative(r, "iteration", m.iteration);
  non_negative(r, "candidates", m.candidates);
  non_negative(r, "steps", m.steps);
  non_negative(r, "budget_candidates", m.budget_candidates);
  return m;
}

PlanRecord PlanRecord::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<PlanRecord>(bytes, options);
}

// --- PromptPosterior ----------------------------------------------------------------------------

std::string PromptPosterior::encode() const {
  return Writer(kType, kVersion)
      .str("prompt_text", prompt_text)
      .f64("a", a)
      .f64("b", b)
      .i64("updated_through", updated_through)
      .i64("uniform_iterations", uniform_iterations)
      .finish();
}

PromptPosterior PromptPosterior::decode_body(const Reader& r) {
  expect<PromptPosterior>(r);
  PromptPosterior m;
  m.prompt_text = r.str("prompt_text");
  m.a = r.f64("a");
  m.b = r.f64("b");
  m.updated_through = r.i64("updated_through");
  m.uniform_iterations = r.i64("uniform_iterations");
  if (!(m.a > 0) || !std::isfinite(m.a))
    r.fail(WireErrorKind::kBadValue, "a", "must be finite and > 0");
  if (!(m.b > 0) || !std::isfinite(m.b))
    r.fail(WireErrorKind::kBadValue, "b", "must be finite and > 0");
  if (m.updated_through < -1) r.fail(WireErrorKind::kBadValue, "updated_through", "must be >= -1");
  non_negative(r, "uniform_iterations", m.uniform_iterations);
  return m;
}

PromptPosterior PromptPosterior::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_as<PromptPosterior>(bytes, options);
}

// --- Dispatcher ----------------------------------------------------------------------------------

MessageHeader Dispatcher::dispatch(std::string_view bytes, const DecodeOptions& options) const {
  Reader reader = read_message(bytes, options);
  auto it = handlers_.find(reader.type());
  if (it == handlers_.end()) {
    if (is_known_type(reader.type())) {
      throw WireError(WireErrorKind::kUnexpectedType,
                      "wire: no handler for message '" + reader.type() + "'", reader.type(),
                      reader.version());
    }
    throw WireError(WireErrorKind::kUnknownType, "wire: unknown type '" + reader.type() + "'",
                    reader.type(), reader.version());
  }
  it->second(reader);
  return reader.header();
}

}  // namespace spotlight::wire
