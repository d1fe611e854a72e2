#include "common/task/score.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/task/detect.hpp"
#include "common/task/digits.hpp"
#include "common/task/errors.hpp"
#include "common/task/generator.hpp"
#include "common/task/render.hpp"
#include "tests/common/task/image_ops.hpp"

namespace spotlight::task {
namespace {

using testing::add_noise;
using testing::box_blur;
using testing::noise_image;

ObjectSpec obj(int count, Colour colour, Shape shape) {
  return ObjectSpec{count, colour, shape};
}

// A training prompt of one category, chosen by seed.
Prompt prompt_of(const PromptGenerator& generator, Category category, uint64_t seed) {
  const std::vector<Prompt>& pool = generator.training_prompts(category);
  return pool[(seed * 2654435761u) % pool.size()];
}

// reward is exactly 1 iff correct, and always in [0,1].
void expect_consistent(const Score& s) {
  EXPECT_GE(s.reward, 0.0);
  EXPECT_LE(s.reward, 1.0);
  EXPECT_EQ(s.correct, s.reward == 1.0) << s.reason;
}

// Every category, many seeds: the image as given, blurred, noisy, or both scores correct.
enum class Degrade { kNone, kBlur, kNoise, kBlurAndNoise };

void expect_renders_correct(const TaskOptions& options, int seeds, Degrade degrade) {
  const PromptGenerator generator(options);
  for (Category category : kCategories) {
    int failures = 0;
    for (uint64_t seed = 0; seed < static_cast<uint64_t>(seeds); ++seed) {
      const Prompt p = prompt_of(generator, category, seed);
      Image image = render(p, seed, options);
      if (degrade == Degrade::kBlur || degrade == Degrade::kBlurAndNoise) image = box_blur(image);
      if (degrade == Degrade::kNoise || degrade == Degrade::kBlurAndNoise) {
        image = add_noise(image, 0.08f, seed);
      }
      const Score s = score(p, image, options);
      expect_consistent(s);
      if (!s.correct && ++failures <= 3) {
        ADD_FAILURE() << name(category) << " seed " << seed << " \"" << p.text()
                      << "\": " << s.reason;
      }
    }
    EXPECT_EQ(failures, 0) << name(category) << " at size " << options.image_size;
  }
}

TEST(RenderScore, CleanRendersAreCorrectForEveryCategory) {
  expect_renders_correct(TaskOptions{}, 500, Degrade::kNone);
}

TEST(RenderScore, BlurredRendersAreCorrect) {
  expect_renders_correct(TaskOptions{}, 500, Degrade::kBlur);
}

TEST(RenderScore, NoisyRendersAreCorrect) {
  expect_renders_correct(TaskOptions{}, 500, Degrade::kNoise);
}

TEST(RenderScore, BlurredNoisyRendersAreCorrect) {
  expect_renders_correct(TaskOptions{}, 200, Degrade::kBlurAndNoise);
}

TEST(RenderScore, OtherImageSizes) {
  for (int size : {40, 48, 64, 96}) {
    TaskOptions options;
    options.image_size = size;
    expect_renders_correct(options, 100, Degrade::kNone);
    expect_renders_correct(options, 100, Degrade::kBlur);
  }
}

TEST(RenderScore, ObjectsSurviveDoubleBlur) {
  // Twice-blurred 7-pixel objects still read (digits blurred twice are illegible by design; see
  // digits.hpp).
  const TaskOptions options;
  const PromptGenerator generator(options);
  for (Category category :
       {Category::kSingleObject, Category::kTwoObject, Category::kCounting, Category::kPosition}) {
    int correct = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const Prompt p = prompt_of(generator, category, seed);
      const Score s = score(p, box_blur(box_blur(render(p, seed, options))), options);
      expect_consistent(s);
      correct += s.correct;
    }
    EXPECT_GE(correct, 198) << name(category);
  }
}

TEST(Score, ConcurrentCallsMatchSequentialOnes) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  std::vector<Prompt> prompts;
  std::vector<Image> images;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    prompts.push_back(generator.sample(seed));
    images.push_back(add_noise(box_blur(render(prompts.back(), seed, options)), 0.1f, seed));
  }
  std::vector<double> expected;
  for (size_t i = 0; i < prompts.size(); ++i) {
    expected.push_back(score(prompts[i], images[i], options).reward);
  }
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < prompts.size(); ++i) {
        got[t].push_back(score(prompts[i], images[i], options).reward);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (const std::vector<double>& rewards : got) {
    EXPECT_EQ(rewards, expected);
  }
}

