// The detector against images with known objects: the task renderer's objects (clean, blurred,
// noisy), near-misses (one object too many or too few for a counting prompt) and clutter (a
// scatter of fragments of the prompt's colour, alone or beside real objects). Prints the count
// precision and recall of each scene kind; the strict reward must not pay for clutter.

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/task/detect.hpp"
#include "common/task/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "common/task/score.hpp"
#include "tests/common/task/image_ops.hpp"

namespace spotlight::task {
namespace {

using testing::add_noise;
using testing::box_blur;

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) {}
  int below(int n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<int>((state >> 33) % static_cast<uint64_t>(n));
  }
};

// Objects of `spec` (colour and shape) that the detector reports.
int count_of(const Image& image, const ObjectSpec& spec, const TaskOptions& options) {
  int n = 0;
  for (const DetectedObject& o : detect_objects(image, options)) {
    n += o.colour == spec.colour && o.shape == spec.shape;
  }
  return n;
}

// Whether the w x h rectangle at (x, y), grown by `gap`, is black and inside the image.
bool free_at(const Image& image, int x, int y, int w, int h, int gap) {
  if (x < 1 || y < 1 || x + w + 1 > image.width || y + h + 1 > image.height) return false;
  for (int yy = std::max(0, y - gap); yy < std::min(image.height, y + h + gap); ++yy) {
    for (int xx = std::max(0, x - gap); xx < std::min(image.width, x + w + gap); ++xx) {
      for (int c = 0; c < 3; ++c) {
        if (image.at(xx, yy, c) > 0.02f) return false;
      }
    }
  }
  return true;
}

// Draws a pixel mask (rows of '#') of `colour` at a random free place; false if none was found.
bool place(Image& image, const std::vector<std::string>& mask, Colour colour, int gap, Rng& rng) {
  const int h = static_cast<int>(mask.size());
  const int w = static_cast<int>(mask[0].size());
  const auto rgb = palette_rgb(colour);
  for (int attempt = 0; attempt < 400; ++attempt) {
    const int x = 1 + rng.below(image.width - w - 1);
    const int y = 1 + rng.below(image.height - h - 1);
    if (!free_at(image, x, y, w, h, gap)) continue;
    for (int yy = 0; yy < h; ++yy) {
      for (int xx = 0; xx < w; ++xx) {
        if (mask[yy][xx] != '#') continue;
        for (int c = 0; c < 3; ++c) {
          image.at(x + xx, y + yy, c) = rgb[c];
        }
      }
    }
    return true;
  }
  return false;
}

std::vector<std::string> solid(int w, int h) {
  return std::vector<std::string>(h, std::string(w, '#'));
}

// Fragments as a model's clutter looks: small blocks, bars too short to be rejected by their
// aspect, and ragged pieces, each smaller than an object.
std::vector<std::string> fragment(Rng& rng) {
  switch (rng.below(6)) {
    case 0:
      return solid(3, 3);
    case 1:
      return solid(4, 3);
    case 2:
      return solid(4, 4);
    case 3:
      return {"##.", "###", ".##"};
    case 4:
      return {".##.", "####", "###.", ".#.."};
    default:
      return {"###", "###", "##.", "#.."};
  }
}

enum class Degrade { kNone, kBlur, kNoise, kBlurAndNoise };
constexpr Degrade kDegrades[] = {Degrade::kNone, Degrade::kBlur, Degrade::kNoise,
                                 Degrade::kBlurAndNoise};

Image degrade(Image image, Degrade d, uint64_t seed) {
  if (d == Degrade::kBlur || d == Degrade::kBlurAndNoise) image = box_blur(image);
  if (d == Degrade::kNoise || d == Degrade::kBlurAndNoise) image = add_noise(image, 0.08f, seed);
  return image;
}

// Count precision and recall over scenes: detected = objects of the asked colour and shape the
// detector reports, truth = objects of them drawn; matched = min(detected, truth) per scene.
struct Tally {
  long detected = 0, truth = 0, matched = 0, scenes = 0, exact = 0;
  void add(int d, int t) {
    detected += d;
    truth += t;
    matched += std::min(d, t);
    ++scenes;
    exact += d == t;
  }
  double precision() const { return detected ? static_cast<double>(matched) / detected : 1.0; }
  double recall() const { return truth ? static_cast<double>(matched) / truth : 1.0; }
  double exact_share() const { return scenes ? static_cast<double>(exact) / scenes : 0.0; }
};

void print(const std::string& what, const Tally& t) {
  std::cout << std::fixed << std::setprecision(3) << "detector check: " << what << ": " << t.scenes
            << " scenes, " << t.truth << " objects drawn, " << t.detected
            << " detected, count precision " << t.precision() << ", recall " << t.recall()
            << ", count exact in " << t.exact_share() << " of scenes" << std::endl;
}

Prompt counting(int n, Colour colour, Shape shape) {
  Prompt p;
  p.category = n == 1 ? Category::kSingleObject : Category::kCounting;
  p.objects = {ObjectSpec{n, colour, shape}};
  return p;
}

TaskOptions strict_options() {
  TaskOptions options;
  options.reward_kind = RewardKind::kStrict;
  return options;
}

TEST(DetectorCheck, CountsTheRenderersObjects) {
  const TaskOptions options = strict_options();
  Tally tally;
  for (Degrade d : kDegrades) {
    for (uint64_t seed = 0; seed < 24; ++seed) {
      for (int n = 1; n <= kMaxObjectCount; ++n) {
        const Colour colour = kColours[seed % kColours.size()];
        const Shape shape = kShapes[(seed / kColours.size()) % kShapes.size()];
        const Prompt p = counting(n, colour, shape);
        const Image image = degrade(render(p, seed, options), d, seed);
        tally.add(count_of(image, p.objects[0], options), n);
        EXPECT_EQ(score(p, image, options).reward, 1.0) << p.text() << " seed " << seed;
      }
    }
  }
  print("rendered objects (clean, blurred, noisy, both)", tally);
  EXPECT_EQ(tally.exact_share(), 1.0);
}

