#pragma once
// An RGB image as the model produces it: floats, HWC, nominally in [0,1] on a black background.
// The scorer clamps values to [0,1] and treats NaN as 0, so raw model output can be scored as is.
// With reward.input latents the same struct carries a sample's raw latents to a reward service:
// `channels` latent channels, HWC, unbounded (then `rgb` holds width x height x channels values
// and at() does not apply).

#include <cstddef>
#include <vector>

namespace spotlight::task {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<float> rgb;  // HWC: pixel (x, y) channel c at rgb[(y * width + x) * 3 + c]
  int channels = 3;        // 3 for images; the latent channels for raw latents

  // A black image of the given size.
  static Image blank(int width, int height) {
    return Image{width, height,
                 std::vector<float>(static_cast<std::size_t>(width) * height * 3, 0.0f)};
  }
  float& at(int x, int y, int c) { return rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c]; }
  float at(int x, int y, int c) const {
    return rgb[(static_cast<std::size_t>(y) * width + x) * 3 + c];
  }
};

}  // namespace spotlight::task
