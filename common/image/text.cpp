#include "common/image/text.hpp"

#include <algorithm>

#include "common/image/detail/font5x7.hpp"

namespace spotlight::image {
namespace {

const detail::Glyph& glyph(char c) {
  if (c < detail::kFontFirst || c > detail::kFontLast) c = '?';
  return detail::kFont[static_cast<std::size_t>(c - detail::kFontFirst)];
}

}  // namespace

int text_width(std::string_view text, int scale) {
  if (text.empty()) return 0;
  return (static_cast<int>(text.size()) * kCharAdvance - 1) * std::max(1, scale);
}

void draw_text(RgbImage& image, int x, int y, std::string_view text, Rgb colour, int scale) {
  scale = std::max(1, scale);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto& g = glyph(text[i]);
    const int left = x + static_cast<int>(i) * kCharAdvance * scale;
    for (int row = 0; row < detail::kFontHeight; ++row) {
      for (int col = 0; col < detail::kFontWidth; ++col) {
        if (g[row][col] != '#') continue;
        image.fill_rect(left + col * scale, y + row * scale, scale, scale, colour);
      }
    }
  }
}

std::string fit_text(std::string_view text, int max_width, int scale) {
  if (text_width(text, scale) <= max_width) return std::string(text);
  std::string out(text);
  while (!out.empty() && text_width(out + "..", scale) > max_width)
    out.pop_back();
  return out.empty() ? std::string() : out + "..";
}

}  // namespace spotlight::image
