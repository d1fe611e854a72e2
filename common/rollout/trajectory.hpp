#pragma once
// Kept trajectories (wire::SeedTrajectory): what an explorer writes for a seed it sampled with
// the rollout's step count, and the checks the trainer makes before training on one. A
// trajectory that fails a check is rejected with its reason (counted by the caller) and never
// trained on; the trainer samples that rollout itself instead.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ATen/core/Tensor.h>

#include "common/rollout/rollout.hpp"
#include "common/sampler/sampler_options.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::rollout {

// XXH64 (lowercase hex) of the latents' float32 bytes followed by the log-probs' float32 bytes.
std::string trajectory_checksum(std::span<const float> latents, std::span<const float> log_probs);

// Who sampled what, for make_trajectory().
struct TrajectoryOrigin {
  std::string task_id;
  std::string run_id;
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::uint64_t seed = 0;
  std::int64_t weights_version = 0;
  std::string weights_checksum;  // the published manifest's checksum of weights_version
  std::string explorer_id;
};

// The message for one sample: `latents` [steps + 1, C, H, W] and `log_probs` [steps] of a
// sampler::Trajectory sample (any device), cut to `window`; the checksum is filled in.
wire::SeedTrajectory make_trajectory(const TrajectoryOrigin& origin,
                                     const sampler::SamplerOptions& sampler,
                                     const at::Tensor& latents, const at::Tensor& log_probs,
                                     StepWindow window);

// Why a trajectory was not trained on (label values of the rejection counters).
enum class Rejection {
  kUndecodable,      // not a SeedTrajectory (wire::WireError)
  kMismatch,         // another task, seed, step count, sampler, step window or latent shape
  kWeightsVersion,   // not the version its result claims, or newer than the trainer's
  kWeightsChecksum,  // not the published checksum of its version (or that version is unknown)
  kChecksum,         // the data does not match its own checksum
};
std::string_view to_string(Rejection reason);

class TrajectoryRejected : public std::runtime_error {
 public:
  TrajectoryRejected(Rejection reason, const std::string& what)
      : std::runtime_error(what), reason_(reason) {}
  Rejection reason() const { return reason_; }

 private:
  Rejection reason_;
};

// What the trainer expects of the trajectory of one selected seed.
struct TrajectoryExpectation {
  std::string task_id;
  std::string run_id;
  std::int64_t iteration = 0;
  std::int64_t prompt_index = 0;
  std::uint64_t seed = 0;
  std::int64_t weights_version = 0;  // what the seed's result says it was sampled with
  std::int64_t newest_version = 0;   // the trainer's weights version (nothing newer exists)
  sampler::SamplerOptions sampler;   // the rollout sampler: steps, noise level, shift
  StepWindow window;                 // the trained steps
  std::vector<std::int64_t> latent_shape;
};

// The published checksum of a weights version; nullopt when it is not published.
using WeightsChecksum = std::function<std::optional<std::string>(std::int64_t version)>;

// Decodes and checks `bytes` against `expected` (every field, the weights checksum, the data
// checksum, finite values) and returns the rollout on `options`' device, reward left at 0.
// Throws TrajectoryRejected naming the first failed check.
Rollout accept_trajectory(std::string_view bytes, const TrajectoryExpectation& expected,
                          const WeightsChecksum& weights_checksum,
                          const at::TensorOptions& options);

}  // namespace spotlight::rollout
