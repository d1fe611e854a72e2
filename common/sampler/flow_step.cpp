#include "common/sampler/flow_step.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include <ATen/ATen.h>

namespace spotlight::sampler {

std::vector<double> time_grid(int steps, double shift) {
  if (steps < 1) throw std::invalid_argument("sampler: steps must be >= 1");
  std::vector<double> grid(steps + 1);
  for (int i = 0; i <= steps; ++i) {
    const double t = 1.0 - static_cast<double>(i) / steps;
    grid[i] = shift * t / (1.0 + (shift - 1.0) * t);
  }
  grid[0] = 1.0;
  grid[steps] = 0.0;
  return grid;
}

SdeCoefficients sde_coefficients(double t, double t_next, double noise_level, double t_after_one) {
  const double dt = t_next - t;
  const double denominator = 1.0 - (t >= 1.0 ? t_after_one : t);
  const double s = noise_level * std::sqrt(t / denominator);
  SdeCoefficients c;
  c.std_dev = s;
  c.step_std = s * std::sqrt(-dt);
  c.x_scale = 1.0 + s * s * dt / (2.0 * t);
  c.v_scale = (1.0 + s * s * (1.0 - t) / (2.0 * t)) * dt;
  return c;
}

at::Tensor ode_step(const at::Tensor& x, const at::Tensor& v, double t, double t_next) {
  return x + v * (t_next - t);
}

at::Tensor sde_mean(const at::Tensor& x, const at::Tensor& v, const SdeCoefficients& c) {
  return x * c.x_scale + v * c.v_scale;
}

at::Tensor sde_log_prob(const at::Tensor& x_next, const at::Tensor& mean,
                        const SdeCoefficients& c) {
  const double variance = c.step_std * c.step_std;
  const double constant = -std::log(c.step_std) - 0.5 * std::log(2.0 * std::numbers::pi);
  auto lp = -(x_next - mean).pow(2) / (2.0 * variance) + constant;
  return lp.flatten(1).mean(1);
}

}  // namespace spotlight::sampler