TEST(DetectorCheck, NearMissesFailTheStrictReward) {
  // One object too many (five squares for "four") or too few (three for "four").
  const TaskOptions options = strict_options();
  const int side = object_size(options.image_size);
  Tally tally;
  int placed = 0;
  for (Degrade d : kDegrades) {
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const Colour colour = kColours[seed % kColours.size()];
      const Shape shape = kShapes[seed % kShapes.size()];
      const Prompt four = counting(4, colour, shape);
      Rng rng(seed);
      Image five = render(four, seed, options);
      const std::vector<std::string> mask =
          shape == Shape::kSquare
              ? solid(side, side)
              : std::vector<std::string>{"..###..", ".#####.", "#######", "#######",
                                         "#######", ".#####.", "..###.."};
      if (place(five, mask, colour, object_gap(options.image_size), rng)) {
        ++placed;
        const Image image = degrade(five, d, seed);
        tally.add(count_of(image, four.objects[0], options), 5);
        const Score s = score(four, image, options);
        EXPECT_EQ(s.reward, 0.0) << "five for \"" << four.text() << "\" seed " << seed << ": "
                                 << s.reason;
      }
      const Image three = degrade(render(counting(3, colour, shape), seed, options), d, seed);
      tally.add(count_of(three, four.objects[0], options), 3);
      EXPECT_EQ(score(four, three, options).reward, 0.0) << "three for \"" << four.text() << "\"";
    }
  }
  print("near misses (five or three for four)", tally);
  EXPECT_GT(placed, 40);  // most five-object scenes found room
  EXPECT_EQ(tally.exact_share(), 1.0);
}

TEST(DetectorCheck, ClutterDoesNotSatisfyTheStrictReward) {
  // A scatter of fragments of the asked colour, alone: no object of any count may be found, and
  // no counting or single-object prompt of that colour may be paid.
  const TaskOptions options = strict_options();
  Tally tally;
  for (Degrade d : kDegrades) {
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const Colour colour = kColours[seed % kColours.size()];
      Rng rng(seed + 1000);
      Image image = Image::blank(options.image_size, options.image_size);
      const int fragments = 4 + rng.below(6);
      for (int i = 0; i < fragments; ++i) {
        place(image, fragment(rng), colour, 2, rng);
      }
      image = degrade(image, d, seed);
      for (Shape shape : kShapes) {
        tally.add(count_of(image, ObjectSpec{1, colour, shape}, options), 0);
        for (int n = 1; n <= kMaxObjectCount; ++n) {
          const Prompt p = counting(n, colour, shape);
          const Score s = score(p, image, options);
          EXPECT_EQ(s.reward, 0.0) << "\"" << p.text() << "\" paid on " << fragments
                                   << " fragments (seed " << seed << "): " << s.reason;
        }
      }
    }
  }
  print("fragments only", tally);
  EXPECT_EQ(tally.detected, 0);
}

TEST(DetectorCheck, ClutterBesideObjectsDoesNotChangeTheCount) {
  const TaskOptions options = strict_options();
  Tally tally;
  for (Degrade d : kDegrades) {
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const Colour colour = kColours[seed % kColours.size()];
      const Shape shape = kShapes[seed % kShapes.size()];
      const int n = 1 + static_cast<int>(seed % 3);
      const Prompt p = counting(n, colour, shape);
      Rng rng(seed + 2000);
      Image image = render(p, seed, options);
      for (int i = 0; i < 3; ++i) {
        place(image, fragment(rng), colour, 2, rng);
      }
      image = degrade(image, d, seed);
      tally.add(count_of(image, p.objects[0], options), n);
    }
  }
  print("objects with fragments beside them", tally);
  EXPECT_EQ(tally.precision(), 1.0);
  EXPECT_GE(tally.recall(), 0.95);
}

TEST(DetectorCheck, StrictPaysTheVerdictAndPartialTheCredit) {
  const TaskOptions partial;
  const TaskOptions strict = strict_options();
  const Prompt drawn = counting(3, Colour::kCyan, Shape::kSquare);
  const Prompt asked = counting(4, Colour::kCyan, Shape::kSquare);
  const Image image = render(drawn, 7, partial);
  const Score p = score(asked, image, partial);
  const Score s = score(asked, image, strict);
  EXPECT_NEAR(p.reward, 0.75, 1e-12);  // 3 of 4: closeness 1 - 1/4
  EXPECT_EQ(s.reward, 0.0);
  EXPECT_EQ(s.partial, p.reward);
  EXPECT_EQ(s.correct, p.correct);
  EXPECT_EQ(score(drawn, image, strict).reward, 1.0);
  // The evaluation reports both kinds; mean_reward is the one paid.
  const Evaluation e = evaluate({asked, drawn}, {image, image}, strict);
  EXPECT_DOUBLE_EQ(e.mean_strict_reward, 0.5);
  EXPECT_DOUBLE_EQ(e.mean_partial_reward, (0.75 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(e.mean_reward, e.mean_strict_reward);
  EXPECT_DOUBLE_EQ(evaluate({asked, drawn}, {image, image}, partial).mean_reward,
                   e.mean_partial_reward);
  EXPECT_EQ(parse_reward_kind("strict"), RewardKind::kStrict);
  EXPECT_EQ(name(parse_reward_kind("partial")), "partial");
  EXPECT_THROW(parse_reward_kind("binary"), TaskError);
}

}  // namespace
}  // namespace spotlight::task
