// Stepper: stopping at a step boundary and resuming elsewhere reproduces sample() exactly.

#include "common/sampler/stepper.hpp"

#include <iostream>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/common/sampler/sampler_fixtures.hpp"

namespace spotlight::sampler {
namespace {

using test::perturbed_model;
using test::tokens;

// What a commit stores and a resume reads back: float32 values and a shape, nothing else.
at::Tensor through_float_vector(const at::Tensor& latent) {
  auto cpu = latent.detach().to(torch::kCPU, torch::kFloat).contiguous();
  std::vector<float> values(cpu.data_ptr<float>(), cpu.data_ptr<float>() + cpu.numel());
  return torch::from_blob(values.data(), cpu.sizes(), torch::kFloat).clone();
}

TEST(Stepper, RunToTheEndEqualsSample) {
  auto m = perturbed_model(3);
  SamplerOptions o;
  o.steps = 5;
  const std::vector<uint64_t> seeds{1, 2, 3};
  Stepper s(m, tokens(3), seeds, o);
  std::vector<at::Tensor> log_probs;
  while (!s.done())
    log_probs.push_back(s.advance());
  EXPECT_EQ(s.step(), 5);
  auto whole = sample(m, tokens(3), seeds, o);
  EXPECT_TRUE(torch::equal(s.latent(), whole.final()));
  EXPECT_TRUE(torch::equal(torch::stack(log_probs, 1), whole.log_probs));
  EXPECT_THROW(s.advance(), std::logic_error);
}

TEST(Stepper, StoppedAtEveryStepAndResumedElsewhereIsBitEqual) {
  auto m = perturbed_model(4);
  auto other = perturbed_model(4);  // the resuming process: same weights, its own module
  SamplerOptions o;
  o.steps = 6;
  const std::vector<uint64_t> seeds{31, 32, 33, 34};
  const auto expect = sample(m, tokens(4), seeds, o).final();
  for (int stop = 0; stop <= o.steps; ++stop) {
    SCOPED_TRACE(stop);
    Stepper a(m, tokens(4), seeds, o);
    while (a.step() < stop)
      a.advance();
    Stepper b(other, tokens(4), seeds, o, ResumePoint{through_float_vector(a.latent()), a.step()});
    EXPECT_EQ(b.step(), stop);
    while (!b.done())
      b.advance();
    EXPECT_TRUE(torch::equal(b.latent(), expect));
  }
}

// A resumed sample batched with other samples than before: not guaranteed bit-equal (BLAS may
// block differently per batch size), but within float rounding. Prints what this machine gives.
TEST(Stepper, ResumeInAnotherBatchCompositionIsWithinRounding) {
  auto m = perturbed_model(5);
  SamplerOptions o;
  o.steps = 8;
  const std::vector<uint64_t> seeds{41, 42, 43, 44};
  const auto expect = sample(m, tokens(4), seeds, o).final();
  Stepper a(m, tokens(4), seeds, o);
  while (a.step() < 4)
    a.advance();
  // Sample 1 alone.
  Stepper b(m, tokens(4).narrow(0, 1, 1), {seeds[1]}, o,
            ResumePoint{a.latent().narrow(0, 1, 1).clone(), a.step()});
  while (!b.done())
    b.advance();
  const double diff = (b.latent()[0] - expect[1]).abs().max().item<double>();
  EXPECT_LT(diff, 1e-4);
  std::cout << "[ info     ] resumed alone vs in a batch of 4: max |diff| = " << diff << "\n";
}

TEST(Stepper, RejectsAResumePointThatDoesNotFit) {
  auto m = perturbed_model(6);
  SamplerOptions o;
  o.steps = 4;
  const std::vector<uint64_t> seeds{1, 2};
  Stepper fresh(m, tokens(2), seeds, o);
  const auto good = fresh.latent();
  EXPECT_THROW(Stepper(m, tokens(2), seeds, o, ResumePoint{good, 5}), std::invalid_argument);
  EXPECT_THROW(Stepper(m, tokens(2), seeds, o, ResumePoint{good, -1}), std::invalid_argument);
  EXPECT_THROW(Stepper(m, tokens(2), seeds, o, ResumePoint{good.narrow(0, 0, 1), 1}),
               std::invalid_argument);
  EXPECT_NO_THROW(Stepper(m, tokens(2), seeds, o, ResumePoint{good, 4}));
}

}  // namespace
}  // namespace spotlight::sampler
