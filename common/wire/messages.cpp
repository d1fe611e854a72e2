#include "common/wire/messages.hpp"

#include <array>
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

// a * b, or nullopt on overflow; a, b >= 0.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

// The version encode() writes: the message's own, unless an older one expresses it.
template <class M>
std::int64_t encode_version(const M& /*m*/) {
  return M::kVersion;
}

// Images need no `content` field: version 1, which version-1 readers keep reading.
std::int64_t encode_version(const RewardRequest& m) {
  return m.content == RewardRequest::kImages ? 1 : RewardRequest::kVersion;
}

// The checks across fields of a decoded message (each field's own checks ran in decode_fields).
// Throws WireError through r.fail.
template <class M>
void validate(const Reader& /*r*/, M& /*m*/) {}

void validate(const Reader& r, InflightCommit& m) {
  if (m.latent_shape.empty()) {
    if (!m.latent.empty()) {
      r.fail(WireErrorKind::kBadValue, "latent_shape",
             "is empty but 'latent' has " + std::to_string(m.latent.size()) + " values");
    }
    return;
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
}

void validate(const Reader& r, SeedTrajectory& m) {
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
}

void validate(const Reader& r, RewardRequestView& m) {
  if (m.prompts.size() != static_cast<std::uint64_t>(m.count)) {
    r.fail(WireErrorKind::kBadValue, "prompts",
           "has " + std::to_string(m.prompts.size()) + " entries, 'count' is " +
               std::to_string(m.count));
  }
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
}

void validate(const Reader& r, RewardReply& m) {
  if (m.correct.size() != m.rewards.size()) {
    r.fail(WireErrorKind::kBadValue, "correct",
           "has " + std::to_string(m.correct.size()) + " entries, 'rewards' has " +
               std::to_string(m.rewards.size()));
  }
  const auto expected = checked_mul(m.rewards.size(), m.components.size());
  if (!expected || *expected != m.component_rewards.size()) {
    r.fail(WireErrorKind::kBadValue, "component_rewards",
           "has " + std::to_string(m.component_rewards.size()) +
               " values, expected one per reward and component (" +
               std::to_string(m.rewards.size()) + " x " + std::to_string(m.components.size()) +
               ")");
  }
}

void validate(const Reader& r, PlanRecord& m) {
  // A version 1 record has no budget of its own: the whole plan is its budget.
  if (r.version() < 2) m.budget_candidates = m.candidates;
}

template <class M>
M decode_checked(const Reader& r) {
  M m = decode_fields<M>(r);
  validate(r, m);
  return m;
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

std::string_view to_string(IterationKind kind) {
  for (const auto& [value, name] : WireEnum<IterationKind>::kNames) {
    if (value == kind) return name;
  }
  return "unknown";
}

std::optional<IterationKind> parse_iteration_kind(std::string_view text) {
  for (const auto& [value, name] : WireEnum<IterationKind>::kNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

// The public codec of message M: encode(), decode_body() and decode() over M::fields().
#define SPOTLIGHT_WIRE_CODEC(M)                                       \
  std::string M::encode() const {                                     \
    return encode_fields(*this, encode_version(*this));               \
  }                                                                   \
  M M::decode_body(const Reader& r) {                                 \
    return decode_checked<M>(r);                                      \
  }                                                                   \
  M M::decode(std::string_view bytes, const DecodeOptions& options) { \
    return decode_body(read_message(bytes, options));                 \
  }

SPOTLIGHT_WIRE_CODEC(SeedTask)
SPOTLIGHT_WIRE_CODEC(SeedResult)
SPOTLIGHT_WIRE_CODEC(InflightCommit)
SPOTLIGHT_WIRE_CODEC(SeedTrajectory)
SPOTLIGHT_WIRE_CODEC(WeightsNotice)
SPOTLIGHT_WIRE_CODEC(IterationEvent)
SPOTLIGHT_WIRE_CODEC(RewardReply)
SPOTLIGHT_WIRE_CODEC(Heartbeat)
SPOTLIGHT_WIRE_CODEC(TrainerProgress)
SPOTLIGHT_WIRE_CODEC(TrainerTiming)
SPOTLIGHT_WIRE_CODEC(PlanRecord)
SPOTLIGHT_WIRE_CODEC(PromptPosterior)
SPOTLIGHT_WIRE_CODEC(PlannerProgress)

#undef SPOTLIGHT_WIRE_CODEC

// RewardRequest decodes through its view (one set of checks), then copies the images out.
std::string RewardRequest::encode() const {
  return encode_fields(*this, encode_version(*this));
}

RewardRequest RewardRequest::decode_body(const Reader& r) {
  const RewardRequestView view = RewardRequestView::decode_body(r);
  RewardRequest m{.request_id = view.request_id,
                  .prompts = view.prompts,
                  .width = view.width,
                  .height = view.height,
                  .count = view.count,
                  .channels = view.channels,
                  .content = view.content};
  m.images.resize(view.images.size() / sizeof(float));
  copy_f32_le(view.images, 0, m.images.size(), m.images.data());
  return m;
}

RewardRequest RewardRequest::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_body(read_message(bytes, options));
}

RewardRequestView RewardRequestView::decode_body(const Reader& r) {
  return decode_checked<RewardRequestView>(r);
}

RewardRequestView RewardRequestView::decode(std::string_view bytes, const DecodeOptions& options) {
  return decode_body(read_message(bytes, options));
}

std::size_t RewardRequestView::image_values() const {
  return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
         static_cast<std::size_t>(channels);
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
