// The images people look at: the validation grid is the model's actual output (PNG decoded with
// stb_image, compared with the sampled tensor pixel for pixel), and the exploration sample draws
// what selection kept from the explorers' images.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include "common/image/png.hpp"
#include "common/rl/selection.hpp"
#include "common/run/run_config.hpp"
#include "common/run/run_keys.hpp"
#include "common/store/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/score.hpp"
#include "services/trainer/exploration_samples.hpp"
#include "services/trainer/grpo_trainer.hpp"
#include "services/trainer/validation_grid.hpp"

namespace spotlight::trainer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path fresh_dir(const std::string& name) {
  const auto dir =
      fs::temp_directory_path() / ("validation-images-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Json> read_jsonl(const fs::path& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

// Scores by mean brightness: a reward with spread for any images.
class BrightReward final : public reward::RewardFunction {
 public:
  std::vector<reward::Scored> score(const std::vector<task::Prompt>&,
                                    const std::vector<task::Image>& images) override {
    std::vector<reward::Scored> out;
    for (const auto& image : images) {
      double sum = 0;
      for (float v : image.rgb)
        sum += v;
      out.push_back({sum / static_cast<double>(image.rgb.size()), false});
    }
    return out;
  }
  std::string name() const override { return "bright"; }
};

// The bytes the PNG must hold for a latent tensor [B, C, H, W]: the scorer's view, 8 bits.
torch::Tensor expected_bytes(const torch::Tensor& latents) {
  return ((latents.to(torch::kFloat) + 1.0) * 0.5)
      .clamp(0.0, 1.0)
      .mul(255.0)
      .round()
      .to(torch::kUInt8);
}

void expect_cell_is(const image::RgbImage& png, const image::Rect& at, int scale,
                    const torch::Tensor& chw_bytes, const std::string& what) {
  ASSERT_EQ(at.width, chw_bytes.size(2) * scale) << what;
  ASSERT_EQ(at.height, chw_bytes.size(1) * scale) << what;
  const auto b = chw_bytes.accessor<uint8_t, 3>();
  int mismatches = 0;
  for (int y = 0; y < at.height; ++y) {
    for (int x = 0; x < at.width; ++x) {
      const image::Rgb got = png.at(at.x + x, at.y + y);
      const image::Rgb want{b[0][y / scale][x / scale], b[1][y / scale][x / scale],
                            b[2][y / scale][x / scale]};
      mismatches += got == want ? 0 : 1;
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

TEST(ValidationGrid, PngHoldsTheModelsOutputPixelForPixel) {
  policy::Policy policy(policy::PolicyOptions{"micro", "cpu", "float32", 1});
  {
    torch::manual_seed(3);
    torch::NoGradGuard no_grad;
    for (auto& w : policy.model()->parameters())
      w.add_(torch::randn_like(w) * 0.05);
  }
  GrpoOptions o;
  o.validation_prompts = 5;
  o.validation_steps = 3;
  o.validation_images = 2;
  BrightReward reward;
  GrpoTrainer trainer(o, policy, reward, make_random_seed_source({}));
  const ValidationReport report = trainer.validate();
  ASSERT_EQ(report.images.size(), 2u);

  ValidationGridOptions g;
  g.dir = fresh_dir("grid");
  g.prompts = 2;
  g.seeds = 3;
  g.steps = o.validation_steps;
  g.shift = o.sampler.shift;
  ValidationGridWriter writer(g, policy);
  const ValidationGridRecord record = writer.write(0, report);
  EXPECT_EQ(record.file, g.dir / "iter-000000.png");
  const std::string bytes = read(record.file);
  EXPECT_EQ(bytes.size(), record.bytes);
  EXPECT_EQ(read(g.dir / "latest.png"), bytes);
  const image::RgbImage png = image::decode_png(bytes);  // stb_image
  EXPECT_EQ(png.width, record.layout.width);
  EXPECT_EQ(png.height, record.layout.height);

  // Column 0: the validation's own samples (the same call validate() makes: same batch).
  const auto prompts = task::validation_prompts(policy.task_options(), o.validation_prompts);
  std::vector<uint64_t> seeds;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    seeds.push_back(validation_grid_seed(i, 0));
    if (i < report.images.size()) {
      EXPECT_EQ(report.images[i].seed, seeds.back());
    }
  }
  sampler::SamplerOptions ode;
  ode.sde = false;
  ode.steps = o.validation_steps;
  ode.shift = o.sampler.shift;
  const auto own = policy.sample(prompts, seeds, ode, 32);
  ASSERT_EQ(own.size(), 1u);
  const torch::Tensor own_bytes = expected_bytes(own[0].final());
  // Columns 1..: the extra seeds, sampled the way the writer does.
  std::vector<task::Prompt> extra_prompts;
  std::vector<uint64_t> extra_seeds;
  for (std::size_t i = 0; i < 2; ++i) {
    for (int c = 1; c < g.seeds; ++c) {
      extra_prompts.push_back(prompts[i]);
      extra_seeds.push_back(validation_grid_seed(i, c));
    }
  }
  const auto extra = policy.sample(extra_prompts, extra_seeds, ode, g.chunk);
  const torch::Tensor extra_bytes = expected_bytes(extra[0].final());
  for (int r = 0; r < 2; ++r) {
    expect_cell_is(png, record.layout.images[r][0], g.grid.scale, own_bytes[r],
                   "prompt " + std::to_string(r) + " seed 0");
    for (int c = 1; c < g.seeds; ++c) {
      expect_cell_is(png, record.layout.images[r][c], g.grid.scale,
                     extra_bytes[r * (g.seeds - 1) + (c - 1)],
                     "prompt " + std::to_string(r) + " seed " + std::to_string(c));
    }
  }
  // The images differ between seeds (the comparison above is not vacuous).
  EXPECT_FALSE(torch::equal(extra_bytes[0], extra_bytes[1]));

  // grids.jsonl: one line with every image's seed and score, column 0 the validation's.
  const auto lines = read_jsonl(g.dir / "grids.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0]["prompts"].size(), 2u);
  EXPECT_EQ(lines[0]["prompts"][0]["prompt"], prompts[0].text());
  EXPECT_EQ(lines[0]["prompts"][0]["seeds"][0].get<uint64_t>(), seeds[0]);
  EXPECT_EQ(lines[0]["prompts"][0]["rewards"][0].get<double>(), report.images[0].reward);
  const auto extra_images = policy.final_images(extra);
  EXPECT_EQ(lines[0]["prompts"][1]["rewards"][2].get<double>(),
            task::score(prompts[1], extra_images[3], policy.task_options()).reward);
  EXPECT_EQ(lines[0]["geneval_score"].get<double>(), report.geneval_score);
  EXPECT_GT(lines[0]["sample_seconds"].get<double>(), 0.0);

  // A second validation adds a file and replaces latest.png.
  writer.write(4, report);
  EXPECT_TRUE(fs::exists(g.dir / "iter-000004.png"));
  EXPECT_EQ(read_jsonl(g.dir / "grids.jsonl").size(), 2u);
  fs::remove_all(g.dir.parent_path());
}

// An in-memory store (unit tests of logic only); `unavailable` makes every call throw.
class MemoryKv final : public store::KeyValueStore {
 public:
  std::map<std::string, std::string, std::less<>> values;
  bool unavailable = false;

  void put(std::string_view k, std::string_view v) override {
    check();
    values[std::string(k)] = v;
  }
  bool put_if_absent(std::string_view k, std::string_view v) override {
    check();
    return values.emplace(std::string(k), std::string(v)).second;
  }
  std::optional<std::string> get(std::string_view k) override {
    check();
    const auto it = values.find(k);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  bool erase(std::string_view k) override {
    check();
    return values.erase(std::string(k)) > 0;
  }
  std::int64_t add(std::string_view, std::int64_t) override { return 0; }
  std::int64_t counter(std::string_view) override { return 0; }
  bool wait(std::span<const std::string>, std::chrono::milliseconds) override { return true; }

 private:
  void check() const {
    if (unavailable) throw store::StoreUnavailable("memory store: unavailable (test)", false);
  }
};

// Returns a fixed selection for prompt 0 (and counts its calls).
class FixedSelection final : public SeedSource {
 public:
  SeedSelection selection;
  int calls = 0;
  SeedSelection select(int64_t, const std::vector<task::Prompt>&) override {
    ++calls;
    return selection;
  }
};

constexpr image::Rgb kKeptFrame{240, 160, 40};

struct SampleFixture {
  SampleFixture() {
    auto source = std::make_unique<FixedSelection>();
    fixed = source.get();
    auto& s = fixed->selection;
    s.candidate_seeds = {{11, 12, 13, 14, 15, 16}};
    s.candidate_rewards = {{0.5, 0.1, 0.9, 0.15, 0.6, 1.0}};
    s.seeds = {{}};
    for (std::size_t i : rl::select_max_variance(s.candidate_rewards[0], 4))
      s.seeds[0].push_back(s.candidate_seeds[0][i]);
    // Every candidate's image except seed 16's: solid grey levels, never the kept frame colour.
    for (std::size_t i = 0; i + 1 < s.candidate_seeds[0].size(); ++i) {
      const auto level = static_cast<std::uint8_t>(40 * i);
      kv.values[run::RunKeys("r").explored_image(2, 0, s.candidate_seeds[0][i])] =
          image::encode_png(image::RgbImage::filled(32, 32, {level, level, level}));
    }
    ExplorationSampleOptions o;
    o.dir = fresh_dir("exploration");
    o.run_id = "r";
    o.every = 2;
    o.group_size = 4;
    options = o;
    sampler = std::make_unique<ExplorationSampler>(std::move(source), o, kv);
  }
  MemoryKv kv;
  FixedSelection* fixed = nullptr;
  ExplorationSampleOptions options;
  std::unique_ptr<ExplorationSampler> sampler;
  const std::vector<task::Prompt> prompts = {task::parse_prompt("two blue discs").value()};
};

TEST(ExplorationSamples, DrawEveryCandidateInRewardOrderWithTheKeptOnesFramed) {
  SampleFixture f;
  // Not a sampled iteration: the selection passes through, nothing is written.
  EXPECT_EQ(f.sampler->select(1, f.prompts).seeds, f.fixed->selection.seeds);
  EXPECT_FALSE(fs::exists(f.options.dir));
  const SeedSelection s = f.sampler->select(2, f.prompts);
  EXPECT_EQ(s.seeds, f.fixed->selection.seeds);
  EXPECT_EQ(f.fixed->calls, 2);

  const auto lines = read_jsonl(f.options.dir / "samples.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  const Json& line = lines[0];
  EXPECT_EQ(line["iteration"], 2);
  EXPECT_EQ(line["prompt"], "two blue discs");
  EXPECT_FALSE(line["fallback"].get<bool>());
  const auto& candidates = line["candidates"];
  ASSERT_EQ(candidates.size(), 6u);
  std::vector<double> order;
  int kept = 0;
  for (const auto& c : candidates) {
    order.push_back(c["reward"].get<double>());
    const bool is_kept =
        std::count(s.seeds[0].begin(), s.seeds[0].end(), c["seed"].get<uint64_t>());
    EXPECT_EQ(c["kept"].get<bool>(), is_kept) << c.dump();
    EXPECT_EQ(c["image"].get<bool>(), c["seed"].get<uint64_t>() != 16) << c.dump();
    kept += is_kept ? 1 : 0;
  }
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(kept, 4);
  std::vector<double> kept_rewards;
  for (std::size_t i = 0; i < 6; ++i)
    if (std::count(s.seeds[0].begin(), s.seeds[0].end(), s.candidate_seeds[0][i]))
      kept_rewards.push_back(s.candidate_rewards[0][i]);
  EXPECT_DOUBLE_EQ(line["kept_variance"].get<double>(), rl::variance(kept_rewards));
  EXPECT_DOUBLE_EQ(line["all_variance"].get<double>(), rl::variance(s.candidate_rewards[0]));

  // Exactly four cells carry the kept frame: 3-pixel frames around 128 x 128 images.
  const image::RgbImage png = image::decode_png(read(f.options.dir / "iter-000002.png"));
  int framed = 0;
  for (int y = 0; y < png.height; ++y)
    for (int x = 0; x < png.width; ++x)
      framed += png.at(x, y) == kKeptFrame ? 1 : 0;
  EXPECT_EQ(framed, 4 * (134 * 134 - 128 * 128));
  // The images were consumed; the missing one was counted.
  EXPECT_TRUE(f.kv.values.empty());
  EXPECT_EQ(f.sampler->stats().written, 1);
  EXPECT_EQ(f.sampler->stats().missing_images, 1);
  EXPECT_EQ(f.sampler->stats().errors, 0);
  fs::remove_all(f.options.dir.parent_path());
}

TEST(ExplorationSamples, AStoreOutageOrABadImageCostsTheSampleNeverTheSelection) {
  SampleFixture f;
  f.kv.values.begin()->second = "not a png";
  f.sampler->select(2, f.prompts);
  EXPECT_EQ(f.sampler->stats().written, 1);
  EXPECT_EQ(f.sampler->stats().errors, 1) << "the corrupt image";
  EXPECT_EQ(f.sampler->stats().missing_images, 2);

  SampleFixture down;
  down.kv.unavailable = true;
  SeedSelection s;
  EXPECT_NO_THROW(s = down.sampler->select(4, down.prompts));
  EXPECT_EQ(s.seeds, down.fixed->selection.seeds);
  EXPECT_GT(down.sampler->stats().errors, 0);
  fs::remove_all(f.options.dir.parent_path());
}

TEST(ExplorationSamples, NothingExploredDrawsNothingAndIsNoError) {
  SampleFixture f;
  f.fixed->selection.candidate_seeds = {{}};
  f.fixed->selection.candidate_rewards = {{}};
  f.sampler->select(2, f.prompts);
  EXPECT_FALSE(fs::exists(f.options.dir));
  EXPECT_EQ(f.sampler->stats().written, 0);
  EXPECT_EQ(f.sampler->stats().errors, 0);
}

TEST(ExplorationSamples, AFallbackPromptSaysSoAndMarksNothingKept) {
  SampleFixture f;
  auto& s = f.fixed->selection;
  s.candidate_seeds[0].resize(3);  // fewer than G = 4 explored in time
  s.candidate_rewards[0].resize(3);
  s.seeds = {{11, 12, 13, 14}};  // the random seeds the trainer fell back to
  f.sampler->select(2, f.prompts);
  const auto lines = read_jsonl(f.options.dir / "samples.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0]["fallback"].get<bool>());
  for (const auto& c : lines[0]["candidates"])
    EXPECT_FALSE(c["kept"].get<bool>());
  fs::remove_all(f.options.dir.parent_path());
}

}  // namespace
}  // namespace spotlight::trainer