TEST(Render, IsAPureFunctionOfPromptSeedAndOptions) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  int differs = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Prompt p = generator.sample(seed);
    const Image a = render(p, seed, options);
    const Image b = render(p, seed, options);
    ASSERT_EQ(a.rgb, b.rgb) << p.text();
    ASSERT_EQ(a.width, options.image_size);
    ASSERT_EQ(a.height, options.image_size);
    differs += render(p, seed + 1, options).rgb != a.rgb;
  }
  EXPECT_GT(differs, 190);  // another seed moves the objects
}

TEST(Render, DrawsTheRequestedObjects) {
  const TaskOptions options;
  const Prompt p{Category::kCounting, {obj(4, Colour::kMagenta, Shape::kDisc)}, {}, {}};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const std::vector<DetectedObject> objects = detect_objects(render(p, seed, options), options);
    ASSERT_EQ(objects.size(), 4u);
    for (const DetectedObject& o : objects) {
      EXPECT_EQ(o.colour, Colour::kMagenta);
      EXPECT_EQ(o.shape, Shape::kDisc);
      EXPECT_GE(o.box_width(), object_size(options.image_size));
      EXPECT_LE(o.box_width(), object_size(options.image_size) + 1);
    }
  }
}

TEST(Score, WrongColourFails) {
  const TaskOptions options;
  const Prompt drawn{Category::kSingleObject, {obj(1, Colour::kRed, Shape::kSquare)}, {}, {}};
  const Prompt asked{Category::kSingleObject, {obj(1, Colour::kBlue, Shape::kSquare)}, {}, {}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Score s = score(asked, render(drawn, seed, options), options);
    expect_consistent(s);
    EXPECT_FALSE(s.correct);
    EXPECT_EQ(s.reward, 0.0);
  }
}

TEST(Score, RightColourWrongShapeGetsHalfCredit) {
  const TaskOptions options;
  const Prompt drawn{Category::kSingleObject, {obj(1, Colour::kRed, Shape::kDisc)}, {}, {}};
  const Prompt asked{Category::kSingleObject, {obj(1, Colour::kRed, Shape::kSquare)}, {}, {}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Score s = score(asked, render(drawn, seed, options), options);
    expect_consistent(s);
    EXPECT_FALSE(s.correct);
    EXPECT_DOUBLE_EQ(s.reward, 0.5);
  }
}

TEST(Score, WrongCountFailsWithPartialCredit) {
  const TaskOptions options;
  const Prompt drawn{Category::kCounting, {obj(4, Colour::kGreen, Shape::kSquare)}, {}, {}};
  const Prompt asked{Category::kCounting, {obj(3, Colour::kGreen, Shape::kSquare)}, {}, {}};
  const Prompt fewer{Category::kCounting, {obj(2, Colour::kGreen, Shape::kSquare)}, {}, {}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Image image = render(drawn, seed, options);
    const Score s = score(asked, image, options);
    expect_consistent(s);
    EXPECT_FALSE(s.correct);
    EXPECT_NEAR(s.reward, 2.0 / 3.0, 1e-12);
    EXPECT_NE(s.reason.find("exactly 3"), std::string::npos) << s.reason;
    const Score half = score(fewer, image, options);  // 4 found, 2 asked
    EXPECT_FALSE(half.correct);
    EXPECT_EQ(half.reward, 0.0);
    // A single-object prompt only needs one: extra objects are fine (GenEval).
    const Prompt single{Category::kSingleObject, {obj(1, Colour::kGreen, Shape::kSquare)}, {}, {}};
    EXPECT_TRUE(score(single, image, options).correct);
  }
}

TEST(Score, WrongRelationFails) {
  const TaskOptions options;
  const ObjectSpec a = obj(1, Colour::kYellow, Shape::kSquare);
  const ObjectSpec b = obj(1, Colour::kCyan, Shape::kDisc);
  const std::pair<Relation, Relation> opposite[] = {{Relation::kLeftOf, Relation::kRightOf},
                                                    {Relation::kRightOf, Relation::kLeftOf},
                                                    {Relation::kAbove, Relation::kBelow},
                                                    {Relation::kBelow, Relation::kAbove}};
  for (const auto& [drawn_rel, asked_rel] : opposite) {
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const Image image = render(Prompt{Category::kPosition, {a, b}, drawn_rel, {}}, seed, options);
      const Score s = score(Prompt{Category::kPosition, {a, b}, asked_rel, {}}, image, options);
      expect_consistent(s);
      EXPECT_FALSE(s.correct);
      EXPECT_NEAR(s.reward, 2.0 / 3.0, 1e-12) << s.reason;  // both present, relation wrong
      // The same scene read the other way round is correct.
      EXPECT_TRUE(
          score(Prompt{Category::kPosition, {b, a}, asked_rel, {}}, image, options).correct);
    }
  }
}

