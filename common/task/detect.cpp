#include "common/task/detect.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "common/task/detail/analysis.hpp"
#include "common/task/render.hpp"

namespace spotlight::task {
namespace {

using detail::Analysis;
using detail::Component;

// Blur levels of the shape templates: crisp, and a 3x3 box blur applied once and twice.
constexpr int kShapeBlurLevels = 3;

std::optional<Colour> classify_colour(const std::array<float, 3>& mean) {
  const float peak = std::max({mean[0], mean[1], mean[2]});
  if (!(peak > 0.0f)) return std::nullopt;
  std::optional<Colour> best;
  double best_distance = kMaxColourDistance;
  for (Colour colour : kColours) {
    const std::array<float, 3> ref = palette_rgb(colour);
    double d2 = 0.0;
    for (int ch = 0; ch < 3; ++ch) {
      const double diff = mean[ch] / peak - ref[ch];
      d2 += diff * diff;
    }
    const double distance = std::sqrt(d2);
    if (distance <= best_distance) {
      best_distance = distance;
      best = colour;
    }
  }
  return best;
}

// Coverage of the pixel [x, x+1) x [y, y+1) by the axis-aligned square of side `side` centred at
// (cx, cy).
double square_coverage(int x, int y, double cx, double cy, double side) {
  auto overlap = [&](double lo, double c) {
    return std::max(0.0, std::min(lo + 1.0, c + side / 2) - std::max(lo, c - side / 2));
  };
  return overlap(x, cx) * overlap(y, cy);
}

// Coverage of the pixel by the disc of radius r centred at (cx, cy), 4x4 supersampled.
double disc_coverage(int x, int y, double cx, double cy, double r) {
  const double dx_near = std::max({0.0, cx - (x + 1.0), x - cx});
  const double dy_near = std::max({0.0, cy - (y + 1.0), y - cy});
  if (dx_near * dx_near + dy_near * dy_near >= r * r) return 0.0;
  const double dx_far = std::max(std::abs(cx - x), std::abs(cx - (x + 1.0)));
  const double dy_far = std::max(std::abs(cy - y), std::abs(cy - (y + 1.0)));
  if (dx_far * dx_far + dy_far * dy_far <= r * r) return 1.0;
  int inside = 0;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const double px = x + (i + 0.5) / 4 - cx;
      const double py = y + (j + 0.5) / 4 - cy;
      inside += px * px + py * py <= r * r;
    }
  }
  return inside / 16.0;
}

// Fits an equal-area square and disc to the component's soft brightness: background-subtracted
// (mean of the window's outer ring), scaled by its level (mean of its brightest quarter), centred
// on its centroid, over its box grown by kShapeMargin pixels. Each template is tried crisp and
// blurred once and twice by a 3x3 box (model output is blurry); the smallest squared mismatch per
// unit area is kept for each shape.
void fit_shapes(const Analysis& a, int id, const Component& c, DetectedObject& object) {
  constexpr int kShapeMargin = 3;
  const int wx0 = std::max(0, c.x0 - kShapeMargin),
            wx1 = std::min(a.width - 1, c.x1 + kShapeMargin);
  const int wy0 = std::max(0, c.y0 - kShapeMargin),
            wy1 = std::min(a.height - 1, c.y1 + kShapeMargin);
  const int w = wx1 - wx0 + 1, h = wy1 - wy0 + 1;
  auto at = [&](int x, int y) { return static_cast<size_t>(y) * a.width + x; };
  double background = 0.0;
  int ring = 0;
  std::vector<float> values;
  for (int y = wy0; y <= wy1; ++y) {
    for (int x = wx0; x <= wx1; ++x) {
      const int l = a.label[at(x, y)];
      if (l == id) values.push_back(a.brightness[at(x, y)]);
      const bool edge = x == wx0 || x == wx1 || y == wy0 || y == wy1;
      if (edge && l < 0) {
        background += a.brightness[at(x, y)];
        ++ring;
      }
    }
  }
  background = ring > 0 ? background / ring : 0.0;
  const size_t top = std::max<size_t>(1, values.size() / 4);
  std::nth_element(values.begin(), values.begin() + (values.size() - top), values.end());
  double level = 0.0;
  for (size_t i = values.size() - top; i < values.size(); ++i) {
    level += values[i];
  }
  level = level / top - background;
  object.square_error = object.disc_error = std::numeric_limits<double>::infinity();
  if (!(level > 0.05)) return;
  // Observed, normalised; pixels of other components are masked out (weight 0).
  std::vector<double> observed(static_cast<size_t>(w) * h, 0.0);
  std::vector<double> weight(observed.size(), 0.0);
  double mass = 0.0, mx = 0.0, my = 0.0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int l = a.label[at(wx0 + x, wy0 + y)];
      if (l >= 0 && l != id) continue;
      const double o = std::max(0.0, a.brightness[at(wx0 + x, wy0 + y)] - background) / level;
      observed[y * w + x] = o;
      weight[y * w + x] = 1.0;
      mass += o;
      mx += o * (x + 0.5);
      my += o * (y + 0.5);
    }
  }
  if (!(mass > 0.0)) return;
  const double cx = mx / mass, cy = my / mass;
  const double side = std::sqrt(mass);
  const double radius = std::sqrt(mass / std::numbers::pi);
  std::vector<double> t(observed.size());
  std::vector<double> scratch;
  for (Shape shape : kShapes) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        t[y * w + x] = shape == Shape::kSquare ? square_coverage(x, y, cx, cy, side)
                                               : disc_coverage(x, y, cx, cy, radius);
      }
    }
    double best = std::numeric_limits<double>::infinity();
    for (int level_index = 0; level_index < kShapeBlurLevels; ++level_index) {
      if (level_index > 0) detail::box_blur(t, scratch, w, h);
      double error = 0.0;
      for (size_t i = 0; i < t.size(); ++i) {
        const double e = observed[i] - t[i];
        error += weight[i] * e * e;
      }
      best = std::min(best, error / mass);
    }
    (shape == Shape::kSquare ? object.square_error : object.disc_error) = best;
  }
}

