#include "common/image/rgb_image.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/image/errors.hpp"

namespace spotlight::image {

RgbImage RgbImage::filled(int width, int height, Rgb colour) {
  if (width < 0 || height < 0) {
    throw ImageError("image: size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is negative");
  }
  RgbImage out{width, height,
               std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  for (std::size_t i = 0; i < out.pixels.size(); i += 3) {
    out.pixels[i] = colour.r;
    out.pixels[i + 1] = colour.g;
    out.pixels[i + 2] = colour.b;
  }
  return out;
}

Rgb RgbImage::at(int x, int y) const {
  const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
  return Rgb{pixels[i], pixels[i + 1], pixels[i + 2]};
}

void RgbImage::set(int x, int y, Rgb colour) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
  pixels[i] = colour.r;
  pixels[i + 1] = colour.g;
  pixels[i + 2] = colour.b;
}

void RgbImage::fill_rect(int x, int y, int w, int h, Rgb colour) {
  const int x0 = std::max(0, x), y0 = std::max(0, y);
  const int x1 = std::min(width, x + w), y1 = std::min(height, y + h);
  for (int yy = y0; yy < y1; ++yy) {
    for (int xx = x0; xx < x1; ++xx) {
      const std::size_t i = (static_cast<std::size_t>(yy) * width + xx) * 3;
      pixels[i] = colour.r;
      pixels[i + 1] = colour.g;
      pixels[i + 2] = colour.b;
    }
  }
}

void RgbImage::frame_rect(int x, int y, int w, int h, Rgb colour, int thickness) {
  const int t = std::max(0, std::min({thickness, w, h}));
  fill_rect(x, y, w, t, colour);
  fill_rect(x, y + h - t, w, t, colour);
  fill_rect(x, y, t, h, colour);
  fill_rect(x + w - t, y, t, h, colour);
}

void RgbImage::blit(const RgbImage& source, int x, int y) {
  const int x0 = std::max(0, x), y0 = std::max(0, y);
  const int x1 = std::min(width, x + source.width), y1 = std::min(height, y + source.height);
  if (x0 >= x1) return;
  for (int yy = y0; yy < y1; ++yy) {
    const std::size_t from = (static_cast<std::size_t>(yy - y) * source.width + (x0 - x)) * 3;
    const std::size_t to = (static_cast<std::size_t>(yy) * width + x0) * 3;
    std::copy_n(source.pixels.begin() + static_cast<std::ptrdiff_t>(from), (x1 - x0) * 3,
                pixels.begin() + static_cast<std::ptrdiff_t>(to));
  }
}

std::uint8_t to_byte(float value) {
  if (std::isnan(value)) return 0;
  const float clamped = std::clamp(value, 0.0f, 1.0f);
  return static_cast<std::uint8_t>(std::lround(clamped * 255.0f));
}

RgbImage from_float_rgb(int width, int height, std::span<const float> values) {
  if (width < 0 || height < 0 ||
      values.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3) {
    throw ImageError("image: " + std::to_string(values.size()) + " float values for a " +
                     std::to_string(width) + "x" + std::to_string(height) + " RGB image");
  }
  RgbImage out{width, height, std::vector<std::uint8_t>(values.size())};
  std::transform(values.begin(), values.end(), out.pixels.begin(), to_byte);
  return out;
}

RgbImage upscale_nearest(const RgbImage& source, int factor) {
  if (factor < 1) throw ImageError("image: upscale factor " + std::to_string(factor) + " < 1");
  RgbImage out{source.width * factor, source.height * factor, {}};
  out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      const std::size_t from =
          (static_cast<std::size_t>(y / factor) * source.width + x / factor) * 3;
      const std::size_t to = (static_cast<std::size_t>(y) * out.width + x) * 3;
      std::copy_n(source.pixels.begin() + static_cast<std::ptrdiff_t>(from), 3,
                  out.pixels.begin() + static_cast<std::ptrdiff_t>(to));
    }
  }
  return out;
}

}  // namespace spotlight::image
