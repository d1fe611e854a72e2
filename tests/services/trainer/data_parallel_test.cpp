// Data-parallel GRPO (trainer.ranks): ranks as threads, one Gloo group over an in-process c10d
// HashStore (the rank processes of a real run meet through a TCPStore: trainer_ranks_job_test).
//
// Equivalence with one rank on the same global batch. Both runs roll out bitwise the same
// samples (same seeds, same weights, a batch-invariant model, micro-batches of the same size) and
// so compute bitwise the same per-micro-batch gradients; they differ only in the order in which
// those gradients are summed:
//   one rank:  the autograd accumulation ((a_1 + a_2) + ...) + (b_1 + ...) over the W trained
//              steps of micro-batch a, then of b (an update of two micro-batches);
//   two ranks: (a_1 + ... + a_W) on rank 0, (b_1 + ... + b_W) on rank 1, then one all-reduce sum.
// With W = 1 both are fl(a_1 + b_1): the weights must be bitwise equal. With W > 1 they differ by
// float32 rounding of the sum (|error| <= (2W - 1) u sum|parts|, u = 2^-24), which AdamW turns
// into an update difference of at most 2 lr on an element whose gradient cancels to below that
// error (its step may flip sign) and a relative lr * error / |g| elsewhere. The statistics (loss,
// rewards) are double sums of bitwise-equal terms in another order: relative 1e-12.

#include "services/trainer/data_parallel.hpp"

#include <cmath>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/torch.h>

#include "common/parallel/communicator.hpp"
#include "tests/services/trainer/trainer_fixtures.hpp"

