#pragma once
// A captioned image grid: what the trainer writes at every validation and for its exploration
// samples. Layout (all in pixels; s = options.scale, t = options.text_scale, p = options.padding,
// f = options.frame, line = kLineHeight * t):
//
//   p
//   title (one line, if any)                         + line + p
//   for each row:  label (one line, if any)          + line
//                  cells left to right, p apart:  frame f | image upscaled x s | frame f
//                                                 caption lines below (line each)
//                  + p
//
// Every cell box has the size of the largest image (upscaled) plus its frame, and every caption
// block the height of the most caption lines, so columns and rows line up. Images keep their
// pixels (nearest-neighbour upscaling), top-left aligned in their box. Text that does not fit the
// grid's width (labels, title) or a cell's width (captions) is shortened (fit_text). The width is
// the cells' width, or wider for text up to options.max_text_width.

#include <optional>
#include <string>
#include <vector>

#include "common/image/rgb_image.hpp"

namespace spotlight::image {

struct GridCell {
  RgbImage image;                    // at its native size
  std::vector<std::string> caption;  // lines below the image
  std::optional<Rgb> frame;          // drawn around the image; nullopt: background
};

struct GridRow {
  std::string label;  // a line above the row; empty: no label line for this row
  std::vector<GridCell> cells;
};

struct GridOptions {
  std::string title;         // empty: no title line
  int scale = 4;             // image upscale factor, >= 1
  int text_scale = 2;        // font scale of title, labels and captions, >= 1
  int padding = 8;           // >= 0
  int frame = 3;             // frame thickness around each image, >= 0
  int max_text_width = 900;  // the grid grows to fit text up to this width
  Rgb background{32, 32, 32};
  Rgb text{235, 235, 235};
};

struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
  bool operator==(const Rect&) const = default;
};

struct GridLayout {
  int width = 0, height = 0;
  std::optional<Rect> title;
  std::vector<std::optional<Rect>> labels;  // per row
  std::vector<std::vector<Rect>> images;    // per row, per cell: where the upscaled image is
  std::vector<std::vector<Rect>> captions;  // per row, per cell: the caption block
};

// Where everything goes (see the top of this file). Throws ImageError for invalid options or a
// grid without any cell.
GridLayout layout_grid(const std::vector<GridRow>& rows, const GridOptions& options = {});

// The grid drawn at layout_grid(rows, options).
RgbImage render_grid(const std::vector<GridRow>& rows, const GridOptions& options = {});

}  // namespace spotlight::image