TEST(Score, MissingObjectFails) {
  const TaskOptions options;
  const ObjectSpec red = obj(1, Colour::kRed, Shape::kSquare);
  const ObjectSpec blue = obj(1, Colour::kBlue, Shape::kDisc);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Image image = render(Prompt{Category::kSingleObject, {red}, {}, {}}, seed, options);
    const Score two = score(Prompt{Category::kTwoObject, {red, blue}, {}, {}}, image, options);
    expect_consistent(two);
    EXPECT_FALSE(two.correct);
    EXPECT_DOUBLE_EQ(two.reward, 0.5);
    const Score pos =
        score(Prompt{Category::kPosition, {red, blue}, Relation::kAbove, {}}, image, options);
    expect_consistent(pos);
    EXPECT_FALSE(pos.correct);
    EXPECT_NEAR(pos.reward, 1.0 / 3.0, 1e-12);
  }
}

TEST(Score, SwappedDigitsFail) {
  const TaskOptions options;
  const Prompt drawn{Category::kText, {}, {}, "4821"};
  const Prompt asked{Category::kText, {}, {}, "4812"};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Image image = render(drawn, seed, options);
    EXPECT_EQ(read_digits(image, options), "4821");
    const Score s = score(asked, image, options);
    expect_consistent(s);
    EXPECT_FALSE(s.correct);
    EXPECT_DOUBLE_EQ(s.reward, 0.5);  // edit distance 2 of 4
  }
}

TEST(Score, ReadsEveryDigitInEveryPosition) {
  const TaskOptions options;
  for (int d = 0; d < 10; ++d) {
    for (int pos = 0; pos < 4; ++pos) {
      std::string digits = "1234";
      digits[pos] = static_cast<char>('0' + d);
      if (digits[0] == '0') digits[0] = '7';
      const Prompt p{Category::kText, {}, {}, digits};
      for (uint64_t seed = 0; seed < 5; ++seed) {
        const Image image = render(p, seed, options);
        EXPECT_EQ(read_digits(image, options), digits);
        EXPECT_EQ(read_digits(box_blur(image), options), digits);
      }
    }
  }
}

TEST(Score, BlankImageFailsEveryCategory) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  const Image blank = Image::blank(options.image_size, options.image_size);
  EXPECT_TRUE(detect_objects(blank, options).empty());
  EXPECT_EQ(read_digits(blank, options), "");
  for (Category category : kCategories) {
    const Score s = score(prompt_of(generator, category, 3), blank, options);
    expect_consistent(s);
    EXPECT_FALSE(s.correct) << name(category);
    EXPECT_EQ(s.reward, 0.0) << name(category);
  }
}

TEST(Score, PureNoiseFailsEveryCategory) {
  const TaskOptions options;
  const PromptGenerator generator(options);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const Image noise = noise_image(options.image_size, seed);
    for (Category category : kCategories) {
      const Score s = score(prompt_of(generator, category, seed), noise, options);
      expect_consistent(s);
      EXPECT_FALSE(s.correct) << name(category) << " seed " << seed;
      EXPECT_LT(s.reward, 1.0);
    }
  }
}

TEST(Score, NonFiniteAndOutOfRangeValuesAreClamped) {
  const TaskOptions options;
  const Prompt p{Category::kSingleObject, {obj(1, Colour::kBlue, Shape::kDisc)}, {}, {}};
  Image image = render(p, 1, options);
  Image wild = image;
  for (float& v : wild.rgb) {
    v = v > 0.5f ? 7.0f : -3.0f;  // same picture, far out of range
  }
  EXPECT_TRUE(score(p, wild, options).correct);
  for (float& v : image.rgb) {
    v = std::numeric_limits<float>::quiet_NaN();
  }
  const Score s = score(p, image, options);
  EXPECT_FALSE(s.correct);
  EXPECT_EQ(s.reward, 0.0);
}

TEST(Score, GreyAndWhiteObjectsHaveNoColour) {
  const TaskOptions options;
  Image image = Image::blank(options.image_size, options.image_size);
  for (int y = 4; y < 12; ++y) {
    for (int x = 4; x < 12; ++x) {
      for (int c = 0; c < 3; ++c) {
        image.at(x, y, c) = 0.8f;
      }
    }
  }
  const std::vector<DetectedObject> objects = detect_objects(image, options);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_FALSE(objects[0].colour.has_value());
  EXPECT_EQ(objects[0].shape, Shape::kSquare);
}

