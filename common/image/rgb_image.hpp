#pragma once
// An 8-bit RGB image (what a PNG holds) and the few drawing operations the grids need.
//
//   auto canvas = image::RgbImage::filled(200, 100, image::kWhite);
//   canvas.blit(image::upscale_nearest(cell, 4), 10, 10);
//
// Drawing clips to the canvas: parts outside it are dropped, never an error.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace spotlight::image {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kWhite{255, 255, 255};

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // HWC: pixel (x, y) channel c at [(y * width + x) * 3 + c]

  // Throws ImageError for a negative size.
  static RgbImage filled(int width, int height, Rgb colour);

  Rgb at(int x, int y) const;          // precondition: inside the image
  void set(int x, int y, Rgb colour);  // ignored outside the image
  void fill_rect(int x, int y, int width, int height, Rgb colour);
  // A rectangle's outline `thickness` pixels wide, inside the rectangle.
  void frame_rect(int x, int y, int width, int height, Rgb colour, int thickness = 1);
  // Copies `source` with its top-left corner at (x, y).
  void blit(const RgbImage& source, int x, int y);

  bool operator==(const RgbImage&) const = default;
};

// One float channel value as a byte, the way the scorer reads images: NaN is 0, values are clamped
// to [0, 1], then round(v * 255).
std::uint8_t to_byte(float value);

// Float RGB (HWC, nominally [0, 1], as task::Image and the sampler produce) to 8 bits with
// to_byte(). Throws ImageError unless values.size() == width * height * 3.
RgbImage from_float_rgb(int width, int height, std::span<const float> values);

// Every pixel repeated factor x factor times. Throws ImageError for factor < 1.
RgbImage upscale_nearest(const RgbImage& source, int factor);

}  // namespace spotlight::image
