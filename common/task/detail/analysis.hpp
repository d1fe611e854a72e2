#pragma once
// Internal: the first pass shared by object detection and digit reading.

#include <limits>
#include <vector>

#include "common/task/image.hpp"
#include "common/task/options.hpp"

namespace spotlight::task::detail {

// A 4-connected foreground component.
struct Component {
  int area = 0;
  int x0 = std::numeric_limits<int>::max(), y0 = std::numeric_limits<int>::max();
  int x1 = -1, y1 = -1;
  double sum_rgb[3] = {0.0, 0.0, 0.0};  // of the clamped pixel values
};

// Brightness and foreground components of an image.
struct Analysis {
  int width = 0;
  int height = 0;
  std::vector<float> brightness;  // brightest channel, clamped to [0,1], NaN as 0
  std::vector<int> label;         // index into `components`, or -1 (background or noise)
  std::vector<Component> components;

  bool foreground(int x, int y) const { return label[static_cast<size_t>(y) * width + x] >= 0; }
};

// Thresholds at kForegroundThreshold, labels 4-connected components and drops those below
// noise_area(). Throws TaskError if the image does not match options.image_size.
Analysis analyse(const Image& image, const TaskOptions& options);

// 3x3 box blur with zero padding of a w x h buffer, in place (`scratch` is working memory).
void box_blur(std::vector<double>& buffer, std::vector<double>& scratch, int w, int h);

}  // namespace spotlight::task::detail