// Paints the pixels where mask(x, y) holds in `colour`.
template <typename Mask>
Image paint(int size, Colour colour, Mask mask) {
  Image image = Image::blank(size, size);
  const std::array<float, 3> rgb = palette_rgb(colour);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      if (!mask(x, y)) continue;
      for (int c = 0; c < 3; ++c) {
        image.at(x, y, c) = rgb[c];
      }
    }
  }
  return image;
}

TEST(Detect, ScribblesAreNeitherSquaresNorDiscs) {
  const TaskOptions options;
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  const std::vector<std::pair<const char*, Image>> cases = {
      // A 12x12 outline, 2 pixels thick.
      {"ring", paint(32, Colour::kRed,
                     [&](int x, int y) {
                       return in(x, 8, 19) && in(y, 8, 19) && !(in(x, 10, 17) && in(y, 10, 17));
                     })},
      // An L of two 3-pixel-wide strokes in a 12x12 box.
      {"L", paint(32, Colour::kRed,
                  [&](int x, int y) {
                    return (in(x, 8, 10) && in(y, 8, 19)) || (in(x, 8, 19) && in(y, 17, 19));
                  })},
      // A plus of two 3-pixel-wide strokes in a 12x12 box.
      {"plus", paint(32, Colour::kRed,
                     [&](int x, int y) {
                       return (in(x, 13, 15) && in(y, 8, 19)) || (in(x, 8, 19) && in(y, 13, 15));
                     })},
      // A 16x6 bar (two merged squares).
      {"bar", paint(32, Colour::kRed, [&](int x, int y) { return in(x, 8, 23) && in(y, 8, 13); })},
  };
  for (const auto& [what, image] : cases) {
    const std::vector<DetectedObject> objects = detect_objects(image, options);
    ASSERT_EQ(objects.size(), 1u) << what;
    EXPECT_EQ(objects[0].colour, Colour::kRed) << what;
    EXPECT_FALSE(objects[0].shape.has_value())
        << what << ": square_error " << objects[0].square_error << " disc_error "
        << objects[0].disc_error;
  }
}

TEST(Detect, TinySpecksAreNoise) {
  const TaskOptions options;
  // Isolated 1- and 2-pixel specks (below noise_area) are neither objects nor glyphs.
  const Image specks = paint(32, Colour::kGreen, [](int x, int y) {
    return (x % 6 == 0 && y % 6 == 0) || (x % 6 == 3 && y % 6 == 3 && (x + 1) % 6 == 4);
  });
  EXPECT_TRUE(detect_objects(specks, options).empty());
  EXPECT_EQ(read_digits(specks, options), "");
}

TEST(ReadDigits, BlobsNeverReadAsDigits) {
  // A reward must not pay for blobs: solid blocks of any size, sharp or blurred, clean or noisy,
  // read as '?' (or nothing), never as a digit.
  const TaskOptions options;
  int blocks = 0;
  for (int w = 3; w <= 10; ++w) {
    for (int h = 6; h <= 14; ++h) {
      for (int blur = 0; blur <= 2; ++blur) {
        for (float sigma : {0.0f, 0.1f}) {
          Image image = paint(32, Colour::kRed, [&](int x, int y) {
            return x >= 10 && x < 10 + w && y >= 8 && y < 8 + h;
          });
          for (int b = 0; b < blur; ++b) {
            image = box_blur(image);
          }
          if (sigma > 0) image = add_noise(image, sigma, w * 100 + h);
          const std::string read = read_digits(image, options);
          EXPECT_EQ(read.find_first_of("0123456789"), std::string::npos)
              << w << "x" << h << " blur " << blur << " sigma " << sigma << " read \"" << read
              << "\"";
          ++blocks;
        }
      }
    }
  }
  EXPECT_EQ(blocks, 8 * 9 * 3 * 2);
  const Image block =
      paint(32, Colour::kRed, [](int x, int y) { return x >= 10 && x < 16 && y >= 10 && y < 20; });
  const Score s = score(Prompt{Category::kText, {}, {}, "38"}, block, options);
  EXPECT_FALSE(s.correct);
  EXPECT_EQ(s.reward, 0.0);
}

