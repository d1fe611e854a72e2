#include "common/rollout/trajectory.hpp"

#include <cmath>
#include <cstring>

#include <torch/torch.h>

#include "common/store/checksum.hpp"
#include "common/wire/error.hpp"

namespace spotlight::rollout {
namespace {

std::vector<float> to_floats(const at::Tensor& t) {
  const auto cpu = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const float* data = cpu.data_ptr<float>();
  return std::vector<float>(data, data + cpu.numel());
}

[[noreturn]] void reject(Rejection reason, const std::string& task_id, const std::string& why) {
  throw TrajectoryRejected(reason, "trajectory of task '" + task_id + "' rejected (" +
                                       std::string(to_string(reason)) + "): " + why);
}

}  // namespace

std::string trajectory_checksum(std::span<const float> latents, std::span<const float> log_probs) {
  store::Xxh64 hash;
  // The wire's byte order (little-endian float32), which is the host's on every target we build.
  hash.update(latents.data(), latents.size() * sizeof(float));
  hash.update(log_probs.data(), log_probs.size() * sizeof(float));
  return store::to_hex(hash.digest());
}

wire::SeedTrajectory make_trajectory(const TrajectoryOrigin& origin,
                                     const sampler::SamplerOptions& sampler,
                                     const at::Tensor& latents, const at::Tensor& log_probs,
                                     StepWindow window) {
  if (window.size() < 1 || latents.dim() < 2 || latents.size(0) < window.end + 1 ||
      log_probs.size(0) < window.end) {
    throw std::invalid_argument("rollout: the sample's trajectory does not cover steps [" +
                                std::to_string(window.begin) + ", " + std::to_string(window.end) +
                                ")");
  }
  wire::SeedTrajectory m;
  m.task_id = origin.task_id;
  m.run_id = origin.run_id;
  m.iteration = origin.iteration;
  m.prompt_index = origin.prompt_index;
  m.seed = origin.seed;
  m.weights_version = origin.weights_version;
  m.weights_checksum = origin.weights_checksum;
  m.sampler_steps = sampler.steps;
  m.noise_level = sampler.noise_level;
  m.shift = sampler.shift;
  m.step_begin = window.begin;
  m.step_end = window.end;
  for (int64_t d = 1; d < latents.dim(); ++d)
    m.latent_shape.push_back(latents.size(d));
  m.latents = to_floats(latents.slice(0, window.begin, window.end + 1));
  m.log_probs = to_floats(log_probs.slice(0, window.begin, window.end));
  m.checksum = trajectory_checksum(m.latents, m.log_probs);
  m.explorer_id = origin.explorer_id;
  return m;
}

std::string_view to_string(Rejection reason) {
  switch (reason) {
    case Rejection::kUndecodable:
      return "undecodable";
    case Rejection::kMismatch:
      return "mismatch";
    case Rejection::kWeightsVersion:
      return "weights_version";
    case Rejection::kWeightsChecksum:
      return "weights_checksum";
    case Rejection::kChecksum:
      return "checksum";
  }
  return "unknown";
}

Rollout accept_trajectory(std::string_view bytes, const TrajectoryExpectation& e,
                          const WeightsChecksum& weights_checksum,
                          const at::TensorOptions& options) {
  wire::SeedTrajectory m;
  try {
    m = wire::SeedTrajectory::decode(bytes);
  } catch (const wire::WireError& error) {
    reject(Rejection::kUndecodable, e.task_id, error.what());
  }
  const auto mismatch = [&](const std::string& field, const std::string& got,
                            const std::string& want) {
    reject(Rejection::kMismatch, e.task_id, field + " is " + got + ", expected " + want);
  };
  if (m.task_id != e.task_id) mismatch("task_id", "'" + m.task_id + "'", "'" + e.task_id + "'");
  if (m.run_id != e.run_id) mismatch("run_id", "'" + m.run_id + "'", "'" + e.run_id + "'");
  if (m.iteration != e.iteration || m.prompt_index != e.prompt_index || m.seed != e.seed) {
    mismatch("(iteration, prompt, seed)",
             std::to_string(m.iteration) + "/" + std::to_string(m.prompt_index) + "/" +
                 std::to_string(m.seed),
             std::to_string(e.iteration) + "/" + std::to_string(e.prompt_index) + "/" +
                 std::to_string(e.seed));
  }
  if (m.sampler_steps != e.sampler.steps || m.noise_level != e.sampler.noise_level ||
      m.shift != e.sampler.shift) {
    mismatch("the sampler (steps, noise level, shift)",
             std::to_string(m.sampler_steps) + ", " + std::to_string(m.noise_level) + ", " +
                 std::to_string(m.shift),
             std::to_string(e.sampler.steps) + ", " + std::to_string(e.sampler.noise_level) + ", " +
                 std::to_string(e.sampler.shift));
  }
  if (m.step_begin != e.window.begin || m.step_end != e.window.end) {
    mismatch("the step window",
             "[" + std::to_string(m.step_begin) + ", " + std::to_string(m.step_end) + ")",
             "[" + std::to_string(e.window.begin) + ", " + std::to_string(e.window.end) + ")");
  }
  if (m.latent_shape != e.latent_shape) mismatch("latent_shape", "another shape", "the model's");
  if (m.weights_version != e.weights_version || m.weights_version > e.newest_version ||
      m.weights_version < 0) {
    reject(Rejection::kWeightsVersion, e.task_id,
           "it claims weights version " + std::to_string(m.weights_version) + "; its result says " +
               std::to_string(e.weights_version) + " and the newest version is " +
               std::to_string(e.newest_version));
  }
  const auto published = weights_checksum(m.weights_version);
  if (!published || *published != m.weights_checksum) {
    reject(Rejection::kWeightsChecksum, e.task_id,
           "it claims weights checksum '" + m.weights_checksum + "' for version " +
               std::to_string(m.weights_version) +
               ", published: " + (published ? "'" + *published + "'" : std::string("none")));
  }
  const std::string checksum = trajectory_checksum(m.latents, m.log_probs);
  if (checksum != m.checksum) {
    reject(Rejection::kChecksum, e.task_id,
           "its data hashes to " + checksum + ", it claims " + m.checksum);
  }
  const auto finite = [](const std::vector<float>& v) {
    for (float x : v)
      if (!std::isfinite(x)) return false;
    return true;
  };
  if (!finite(m.latents) || !finite(m.log_probs)) {
    reject(Rejection::kMismatch, e.task_id, "it holds a value that is not finite");
  }
  std::vector<int64_t> shape{m.step_end - m.step_begin + 1};
  shape.insert(shape.end(), m.latent_shape.begin(), m.latent_shape.end());
  Rollout r;
  r.latents = torch::from_blob(m.latents.data(), shape, torch::kFloat).to(options, false, true);
  r.log_probs = torch::from_blob(m.log_probs.data(), {static_cast<int64_t>(m.log_probs.size())},
                                 torch::kFloat)
                    .to(options, false, true);
  r.window = e.window;
  r.weights_version = m.weights_version;
  return r;
}

}  // namespace spotlight::rollout