std::optional<Shape> classify_shape(const DetectedObject& object, int min_area) {
  if (object.area < min_area) return std::nullopt;
  const int w = object.box_width();
  const int h = object.box_height();
  if (std::max(w, h) > kMaxAspect * std::min(w, h)) return std::nullopt;
  if (std::min(object.square_error, object.disc_error) > kMaxShapeError) return std::nullopt;
  return object.square_error <= object.disc_error ? Shape::kSquare : Shape::kDisc;
}

// Shrinks the component's box while an edge row/column holds fewer than max(2, fullest / 4) of
// its pixels; returns the pixels left inside.
int trim_box(const Analysis& a, int id, DetectedObject& box) {
  std::vector<int> cols(box.box_width(), 0);
  std::vector<int> rows(box.box_height(), 0);
  for (int y = box.y0; y <= box.y1; ++y) {
    for (int x = box.x0; x <= box.x1; ++x) {
      if (a.label[static_cast<size_t>(y) * a.width + x] == id) {
        ++cols[x - box.x0];
        ++rows[y - box.y0];
      }
    }
  }
  const int col_min = std::max(2, *std::max_element(cols.begin(), cols.end()) / 4);
  const int row_min = std::max(2, *std::max_element(rows.begin(), rows.end()) / 4);
  int c0 = 0, c1 = static_cast<int>(cols.size()) - 1;
  int r0 = 0, r1 = static_cast<int>(rows.size()) - 1;
  while (c0 < c1 && cols[c0] < col_min) {
    ++c0;
  }
  while (c1 > c0 && cols[c1] < col_min) {
    --c1;
  }
  while (r0 < r1 && rows[r0] < row_min) {
    ++r0;
  }
  while (r1 > r0 && rows[r1] < row_min) {
    --r1;
  }
  const int x0 = box.x0;
  const int y0 = box.y0;
  box.x0 = x0 + c0;
  box.x1 = x0 + c1;
  box.y0 = y0 + r0;
  box.y1 = y0 + r1;
  int inside = 0;
  for (int y = box.y0; y <= box.y1; ++y) {
    for (int x = box.x0; x <= box.x1; ++x) {
      inside += a.label[static_cast<size_t>(y) * a.width + x] == id;
    }
  }
  return inside;
}

}  // namespace

int noise_area(int image_size) {
  return std::max(3, image_size * image_size / 256);
}
int object_min_area(int image_size) {
  return std::max(4, image_size * image_size / 128);
}
int shape_min_area(int image_size) {
  const int side = object_size(image_size);
  return side * side / 2;
}

std::vector<DetectedObject> detect_objects(const Image& image, const TaskOptions& options) {
  const Analysis a = detail::analyse(image, options);
  const int min_area = object_min_area(options.image_size);
  const int shape_min = shape_min_area(options.image_size);
  std::vector<DetectedObject> objects;
  for (size_t id = 0; id < a.components.size(); ++id) {
    const Component& c = a.components[id];
    if (c.area < min_area) continue;
    DetectedObject object;
    object.x0 = c.x0;
    object.y0 = c.y0;
    object.x1 = c.x1;
    object.y1 = c.y1;
    object.area = trim_box(a, static_cast<int>(id), object);
    for (int ch = 0; ch < 3; ++ch) {
      object.mean_rgb[ch] = static_cast<float>(c.sum_rgb[ch] / c.area);
    }
    object.colour = classify_colour(object.mean_rgb);
    fit_shapes(a, static_cast<int>(id), c, object);
    object.shape = classify_shape(object, shape_min);
    objects.push_back(object);
  }
  return objects;
}

bool relation_holds(const DetectedObject& a, const DetectedObject& b, Relation relation,
                    double threshold, double min_component) {
  if (relation == Relation::kNone) return false;
  const double ox = a.centre_x() - b.centre_x();
  const double oy = a.centre_y() - b.centre_y();
  auto revise = [&](double offset, double extent) {
    const double r = std::max(std::abs(offset) - threshold * extent, 0.0);
    return offset < 0 ? -r : r;
  };
  const double rx = revise(ox, a.box_width() + b.box_width());
  const double ry = revise(oy, a.box_height() + b.box_height());
  if (std::abs(rx) < 1e-3 && std::abs(ry) < 1e-3) return false;
  const double norm = std::hypot(ox, oy);
  const double dx = rx / norm;
  const double dy = ry / norm;
  switch (relation) {
    case Relation::kLeftOf:
      return dx < -min_component;
    case Relation::kRightOf:
      return dx > min_component;
    case Relation::kAbove:
      return dy < -min_component;
    case Relation::kBelow:
      return dy > min_component;
    case Relation::kNone:
      break;
  }
  return false;
}

}  // namespace spotlight::task
