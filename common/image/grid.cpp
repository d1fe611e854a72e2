#include "common/image/grid.hpp"

#include <algorithm>

#include "common/image/errors.hpp"
#include "common/image/text.hpp"

namespace spotlight::image {
namespace {

void check(const std::vector<GridRow>& rows, const GridOptions& o) {
  if (o.scale < 1 || o.text_scale < 1 || o.padding < 0 || o.frame < 0 || o.max_text_width < 0) {
    throw ImageError(
        "grid: scale and text_scale must be >= 1; padding, frame, max_text_width >= 0");
  }
  const bool any =
      std::any_of(rows.begin(), rows.end(), [](const GridRow& r) { return !r.cells.empty(); });
  if (!any) throw ImageError("grid: no cells to draw");
}

}  // namespace

GridLayout layout_grid(const std::vector<GridRow>& rows, const GridOptions& o) {
  check(rows, o);
  int columns = 0, image_w = 0, image_h = 0, caption_lines = 0, text_w = 0;
  for (const auto& row : rows) {
    columns = std::max(columns, static_cast<int>(row.cells.size()));
    text_w = std::max(text_w, text_width(row.label, o.text_scale));
    for (const auto& cell : row.cells) {
      image_w = std::max(image_w, cell.image.width * o.scale);
      image_h = std::max(image_h, cell.image.height * o.scale);
      caption_lines = std::max(caption_lines, static_cast<int>(cell.caption.size()));
    }
  }
  text_w = std::max(text_w, text_width(o.title, o.text_scale));
  const int line = kLineHeight * o.text_scale;
  const int box_w = image_w + 2 * o.frame, box_h = image_h + 2 * o.frame;
  const int cells_w = columns * box_w + (columns - 1) * o.padding;
  const int content_w = std::max(cells_w, std::min(text_w, o.max_text_width));

  GridLayout out;
  out.width = content_w + 2 * o.padding;
  int y = o.padding;
  if (!o.title.empty()) {
    out.title = Rect{o.padding, y, content_w, line};
    y += line + o.padding;
  }
  for (const auto& row : rows) {
    if (row.label.empty()) {
      out.labels.emplace_back();
    } else {
      out.labels.push_back(Rect{o.padding, y, content_w, line});
      y += line;
    }
    std::vector<Rect> images, captions;
    for (std::size_t i = 0; i < row.cells.size(); ++i) {
      const int x = o.padding + static_cast<int>(i) * (box_w + o.padding);
      const auto& image = row.cells[i].image;
      images.push_back(
          Rect{x + o.frame, y + o.frame, image.width * o.scale, image.height * o.scale});
      captions.push_back(Rect{x, y + box_h, box_w, caption_lines * line});
    }
    out.images.push_back(std::move(images));
    out.captions.push_back(std::move(captions));
    y += box_h + caption_lines * line + o.padding;
  }
  out.height = y;
  return out;
}

RgbImage render_grid(const std::vector<GridRow>& rows, const GridOptions& o) {
  const GridLayout layout = layout_grid(rows, o);
  RgbImage canvas = RgbImage::filled(layout.width, layout.height, o.background);
  const int line = kLineHeight * o.text_scale;
  // Text sits one font pixel below the top of its line (the rest of the line is spacing).
  const int inset = o.text_scale;
  if (layout.title) {
    draw_text(canvas, layout.title->x, layout.title->y + inset,
              fit_text(o.title, layout.title->width, o.text_scale), o.text, o.text_scale);
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (const auto& label = layout.labels[r]) {
      draw_text(canvas, label->x, label->y + inset,
                fit_text(rows[r].label, label->width, o.text_scale), o.text, o.text_scale);
    }
    for (std::size_t c = 0; c < rows[r].cells.size(); ++c) {
      const GridCell& cell = rows[r].cells[c];
      const Rect& at = layout.images[r][c];
      if (cell.frame && o.frame > 0) {
        canvas.frame_rect(at.x - o.frame, at.y - o.frame, at.width + 2 * o.frame,
                          at.height + 2 * o.frame, *cell.frame, o.frame);
      }
      canvas.blit(upscale_nearest(cell.image, o.scale), at.x, at.y);
      const Rect& caption = layout.captions[r][c];
      for (std::size_t l = 0; l < cell.caption.size(); ++l) {
        draw_text(canvas, caption.x, caption.y + static_cast<int>(l) * line + inset,
                  fit_text(cell.caption[l], caption.width, o.text_scale), o.text, o.text_scale);
      }
    }
  }
  return canvas;
}

}  // namespace spotlight::image
