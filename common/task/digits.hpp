#pragma once
// Reading digit strings (the OCR-like task), robust to blur and noise but not fooled by blobs:
//
//  1. Foreground and noise as in detect.hpp. A column is ink if it holds at least max(2, s)
//     foreground pixels (s = text_scale()); runs of ink columns are glyphs, and a run as wide as
//     k glyphs (3 font pixels plus 1 of spacing each) is split into k.
//  2. Each glyph is tried in font-sized boxes (3s x 5s) around its ink box. Per box, the 3x5 grid
//     of mean brightness is correlated with every digit (crisp and blurred once by a 3x3 box);
//     the two best digits with correlation >= kMinGlyphCorrelation are checked at pixel level:
//     "that digit, drawn with some brightness on black" is fitted over the box plus a 1-pixel
//     margin, and the residual energy (less what the background's noise explains) relative to
//     the fitted glyph's is its residual. The lowest residual wins.
//  3. One blur level is chosen for the whole string (lowest total residual); a glyph whose
//     reading's residual exceeds kMaxGlyphResidual reads as '?'.
// Glyphs blurred twice or more are mostly illegible on purpose: their 2-pixel strokes fit a
// blurred blob as well as a digit, and a reward must not pay for blobs.

#include <string>

#include "common/task/image.hpp"
#include "common/task/options.hpp"

namespace spotlight::task {

inline constexpr double kMinGlyphCorrelation = 0.5;
// Real glyphs (blur <= 1, noise sigma <= 0.15): residual < 0.035; solid blocks of any size,
// sharp or blurred, with noise sigma <= 0.1: > 0.06.
inline constexpr double kMaxGlyphResidual = 0.05;

// The digits written in the image, left to right ('?' for an unreadable glyph; "" if none).
// Throws TaskError if the image is not options.image_size square or its rgb has the wrong length.
std::string read_digits(const Image& image, const TaskOptions& options);

}  // namespace spotlight::task
