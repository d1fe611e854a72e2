#pragma once
// Captions in a 5x7 bitmap font (printable ASCII; any other byte is drawn as '?'). A character
// advances 6 x scale pixels; a line is 7 x scale pixels of ink (descenders included) and
// kLineHeight x scale apart. No wrapping: fit_text() shortens a line to a width.

#include <string>
#include <string_view>

#include "common/image/rgb_image.hpp"

namespace spotlight::image {

inline constexpr int kCharAdvance = 6;  // font pixels per character, one of them spacing
inline constexpr int kGlyphRows = 7;    // font pixels of ink per line
inline constexpr int kLineHeight = 9;   // font pixels from one line to the next

// Width in pixels of `text` drawn at `scale` (without the spacing after the last character).
int text_width(std::string_view text, int scale = 1);

// Draws `text` with its top-left corner at (x, y); clipped to the image.
void draw_text(RgbImage& image, int x, int y, std::string_view text, Rgb colour, int scale = 1);

// `text` if it fits in `max_width` pixels at `scale`, else as many leading characters as fit
// followed by "..".
std::string fit_text(std::string_view text, int max_width, int scale = 1);

}  // namespace spotlight::image
