#pragma once
// The flow-matching steps of docs/algorithm.md. Time runs from t = 1 (noise) to t = 0 (image);
// one step goes from t to t_next (dt = t_next - t < 0) given the predicted velocity v.
//
//   ODE:  x' = x + v*dt
//   SDE:  s  = a*sqrt(t/(1-t))   (t = 1 uses the next grid point in the denominator)
//         mu = x*(1 + s^2*dt/(2t)) + v*(1 + s^2*(1-t)/(2t))*dt
//         x' = mu + s*sqrt(-dt)*eps
//   log p(x'|x) = mean over a sample's elements of
//         -(x'-mu)^2/(2 s^2 (-dt)) - log(s*sqrt(-dt)) - log(sqrt(2 pi))
//
// With a = 0 the SDE step is the ODE step exactly.

#include <vector>

#include <ATen/core/Tensor.h>

namespace spotlight::sampler {

// Grid t_0 = 1 > t_1 > ... > t_steps = 0, optionally shifted toward the noise end
// (t -> shift*t / (1 + (shift-1)*t), as SD3 does).
std::vector<double> time_grid(int steps, double shift = 1.0);

struct SdeCoefficients {
  double std_dev;   // s
  double step_std;  // s*sqrt(-dt), the standard deviation of x' given x
  double x_scale;   // 1 + s^2*dt/(2t)
  double v_scale;   // (1 + s^2*(1-t)/(2t))*dt
};

// `t_after_one` is the grid point used in place of t = 1 in s's denominator (the grid's t_1).
SdeCoefficients sde_coefficients(double t, double t_next, double noise_level, double t_after_one);

at::Tensor ode_step(const at::Tensor& x, const at::Tensor& v, double t, double t_next);
at::Tensor sde_mean(const at::Tensor& x, const at::Tensor& v, const SdeCoefficients& c);
// Per-sample log-density of x_next under N(mean, step_std^2), averaged over elements: shape [B].
at::Tensor sde_log_prob(const at::Tensor& x_next, const at::Tensor& mean, const SdeCoefficients& c);

}  // namespace spotlight::sampler
