#include "common/task/detail/analysis.hpp"

#include <algorithm>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/task/detect.hpp"
#include "common/task/errors.hpp"

namespace spotlight::task::detail {
namespace {

// Clamps to [0,1], NaN to 0. On x86 via maxss/minss, which are exactly `a > b ? a : b` (NaN
// included) but branch-free: the compiler keeps branches for the plain form (signed zeros), and
// those mispredict on noisy model output.
float clamp01(float value) {
#if defined(__SSE2__)
  const __m128 v = _mm_max_ss(_mm_set_ss(value), _mm_setzero_ps());  // NaN -> 0
  return _mm_cvtss_f32(_mm_min_ss(v, _mm_set_ss(1.0f)));
#else
  value = value > 0.0f ? value : 0.0f;
  return value < 1.0f ? value : 1.0f;
#endif
}

// Maximum of three values in [0,1].
float max3(float a, float b, float c) {
#if defined(__SSE2__)
  return _mm_cvtss_f32(_mm_max_ss(_mm_max_ss(_mm_set_ss(a), _mm_set_ss(b)), _mm_set_ss(c)));
#else
  a = a > b ? a : b;
  return a > c ? a : c;
#endif
}

void check_image(const Image& image, const TaskOptions& options) {
  options.validate();
  if (image.width != options.image_size || image.height != options.image_size) {
    throw TaskError("image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                    " but TaskOptions.image_size is " + std::to_string(options.image_size));
  }
  const size_t expected = static_cast<size_t>(image.width) * image.height * 3;
  if (image.rgb.size() != expected) {
    throw TaskError("Image.rgb has " + std::to_string(image.rgb.size()) + " values, expected " +
                    std::to_string(expected));
  }
}

}  // namespace

Analysis analyse(const Image& image, const TaskOptions& options) {
  check_image(image, options);
  Analysis a;
  a.width = image.width;
  a.height = image.height;
  const size_t n = static_cast<size_t>(a.width) * a.height;
  a.brightness.resize(n);
  a.label.resize(n);
  // Brightness = brightest channel; foreground pixels start unvisited.
  constexpr int kUnvisited = -2;
  const float* rgb = image.rgb.data();
  for (size_t i = 0; i < n; ++i) {
    a.brightness[i] = max3(clamp01(rgb[3 * i]), clamp01(rgb[3 * i + 1]), clamp01(rgb[3 * i + 2]));
  }
  for (size_t i = 0; i < n; ++i) {
    a.label[i] = a.brightness[i] > kForegroundThreshold ? kUnvisited : -1;
  }
  // Flood fill in raster order with an explicit stack. A component below noise_area() is erased
  // and its id reused, so ids always index `components`.
  std::vector<int> stack;
  std::vector<int> members;
  const int min_area = noise_area(options.image_size);
  for (size_t start = 0; start < n; ++start) {
    if (a.label[start] != kUnvisited) continue;
    const int id = static_cast<int>(a.components.size());
    Component c;
    members.clear();
    stack.assign(1, static_cast<int>(start));
    a.label[start] = id;
    while (!stack.empty()) {
      const int p = stack.back();
      stack.pop_back();
      members.push_back(p);
      const int x = p % a.width;
      const int y = p / a.width;
      ++c.area;
      c.x0 = std::min(c.x0, x);
      c.x1 = std::max(c.x1, x);
      c.y0 = std::min(c.y0, y);
      c.y1 = std::max(c.y1, y);
      for (int ch = 0; ch < 3; ++ch) {
        c.sum_rgb[ch] += clamp01(image.rgb[3 * p + ch]);
      }
      auto visit = [&](int q) {
        if (a.label[q] == kUnvisited) {
          a.label[q] = id;
          stack.push_back(q);
        }
      };
      if (x > 0) visit(p - 1);
      if (x + 1 < a.width) visit(p + 1);
      if (y > 0) visit(p - a.width);
      if (y + 1 < a.height) visit(p + a.width);
    }
    if (c.area < min_area) {
      for (int p : members) {
        a.label[p] = -1;
      }
    } else {
      a.components.push_back(c);
    }
  }
  return a;
}

// 3x3 box blur with zero padding, in place, of a w x h buffer (separable: rows, then columns).
void box_blur(std::vector<double>& buffer, std::vector<double>& scratch, int w, int h) {
  scratch.assign(buffer.size(), 0.0);
  for (int y = 0; y < h; ++y) {
    const double* in = &buffer[static_cast<size_t>(y) * w];
    double* out = &scratch[static_cast<size_t>(y) * w];
    for (int x = 0; x < w; ++x) {
      out[x] = in[x] + (x > 0 ? in[x - 1] : 0.0) + (x + 1 < w ? in[x + 1] : 0.0);
    }
  }
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const size_t i = static_cast<size_t>(y) * w + x;
      buffer[i] =
          (scratch[i] + (y > 0 ? scratch[i - w] : 0.0) + (y + 1 < h ? scratch[i + w] : 0.0)) / 9.0;
    }
  }
}

}  // namespace spotlight::task::detail
