// SP output equals the single-rank output: ranks as threads, one Gloo group per SP size over an
// in-process HashStore.
#include "common/parallel/ulysses.hpp"

#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include "common/parallel/communicator.hpp"
#include "common/parallel/rendezvous.hpp"
#include "common/sampler/sampler.hpp"

namespace spotlight::parallel {
namespace {

// A micro-sized MMDiT whose heads divide by 2 and 4 (the micro preset has 2 heads).
model::MMDiTOptions test_options(int64_t heads = 4, int64_t text_len = 12) {
  return model::MMDiTOptions(32, 2, heads).text_depth(1).image_size(32).patch(8).text_len(text_len);
}

model::MMDiT make_model(const model::MMDiTOptions& options) {
  torch::manual_seed(7);
  model::MMDiT m(options);
  // adaLN-zero and the zero final projection make a fresh model's output 0: perturb every weight.
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters())
    p.add_(torch::randn_like(p) * 0.05);
  m->eval();
  return m;
}

// Runs body(rank, comm) on `size` threads, each a rank of one Gloo group.
void run_group(int size, const std::function<void(int, Communicator&)>& body) {
  auto base = c10::make_intrusive<c10d::HashStore>();
  static int group_counter = 0;
  auto store = generation_store(base, "test", group_counter++);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(size);
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        at::set_num_threads(1);
        auto comm = make_communicator(store, rank, size);
        body(rank, *comm);
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

struct Inputs {
  at::Tensor x, t, tokens;
};

Inputs make_inputs(const model::MMDiTOptions& o, int64_t batch) {
  torch::manual_seed(11);
  return {torch::randn({batch, o.channels(), o.image_size(), o.image_size()}), torch::rand({batch}),
          torch::randint(0, o.vocab_size(), {batch, o.text_len()})};
}

void expect_sp_forward_matches(const model::MMDiTOptions& options, int size) {
  auto m = make_model(options);
  auto in = make_inputs(options, 2);
  torch::NoGradGuard no_grad;
  auto [text, pooled] = m->encode_text(in.tokens);
  auto expected = m->forward_encoded(in.x, in.t, text, pooled);
  ASSERT_GT(expected.abs().max().item<double>(), 1e-3);  // not trivially zero
  std::vector<at::Tensor> got(size);
  run_group(size, [&](int rank, Communicator& comm) {
    torch::NoGradGuard guard;
    SequenceParallelModel sp(m, comm);
    got[rank] = sp.forward_encoded(in.x, in.t, text, pooled);
  });
  for (int rank = 0; rank < size; ++rank) {
    ASSERT_TRUE(got[rank].defined()) << rank;
    EXPECT_TRUE(torch::allclose(got[rank], expected, 1e-4, 1e-5))
        << "size " << size << " rank " << rank << " max diff "
        << (got[rank] - expected).abs().max().item<double>();
  }
}

TEST(Ulysses, ForwardEqualsSingleRankForSize2) {
  expect_sp_forward_matches(test_options(), 2);
}

TEST(Ulysses, ForwardEqualsSingleRankForSize4) {
  expect_sp_forward_matches(test_options(), 4);
}

TEST(Ulysses, UnevenShardsArePaddedAndMasked) {
  // 10 text + 16 image tokens over 4 ranks: text blocks of 3 (the last holds 1), no image padding;
  // over 3 ranks (6 heads) both streams are padded.
  expect_sp_forward_matches(test_options(4, 10), 4);
  expect_sp_forward_matches(model::MMDiTOptions(48, 1, 6).image_size(32).patch(8).text_len(12), 3);
}

TEST(Ulysses, HeadsThatDoNotDivideAreRejected) {
  auto m = make_model(test_options(2));
  run_group(4, [&](int, Communicator& comm) {
    EXPECT_THROW(SequenceParallelModel(m, comm), std::invalid_argument);
  });
}

TEST(Ulysses, ASeedGivesTheSameImageAtEverySpSize) {
  const auto options = test_options();
  auto m = make_model(options);
  auto in = make_inputs(options, 2);
  const std::vector<uint64_t> seeds{101, 202};
  sampler::SamplerOptions sampling;
  sampling.steps = 4;
  auto reference = sampler::sample(m, in.tokens, seeds, sampling).final();
  for (int size : {1, 2, 4}) {
    std::vector<at::Tensor> got(size);
    run_group(size, [&](int rank, Communicator& comm) {
      SequenceParallelModel sp(m, comm);
      sampler::VelocityFn velocity = [&sp](const at::Tensor& x, const at::Tensor& t,
                                           const at::Tensor& text, const at::Tensor& pooled) {
        return sp.forward_encoded(x, t, text, pooled);
      };
      got[rank] = sampler::sample(m, velocity, in.tokens, seeds, sampling).final();
    });
    for (int rank = 0; rank < size; ++rank) {
      ASSERT_TRUE(got[rank].defined());
      EXPECT_TRUE(torch::allclose(got[rank], reference, 1e-4, 1e-5))
          << "size " << size << " rank " << rank << " max diff "
          << (got[rank] - reference).abs().max().item<double>();
    }
    // Every rank holds the same image, bit for bit (they integrate the same gathered velocity).
    for (int rank = 1; rank < size; ++rank)
      EXPECT_TRUE(torch::equal(got[rank], got[0]));
  }
}

TEST(Communicator, AllToAllAndGatherMoveBlocksBetweenRanks) {
  run_group(4, [](int rank, Communicator& comm) {
    auto in = torch::arange(8, torch::kFloat) + 100 * rank;  // block i = {2i, 2i+1} + 100 rank
    auto out = comm.all_to_all(in);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(out[2 * j].item<float>(), 100 * j + 2 * rank);
    }
    auto all = comm.all_gather(torch::full({1}, static_cast<float>(rank)));
    EXPECT_EQ(all.sizes(), (std::vector<int64_t>{4, 1}));
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(all[j][0].item<float>(), j);
  });
}

}  // namespace
}  // namespace spotlight::parallel
