#include "common/task/render.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/task/detail/font.hpp"
#include "common/task/detail/random.hpp"
#include "common/task/detect.hpp"
#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

constexpr uint64_t kRenderStream = 0x72656e646572ULL;  // "render"
// A rendered relation holds with GenEval's threshold but a stricter axis component (within ~37
// degrees of the relation's axis instead of ~60), so it survives blur and reads unambiguously.
constexpr double kRenderRelationThreshold = 0.1;
constexpr double kRenderRelationComponent = 0.8;
constexpr int kTriesPerObject = 200;
constexpr int kLayoutRestarts = 100;

struct Placed {
  int x = 0, y = 0, d = 0;  // top-left corner and side
  int role = 0;             // index into Prompt::objects
};

DetectedObject as_box(const Placed& p) {
  DetectedObject box;
  box.x0 = p.x;
  box.y0 = p.y;
  box.x1 = p.x + p.d - 1;
  box.y1 = p.y + p.d - 1;
  return box;
}

bool apart(const Placed& a, const Placed& b, int gap) {
  return a.x + a.d + gap <= b.x || b.x + b.d + gap <= a.x || a.y + a.d + gap <= b.y ||
         b.y + b.d + gap <= a.y;
}

void draw_object(Image& image, const Placed& p, const ObjectSpec& spec) {
  const std::array<float, 3> rgb = palette_rgb(spec.colour);
  // Discs: pixel centres within d/2 - 0.25 of the centre; the 0.25 keeps small discs visibly
  // rounder than a square (fill ~0.7-0.77 of the box) without shrinking the box.
  const double c = (p.d - 1) / 2.0;
  const double r = p.d / 2.0 - 0.25;
  for (int y = 0; y < p.d; ++y) {
    for (int x = 0; x < p.d; ++x) {
      if (spec.shape == Shape::kDisc && (x - c) * (x - c) + (y - c) * (y - c) > r * r) continue;
      for (int ch = 0; ch < 3; ++ch) {
        image.at(p.x + x, p.y + y, ch) = rgb[ch];
      }
    }
  }
}

// Random non-overlapping layout of all objects (objects[1] first for a relation, so each
// objects[0] instance can be placed in relation to it). Empty if no layout was found.
std::vector<Placed> layout(const Prompt& prompt, int size, detail::Rng& rng) {
  const int base = object_size(size);
  const int jitter = std::max(1, base / 4);
  const int gap = object_gap(size);
  std::vector<int> roles;
  const bool relation = prompt.relation != Relation::kNone;
  if (relation) roles.push_back(1);
  for (int k = 0; k < prompt.objects[0].count; ++k) {
    roles.push_back(0);
  }
  if (!relation && prompt.objects.size() > 1) {
    for (int k = 0; k < prompt.objects[1].count; ++k) {
      roles.push_back(1);
    }
  }
  for (int restart = 0; restart < kLayoutRestarts; ++restart) {
    std::vector<Placed> placed;
    for (int role : roles) {
      bool ok = false;
      for (int attempt = 0; attempt < kTriesPerObject && !ok; ++attempt) {
        Placed p;
        p.role = role;
        p.d = base + rng.uniform_range(0, jitter);
        p.x = rng.uniform_range(1, size - 1 - p.d);
        p.y = rng.uniform_range(1, size - 1 - p.d);
        ok = std::all_of(placed.begin(), placed.end(),
                         [&](const Placed& q) { return apart(p, q, gap); });
        if (ok && relation && role == 0) {
          ok = relation_holds(as_box(p), as_box(placed.front()), prompt.relation,
                              kRenderRelationThreshold, kRenderRelationComponent);
        }
        if (ok) placed.push_back(p);
      }
      if (!ok) break;
    }
    if (placed.size() == roles.size()) return placed;
  }
  return {};
}

void draw_digits(Image& image, const std::string& digits, int size, detail::Rng& rng) {
  const int s = text_scale(size);
  const int n = static_cast<int>(digits.size());
  const int width = n * detail::kGlyphWidth * s + (n - 1) * s;
  const int height = detail::kGlyphHeight * s;
  auto origin = [&](int extent) {
    return extent + 2 <= size ? rng.uniform_range(1, size - 1 - extent)
                              : rng.uniform_range(0, size - extent);
  };
  const int x0 = origin(width);
  const int y0 = origin(height);
  for (int i = 0; i < n; ++i) {
    const int digit = digits[i] - '0';
    const int gx = x0 + i * (detail::kGlyphWidth + 1) * s;
    for (int row = 0; row < detail::kGlyphHeight; ++row) {
      for (int col = 0; col < detail::kGlyphWidth; ++col) {
        if (!detail::glyph_ink(digit, col, row)) continue;
        for (int dy = 0; dy < s; ++dy) {
          for (int dx = 0; dx < s; ++dx) {
            for (int ch = 0; ch < 3; ++ch) {
              image.at(gx + col * s + dx, y0 + row * s + dy, ch) = 1.0f;
            }
          }
        }
      }
    }
  }
}

}  // namespace

int object_size(int image_size) {
  return std::max(7, static_cast<int>(std::lround(0.22 * image_size)));
}
int object_gap(int image_size) {
  return std::max(3, image_size / 10);
}
int text_scale(int image_size) {
  return std::max(1, image_size / 15);
}

Image render(const Prompt& prompt, uint64_t seed, const TaskOptions& options) {
  options.validate();
  validate(prompt);
  const int size = options.image_size;
  Image image = Image::blank(size, size);
  detail::Rng rng(seed, kRenderStream);
  if (prompt.category == Category::kText) {
    draw_digits(image, prompt.digits, size, rng);
    return image;
  }
  const std::vector<Placed> placed = layout(prompt, size, rng);
  if (placed.empty()) {
    throw TaskError("render: no layout found for \"" + prompt.text() + "\" at image_size " +
                    std::to_string(size));
  }
  for (const Placed& p : placed) {
    draw_object(image, p, prompt.objects[p.role]);
  }
  return image;
}

}  // namespace spotlight::task
