#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "common/model/mmdit.hpp"
#include "common/model/safetensors.hpp"

namespace spotlight::model {
namespace {

MMDiT perturbed(const MMDiTOptions& o, uint64_t seed) {
  torch::manual_seed(seed);
  MMDiT m(o);
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters())
    p.normal_(0.0, 0.05);
  return m;
}

std::filesystem::path temp_dir() {
  char tmpl[] = "/tmp/spotlight-model-XXXXXX";
  return mkdtemp(tmpl);
}

TEST(MMDiT, ZeroInitialisedOutputAndShapes) {
  auto o = mmdit_preset("micro").vocab_size(40).text_len(8);
  MMDiT m(o);
  auto x = torch::randn({3, 3, o.image_size(), o.image_size()});
  auto v = m->forward(x, torch::rand({3}), torch::randint(0, 40, {3, 8}));
  EXPECT_EQ(v.sizes(), x.sizes());
  EXPECT_EQ(v.abs().max().item<float>(), 0.0f);  // adaLN-zero + zero final projection
}

TEST(MMDiT, PatchifyInvertsUnpatchify) {
  auto o = mmdit_preset("micro");
  MMDiT m(o);
  auto x = torch::randn({2, 3, o.image_size(), o.image_size()});
  auto p = m->patchify(x);
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{2, o.tokens(), o.patch_dim()}));
  EXPECT_TRUE(torch::equal(m->unpatchify(p), x));
  // a patch holds a spatially contiguous block
  EXPECT_TRUE(torch::equal(p[0][0].view({3, o.patch(), o.patch()}),
                           x[0].narrow(1, 0, o.patch()).narrow(2, 0, o.patch())));
}

TEST(MMDiT, OutputDependsOnPromptTimeAndInput) {
  auto o = mmdit_preset("micro").vocab_size(40).text_len(8);
  auto m = perturbed(o, 1);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({1, 3, o.image_size(), o.image_size()});
  auto tok = torch::randint(2, 40, {1, 8});
  auto base = m->forward(x, torch::full({1}, 0.5), tok);
  EXPECT_FALSE(torch::allclose(base, m->forward(x, torch::full({1}, 0.2), tok)));
  EXPECT_FALSE(torch::allclose(base, m->forward(x, torch::full({1}, 0.5), (tok + 1) % 40)));
  EXPECT_FALSE(torch::allclose(base, m->forward(x * 0.5, torch::full({1}, 0.5), tok)));
}

TEST(MMDiT, ASamplesOutputDoesNotDependOnItsBatch) {
  // Same input => the same output bit for bit, alone or among others, in any position: what makes
  // an explored trajectory exactly the rollout the trainer would sample (issue #14). Presets with
  // other token counts (micro: 16 image + 8 text tokens, mini: 64 + 8) and batch sizes around the
  // ones BLAS switches kernels at.
  for (const char* preset : {"micro", "mini"}) {
    auto o = mmdit_preset(preset).vocab_size(40).text_len(8);
    auto m = perturbed(o, 4);
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    const int64_t n = 17;
    auto x = torch::randn({n, 3, o.image_size(), o.image_size()});
    auto t = torch::rand({n});
    auto tok = torch::randint(2, 40, {n, 8});
    const auto all = m->forward(x, t, tok);
    for (int64_t b : {1, 2, 3, 4, 5, 8, 9, 16}) {
      for (int64_t start : {int64_t{0}, n - b}) {
        const auto part =
            m->forward(x.narrow(0, start, b), t.narrow(0, start, b), tok.narrow(0, start, b));
        EXPECT_TRUE(torch::equal(part, all.narrow(0, start, b)))
            << preset << ": samples " << start << ".." << start + b - 1 << " of " << n;
      }
    }
  }
}

TEST(MMDiT, FlopCountMatchesTheDefinition) {
  const auto o = mmdit_preset("tiny");
  EXPECT_GT(o.macs_per_sample(), 50'000'000);
  EXPECT_LT(o.macs_per_sample(), 100'000'000);
  EXPECT_THROW(mmdit_preset("huge"), std::invalid_argument);
}

TEST(Safetensors, RoundTripReproducesTheModelExactly) {
  auto o = mmdit_preset("micro").vocab_size(40).text_len(8);
  auto a = perturbed(o, 2);
  auto b = perturbed(o, 3);
  const auto path = temp_dir() / "model.safetensors";
  auto state = module_state(*a);
  state.metadata["preset"] = "micro";
  save_safetensors(path, state);
  const auto loaded = load_safetensors(path);
  EXPECT_EQ(loaded.metadata.at("preset"), "micro");
  load_module_state(*b, loaded);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({2, 3, o.image_size(), o.image_size()});
  auto tok = torch::randint(0, 40, {2, 8});
  auto t = torch::rand({2});
  EXPECT_TRUE(torch::equal(a->forward(x, t, tok), b->forward(x, t, tok)));
  std::filesystem::remove_all(path.parent_path());
}

TEST(Safetensors, LayoutIsTheStandardOne) {
  TensorFile f;
  f.tensors["w"] = torch::arange(6, torch::kFloat).view({2, 3});
  f.tensors["i"] = torch::tensor({7, 8}, torch::kLong);
  const std::string bytes = encode_safetensors(f);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian host
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2, 3}));
  const auto offsets = header["w"]["data_offsets"].get<std::vector<size_t>>();
  float third;
  std::memcpy(&third, bytes.data() + 8 + n + offsets[0] + 2 * sizeof(float), sizeof(float));
  EXPECT_EQ(third, 2.0f);
  EXPECT_EQ(header["i"]["dtype"], "I64");
}

TEST(Safetensors, ErrorsNameTheProblem) {
  EXPECT_THROW(decode_safetensors("abc"), CheckpointError);
  std::string bad(8, '\0');
  bad[0] = 100;
  EXPECT_THROW(decode_safetensors(bad + "{}"), CheckpointError);
  auto o = mmdit_preset("micro").vocab_size(40).text_len(8);
  MMDiT m(o);
  auto state = module_state(*m);
  state.tensors.erase("final_proj.weight");
  try {
    load_module_state(*m, decode_safetensors(encode_safetensors(state)));
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("final_proj.weight"), std::string::npos) << e.what();
  }
  auto other = MMDiT(mmdit_preset("micro").vocab_size(41).text_len(8));
  try {
    load_module_state(*other, decode_safetensors(encode_safetensors(module_state(*m))));
    FAIL() << "expected CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("text_encoder.embed.weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace spotlight::model
