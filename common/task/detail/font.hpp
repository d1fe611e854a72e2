#pragma once
// Internal: the 3x5 digit font shared by the renderer and the digit reader. Every glyph touches all
// four sides of its 3x5 cell, so a glyph's bounding box is its cell and boxes can be resampled
// to the grid without knowing the digit.

#include <array>

namespace spotlight::task::detail {

inline constexpr int kGlyphWidth = 3;
inline constexpr int kGlyphHeight = 5;

// kGlyphs[d][row] is a 3-character string, '#' for ink.
inline constexpr std::array<std::array<const char*, kGlyphHeight>, 10> kGlyphs = {{
    {"###", "#.#", "#.#", "#.#", "###"},  // 0
    {".#.", "##.", ".#.", ".#.", "###"},  // 1
    {"###", "..#", "###", "#..", "###"},  // 2
    {"###", "..#", "###", "..#", "###"},  // 3
    {"#.#", "#.#", "###", "..#", "..#"},  // 4
    {"###", "#..", "###", "..#", "###"},  // 5
    {"###", "#..", "###", "#.#", "###"},  // 6
    {"###", "..#", "..#", "..#", "..#"},  // 7
    {"###", "#.#", "###", "#.#", "###"},  // 8
    {"###", "#.#", "###", "..#", "###"},  // 9
}};

constexpr bool glyph_ink(int digit, int col, int row) {
  return kGlyphs[digit][row][col] == '#';
}

}  // namespace spotlight::task::detail