namespace spotlight::trainer {
namespace {

using testing::Fixture;

// Runs body(rank, group) on `size` threads, each a rank of one Gloo group.
void run_group(int size, const std::function<void(int, parallel::Communicator&)>& body,
               std::chrono::milliseconds timeout = parallel::kDefaultOpTimeout) {
  static int generation = 0;
  auto store = c10::make_intrusive<c10d::PrefixStore>("dp" + std::to_string(generation++) + "/",
                                                      c10::make_intrusive<c10d::HashStore>());
  std::vector<std::thread> threads;
  std::vector<std::string> errors(size);
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        at::set_num_threads(1);
        parallel::GroupOptions options;
        options.timeout = timeout;
        options.label = "trainer";
        auto group = parallel::make_communicator(store, rank, size, options);
        body(rank, *group);
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (int rank = 0; rank < size; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

std::vector<at::Tensor> weights(policy::Policy& p) {
  std::vector<at::Tensor> out;
  for (const auto& w : p.trainable_parameters())
    out.push_back(w.detach().clone());
  return out;
}

struct Run {
  std::vector<IterationReport> reports;
  std::vector<at::Tensor> before, after;
};

// Two iterations of `o` by one rank alone.
Run alone(const GrpoOptions& o) {
  at::set_num_threads(1);
  Fixture f(o);
  Run run;
  run.before = weights(f.policy);
  for (int k = 0; k < 2; ++k)
    run.reports.push_back(f.trainer->run_iteration(k));
  run.after = weights(f.policy);
  return run;
}

// The same by `ranks` ranks; every rank's run.
std::vector<Run> together(const GrpoOptions& o, int ranks) {
  std::vector<Run> runs(ranks);
  std::mutex seeding;  // Fixture perturbs its weights from LibTorch's one global generator
  run_group(ranks, [&](int rank, parallel::Communicator& group) {
    std::unique_lock lock(seeding);
    Fixture f(o);
    lock.unlock();
    f.trainer->set_group(&group);
    f.trainer->resume();
    runs[rank].before = weights(f.policy);
    for (int k = 0; k < 2; ++k)
      runs[rank].reports.push_back(f.trainer->run_iteration(k));
    runs[rank].after = weights(f.policy);
  });
  return runs;
}

// Four micro-batches of four samples, two per update: two updates per iteration.
GrpoOptions batch_options(const std::string& mode, int trained_steps) {
  auto o = testing::small_options(mode);
  o.prompts_per_iteration = 4;
  o.micro_batch = 4;
  o.micro_batches_per_update = 2;
  o.audit_every = 0;
  o.train_step_begin = 0;
  o.train_step_end = trained_steps;
  return o;
}

double max_abs_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// ||(after_a - before) - (after_b - before)|| / ||after_a - before|| over every weight.
double relative_update_difference(const Run& a, const Run& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.after.size(); ++i) {
    const auto ua = (a.after[i] - a.before[i]).to(torch::kDouble);
    const auto ub = (b.after[i] - b.before[i]).to(torch::kDouble);
    diff += (ua - ub).pow(2).sum().item<double>();
    norm += ua.pow(2).sum().item<double>();
  }
  return std::sqrt(diff / norm);
}

bool bitwise_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// `loss_tolerance`: the largest |difference| of the iteration's mean loss.
void expect_same_statistics(const IterationReport& one, const IterationReport& two,
                            double loss_tolerance) {
  const auto close = [](double a, double b) {
    return std::abs(a - b) <= 1e-12 * (1 + std::abs(a));
  };
  EXPECT_TRUE(close(one.reward_mean, two.reward_mean)) << one.reward_mean << " " << two.reward_mean;
  EXPECT_LE(std::abs(one.loss - two.loss), loss_tolerance) << one.loss << " " << two.loss;
  EXPECT_TRUE(close(one.kl, two.kl));
  EXPECT_EQ(one.optimizer_steps, two.optimizer_steps);
  EXPECT_EQ(one.rollouts_sampled, two.rollouts_sampled);
  EXPECT_EQ(one.group_rewards, two.group_rewards);
}

TEST(DataParallel, OwnersTakeConsecutiveMicroBatchesInTurn) {
  EXPECT_EQ(owner_of(0, 4, 2), 0);
  EXPECT_EQ(owner_of(3, 4, 2), 0);
  EXPECT_EQ(owner_of(4, 4, 2), 1);
  EXPECT_EQ(owner_of(8, 4, 2), 0);
  EXPECT_EQ(owner_of(13, 4, 3), 0);
  EXPECT_EQ(owner_of(9, 4, 3), 2);
  EXPECT_EQ(owner_of(9, 4, 1), 0);
}

// One trained step per sample: both sum fl(a + b), so the weights are bitwise equal.
TEST(DataParallel, TwoRanksEqualOneRankBitwiseWithOneTrainedStep) {
  for (const std::string mode : {"none", "sync"}) {
    const auto o = batch_options(mode, 1);
    const auto one = alone(o);
    const auto two = together(o, 2);
    for (int k = 0; k < 2; ++k) {
      expect_same_statistics(one.reports[k], two[0].reports[k],
                             1e-12 * std::abs(one.reports[k].loss));
      EXPECT_GT(two[0].reports[k].allreduce_bytes, 0);
    }
    EXPECT_TRUE(bitwise_equal(one.after, two[0].after)) << mode;
    EXPECT_TRUE(bitwise_equal(two[0].after, two[1].after)) << mode;
    EXPECT_FALSE(bitwise_equal(one.before, one.after));  // it trained
  }
}

// Several trained steps: equal up to the float32 order of the gradient sum (header).
TEST(DataParallel, TwoRanksMatchOneRankWithinTheSummationOrderTolerance) {
  const auto o = batch_options("none", -1);  // steps 0..2 of 4
  const auto one = alone(o);
  const auto two = together(o, 2);
  // Iteration 0 rolls out identical samples from identical weights. Its second update's loss is
  // computed after the first update, whose weights differ by the rounding above: the ratios
  // exp(logp - logp_old) move by ~1e-7 (measured max |dw| below), the mean loss (advantage x
  // ratio, the advantages summing to 0 in each group) by that times mean|A|; allowed: 1e-6 mean|A|.
  expect_same_statistics(one.reports[0], two[0].reports[0],
                         1e-6 * one.reports[0].mean_abs_advantage);
  std::printf("iteration 0 loss: 1 rank %.10g, 2 ranks %.10g\n", one.reports[0].loss,
              two[0].reports[0].loss);
  EXPECT_TRUE(bitwise_equal(two[0].after, two[1].after));  // the ranks agree exactly
  // Per element: at most 2 lr per update (a cancelling gradient's Adam step may flip sign).
  const double updates = one.reports[0].optimizer_steps + one.reports[1].optimizer_steps;
  EXPECT_LE(max_abs_difference(one.after, two[0].after), 2 * o.lr * updates);
  // In norm: the update is the same to 1e-3 (measured: printed below).
  const double deviation = relative_update_difference(one, two[0]);
  std::printf("relative update difference (2 ranks vs 1): %.3g; max |dw| %.3g (lr %.3g)\n",
              deviation, max_abs_difference(one.after, two[0].after), o.lr);
  EXPECT_LE(deviation, 1e-3);
  // The bound is tight enough to see a different batch: another run seed trains other prompts.
  auto other = o;
  other.seed = o.seed + 1;
  EXPECT_GT(relative_update_difference(one, alone(other)), 1e-1);
}

TEST(DataParallel, DivergedWeightsStopEveryRankWithAClearError) {
  std::vector<std::string> errors(2);
  run_group(2, [&](int rank, parallel::Communicator& group) {
    Fixture f(batch_options("none", 1));
    if (rank == 1) {
      torch::NoGradGuard no_grad;
      f.policy.trainable_parameters()[0].view(-1)[0] += 1e-6;
    }
    try {
      check_weights_agree(group, f.policy.trainable_parameters(), 3);
    } catch (const WeightsDiverged& e) {
      errors[rank] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("diverged after iteration 3"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
  }
}

TEST(DataParallel, ResumeHandsRankZerosWeightsToEveryRank) {
  run_group(2, [&](int rank, parallel::Communicator& group) {
    Fixture f(batch_options("none", 1));
    if (rank == 1) testing::perturb(f.policy, 77);  // other starting weights
    f.trainer->set_group(&group);
    f.trainer->resume();  // throws WeightsDiverged unless rank 1 now holds rank 0's
    const auto mine = weights_checksum(f.policy.trainable_parameters());
    const auto all = group.all_gather(mine);
    EXPECT_TRUE(torch::equal(all[0], all[1]));
  });
}

TEST(DataParallel, GradientsAreSummedInBucketsAndUnusedOnesCountAsZero) {
  run_group(3, [&](int rank, parallel::Communicator& group) {
    auto a = torch::zeros({5}, torch::requires_grad());
    auto b = torch::zeros({2, 3}, torch::requires_grad());
    if (rank != 2) {  // rank 2 computed nothing: no gradients at all
      a.mutable_grad() = torch::full({5}, static_cast<float>(rank + 1));
      b.mutable_grad() = torch::full({2, 3}, static_cast<float>(10 * (rank + 1)));
    }
    const auto reduced = reduce_gradients(group, {a, b}, 5 * sizeof(float));  // two buckets
    EXPECT_EQ(reduced.buckets, 2);
    EXPECT_EQ(reduced.bytes, 11 * static_cast<std::int64_t>(sizeof(float)));
    EXPECT_TRUE(torch::equal(a.grad(), torch::full({5}, 3.0F)));
    EXPECT_TRUE(torch::equal(b.grad(), torch::full({2, 3}, 30.0F)));
  });
}

// A rank that leaves (its process died: its connections close) fails the others' collective
// at once with an error naming it, although the collective timeout is ten minutes.
TEST(DataParallel, APeerThatLeavesFailsTheCollectiveInsteadOfHanging) {
  std::string error;
  run_group(
      2,
      [&](int rank, parallel::Communicator& group) {
        group.barrier();
        if (rank == 1) return;  // leaves: run_group's thread destroys its group
        auto t = torch::ones({1024});
        try {
          for (int i = 0; i < 1000000; ++i)
            group.all_reduce(t, parallel::ReduceOp::kSum);
        } catch (const parallel::CommunicatorError& e) {
          error = e.what();
        }
      },
      std::chrono::minutes(10));
  EXPECT_NE(error.find("trainer: all_reduce failed on rank 0 of 2"), std::string::npos) << error;
}

}  // namespace
}  // namespace spotlight::trainer
