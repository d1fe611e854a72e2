#pragma once
// Sampler settings as configuration (no LibTorch here).

namespace spotlight::sampler {

struct SamplerOptions {
  int steps = 10;
  double noise_level = 0.7;  // SDE `a`; 0 makes the SDE sampler an ODE sampler
  double shift = 1.0;
  bool sde = true;
  bool keep_trajectory = false;  // keep every latent (rollouts) or only the final one
};

}  // namespace spotlight::sampler