TEST(Score, RejectsImagesOfTheWrongSize) {
  const TaskOptions options;
  const Prompt p{Category::kSingleObject, {obj(1, Colour::kBlue, Shape::kDisc)}, {}, {}};
  EXPECT_THROW(score(p, Image::blank(16, 16), options), TaskError);
  Image short_rgb = Image::blank(options.image_size, options.image_size);
  short_rgb.rgb.pop_back();
  EXPECT_THROW(score(p, short_rgb, options), TaskError);
}

TEST(RelationHolds, FollowsGenEvalMargins) {
  auto box = [](int x, int y, int side) {
    DetectedObject o;
    o.x0 = x;
    o.y0 = y;
    o.x1 = x + side - 1;
    o.y1 = y + side - 1;
    return o;
  };
  const DetectedObject b = box(20, 12, 8);
  EXPECT_TRUE(relation_holds(box(2, 12, 8), b, Relation::kLeftOf));
  EXPECT_FALSE(relation_holds(box(2, 12, 8), b, Relation::kRightOf));
  EXPECT_TRUE(relation_holds(b, box(2, 12, 8), Relation::kRightOf));
  EXPECT_TRUE(relation_holds(box(20, 0, 8), box(20, 20, 8), Relation::kAbove));
  EXPECT_TRUE(relation_holds(box(20, 20, 8), box(20, 0, 8), Relation::kBelow));
  // Offset of 1 pixel is inside the margin (0.1 * (8 + 8) = 1.6 pixels): no relation.
  EXPECT_FALSE(relation_holds(box(19, 12, 8), b, Relation::kLeftOf));
  // Mostly below, slightly left: "below" only.
  EXPECT_FALSE(relation_holds(box(17, 24, 8), b, Relation::kLeftOf));
  EXPECT_TRUE(relation_holds(box(17, 24, 8), b, Relation::kBelow));
  EXPECT_FALSE(relation_holds(box(2, 12, 8), b, Relation::kNone));
}

TEST(EditDistance, KnownPairs) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("abc", ""), 3);
  EXPECT_EQ(edit_distance("", "ab"), 2);
  EXPECT_EQ(edit_distance("4821", "4821"), 0);
  EXPECT_EQ(edit_distance("4821", "4812"), 2);
  EXPECT_EQ(edit_distance("4821", "481"), 1);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2);
  EXPECT_EQ(edit_distance("12", "1?2"), 1);
}

TEST(Evaluate, GenEvalScoreIsTheMeanOfItsCategoriesAndOcrIsScoredApart) {
  const TaskOptions options;
  const std::vector<Prompt> prompts = validation_prompts(options, 50);  // 10 per category
  std::vector<Image> images;
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Correct renders for all counting prompts and the first half of the others.
    const bool good = prompts[i].category == Category::kCounting || i < 25;
    images.push_back(good ? render(prompts[i], i, options)
                          : Image::blank(options.image_size, options.image_size));
  }
  const Evaluation e = evaluate(prompts, images, options);
  ASSERT_EQ(e.per_category.size(), 5u);
  EXPECT_DOUBLE_EQ(e.per_category.at(Category::kCounting), 1.0);
  for (Category c :
       {Category::kSingleObject, Category::kTwoObject, Category::kPosition, Category::kText}) {
    EXPECT_DOUBLE_EQ(e.per_category.at(c), 0.5) << name(c);
    EXPECT_EQ(e.per_category_count.at(c), 10);
  }
  // GenEval-like categories only: counting 1.0, single/two/position 0.5; text on its own.
  EXPECT_DOUBLE_EQ(e.geneval_score, (1.0 + 3 * 0.5) / 4);
  EXPECT_DOUBLE_EQ(e.ocr_score, 0.5);
  // Blank images earn 0, correct ones 1: mean reward = share correct.
  EXPECT_DOUBLE_EQ(e.mean_reward, (10 + 4 * 5) / 50.0);
  // Standard errors: 0/1 rewards with p = 0.6 (sample variance n/(n-1) p(1-p)); GenEval from
  // the three categories at 0.5 over 10 images each (counting at 1.0 adds nothing).
  EXPECT_NEAR(e.mean_reward_std_error, std::sqrt(0.6 * 0.4 / 49.0), 1e-12);
  EXPECT_NEAR(e.geneval_std_error, std::sqrt(3 * 0.25 / 10) / 4, 1e-12);
  EXPECT_THROW(evaluate(prompts, {}, options), TaskError);
  const Evaluation empty = evaluate({}, {}, options);
  EXPECT_EQ(empty.geneval_score, 0.0);
  EXPECT_TRUE(empty.per_category.empty());
}

}  // namespace
}  // namespace spotlight::task
