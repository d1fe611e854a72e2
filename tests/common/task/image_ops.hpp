#pragma once
// Test helpers: degrade rendered images the way a model's output is degraded.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/task/image.hpp"

namespace spotlight::task::testing {

// 3x3 box blur with zero padding (like a convolution).
inline Image box_blur(const Image& in) {
  Image out = Image::blank(in.width, in.height);
  for (int y = 0; y < in.height; ++y) {
    for (int x = 0; x < in.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        float sum = 0.0f;
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const int xx = x + dx, yy = y + dy;
            if (xx < 0 || yy < 0 || xx >= in.width || yy >= in.height) continue;
            sum += in.at(xx, yy, c);
          }
        }
        out.at(x, y, c) = sum / 9.0f;
      }
    }
  }
  return out;
}

// Adds approximately Gaussian noise (sum of four uniforms) of standard deviation `sigma`, then
// clamps to [0,1]. Deterministic in `seed`.
inline Image add_noise(const Image& in, float sigma, uint64_t seed) {
  Image out = in;
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
  auto uniform = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<float>(state >> 40) / static_cast<float>(1ULL << 24);
  };
  // Sum of 4 U(0,1) has variance 4/12; scale to unit variance.
  const float scale = sigma / std::sqrt(4.0f / 12.0f);
  for (float& v : out.rgb) {
    const float z = (uniform() + uniform() + uniform() + uniform() - 2.0f) * scale;
    v = std::clamp(v + z, 0.0f, 1.0f);
  }
  return out;
}

// Uniform noise in [0,1] in every channel.
inline Image noise_image(int size, uint64_t seed) {
  Image out = Image::blank(size, size);
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 7;
  for (float& v : out.rgb) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = static_cast<float>(state >> 40) / static_cast<float>(1ULL << 24);
  }
  return out;
}

}  // namespace spotlight::task::testing
