#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/image/detail/font5x7.hpp"
#include "common/image/errors.hpp"
#include "common/image/grid.hpp"
#include "common/image/png.hpp"
#include "common/image/rgb_image.hpp"
#include "common/image/text.hpp"

namespace spotlight::image {
namespace {

RgbImage noise(int width, int height, unsigned seed) {
  std::mt19937 gen(seed);
  RgbImage out = RgbImage::filled(width, height, kBlack);
  for (auto& p : out.pixels)
    p = static_cast<std::uint8_t>(gen() & 0xff);
  return out;
}

// Pixels of `image` inside `r` that differ from `background`.
int ink(const RgbImage& image, const Rect& r, Rgb background) {
  int count = 0;
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x)
      count += image.at(x, y) == background ? 0 : 1;
  return count;
}

TEST(Png, RoundTripIsLossless) {
  for (const auto& [w, h] : {std::pair{1, 1}, {32, 32}, {37, 5}, {300, 200}}) {
    const RgbImage image = noise(w, h, static_cast<unsigned>(w * 1000 + h));
    const std::string png = encode_png(image);
    ASSERT_EQ(png.compare(0, 8, "\x89PNG\r\n\x1a\n", 8), 0);
    EXPECT_EQ(decode_png(png), image) << w << "x" << h;
  }
}

TEST(Png, RejectsWhatItCannotEncodeOrDecode) {
  EXPECT_THROW(encode_png(RgbImage{}), ImageError);
  RgbImage short_pixels{2, 2, std::vector<std::uint8_t>(5)};
  EXPECT_THROW(encode_png(short_pixels), ImageError);
  try {
    decode_png("not a png at all");
    FAIL() << "garbage decoded";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("png:"), std::string::npos) << e.what();
  }
  std::string truncated = encode_png(noise(16, 16, 1));
  truncated.resize(truncated.size() / 2);
  EXPECT_THROW(decode_png(truncated), ImageError);
  EXPECT_THROW(decode_png(encode_png(noise(64, 64, 2)), 100), ImageError) << "above max_pixels";
}

TEST(Png, WritesFilesAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("image-test-" + std::to_string(::getpid()));
  const RgbImage image = noise(20, 10, 3);
  const auto bytes = write_png(dir / "sub" / "a.png", image);
  std::ifstream in(dir / "sub" / "a.png", std::ios::binary);
  const std::string read((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(read.size(), bytes);
  EXPECT_EQ(decode_png(read), image);
  for (const auto& entry : std::filesystem::directory_iterator(dir / "sub"))
    EXPECT_EQ(entry.path().filename(), "a.png") << "a temporary file was left behind";
  std::filesystem::remove_all(dir);
}

TEST(FloatImages, ConvertTheWayTheScorerReadsThem) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {0.0f, 1.0f, 0.5f, -3.0f, 7.0f, nan};
  const RgbImage image = from_float_rgb(2, 1, values);
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{0, 255, 128, 0, 255, 0}));
  EXPECT_THROW(from_float_rgb(2, 2, values), ImageError);
}

TEST(Upscale, RepeatsEveryPixel) {
  const RgbImage source = noise(3, 2, 4);
  const RgbImage big = upscale_nearest(source, 4);
  ASSERT_EQ(big.width, 12);
  ASSERT_EQ(big.height, 8);
  for (int y = 0; y < big.height; ++y)
    for (int x = 0; x < big.width; ++x)
      ASSERT_EQ(big.at(x, y), source.at(x / 4, y / 4));
  EXPECT_THROW(upscale_nearest(source, 0), ImageError);
}

TEST(Font, EveryPrintableCharacterHasItsOwnGlyphInsideItsCell) {
  std::set<std::string> shapes;
  for (char c = detail::kFontFirst; c <= detail::kFontLast; ++c) {
    RgbImage canvas = RgbImage::filled(10, 10, kBlack);
    draw_text(canvas, 1, 1, std::string(1, c), kWhite);
    std::string shape;
    for (int y = 0; y < 10; ++y) {
      for (int x = 0; x < 10; ++x) {
        const bool on = canvas.at(x, y) == kWhite;
        if (on) {
          EXPECT_TRUE(x >= 1 && x < 1 + detail::kFontWidth && y >= 1 && y < 1 + detail::kFontHeight)
              << "'" << c << "' inks outside its cell at " << x << "," << y;
        }
        shape += on ? '#' : '.';
      }
    }
    if (c != ' ') {
      EXPECT_NE(shape.find('#'), std::string::npos) << "'" << c << "' has no ink";
    }
    EXPECT_TRUE(shapes.insert(shape).second) << "'" << c << "' looks like another character";
  }
}

TEST(Text, WidthScaleAndFitting) {
  EXPECT_EQ(text_width(""), 0);
  EXPECT_EQ(text_width("a"), 5);
  EXPECT_EQ(text_width("ab", 3), (2 * kCharAdvance - 1) * 3);
  EXPECT_EQ(fit_text("short", 1000), "short");
  const std::string fitted = fit_text("two red squares left of a blue disc", 100, 2);
  EXPECT_LE(text_width(fitted, 2), 100);
  EXPECT_TRUE(fitted.ends_with("..")) << fitted;
  // Bytes outside printable ASCII draw as '?'.
  RgbImage a = RgbImage::filled(8, 9, kBlack), b = a;
  draw_text(a, 1, 1, "\xc3", kWhite);
  draw_text(b, 1, 1, "?", kWhite);
  EXPECT_EQ(a, b);
}

std::vector<GridRow> sample_rows() {
  std::vector<GridRow> rows(2);
  rows[0].label = "three cyan discs";
  rows[1].label = "";
  for (int i = 0; i < 3; ++i) {
    GridCell c;
    c.image = noise(8, 8, 10 + i);
    c.caption = {"0." + std::to_string(i), "ok"};
    if (i == 1) c.frame = Rgb{70, 200, 90};
    rows[0].cells.push_back(c);
  }
  GridCell small;
  small.image = noise(5, 6, 20);
  small.caption = {"x"};
  rows[1].cells.push_back(small);
  return rows;
}

TEST(Grid, LayoutLinesUpCellsInsideTheCanvasWithoutOverlap) {
  GridOptions o;
  o.title = "after iteration 4";
  o.scale = 3;
  o.text_scale = 1;
  o.padding = 5;
  o.frame = 2;
  auto rows = sample_rows();
  const GridLayout layout = layout_grid(rows, o);
  ASSERT_TRUE(layout.title.has_value());
  ASSERT_EQ(layout.images.size(), 2u);
  ASSERT_TRUE(layout.labels[0].has_value());
  EXPECT_FALSE(layout.labels[1].has_value());
  std::vector<Rect> all;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].cells.size(); ++c) {
      const Rect& img = layout.images[r][c];
      EXPECT_EQ(img.width, rows[r].cells[c].image.width * o.scale);
      EXPECT_EQ(img.height, rows[r].cells[c].image.height * o.scale);
      all.push_back(img);
      all.push_back(layout.captions[r][c]);
      // Columns line up: the same x in every row.
      EXPECT_EQ(img.x, layout.images[0][c].x);
      // Captions hold every line of the tallest caption block.
      EXPECT_EQ(layout.captions[r][c].height, 2 * kLineHeight * o.text_scale);
    }
  }
  all.push_back(*layout.title);
  all.push_back(*layout.labels[0]);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Rect& a = all[i];
    EXPECT_TRUE(a.x >= 0 && a.y >= 0 && a.x + a.width <= layout.width &&
                a.y + a.height <= layout.height)
        << "rect " << i << " outside the canvas";
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const Rect& b = all[j];
      const bool overlap = a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height &&
                           b.y < a.y + a.height;
      EXPECT_FALSE(overlap) << "rects " << i << " and " << j << " overlap";
    }
  }
  // Width: the wider of three 8x8 images at x3 with 2-pixel frames 5 pixels apart, and the
  // longest text; 5 pixels of margin each side.
  const int cells = 3 * (24 + 4) + 2 * 5;
  EXPECT_EQ(layout.width, 2 * 5 + std::max(cells, text_width("after iteration 4", 1)));
  o.title = "t";
  rows[0].label = "a";
  EXPECT_EQ(layout_grid(rows, o).width, 2 * 5 + cells);
}

TEST(Grid, RenderedCellsHoldTheUpscaledImagesFramesAndCaptions) {
  GridOptions o;
  o.title = "title";
  o.scale = 4;
  const auto rows = sample_rows();
  const GridLayout layout = layout_grid(rows, o);
  const RgbImage grid = render_grid(rows, o);
  ASSERT_EQ(grid.width, layout.width);
  ASSERT_EQ(grid.height, layout.height);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].cells.size(); ++c) {
      const Rect& at = layout.images[r][c];
      const RgbImage& source = rows[r].cells[c].image;
      for (int y = 0; y < at.height; ++y)
        for (int x = 0; x < at.width; ++x)
          ASSERT_EQ(grid.at(at.x + x, at.y + y), source.at(x / o.scale, y / o.scale))
              << "row " << r << " cell " << c << " at " << x << "," << y;
      EXPECT_GT(ink(grid, layout.captions[r][c], o.background), 0) << "caption missing";
      const Rgb left_of_image = grid.at(at.x - 1, at.y);
      EXPECT_EQ(left_of_image, rows[r].cells[c].frame.value_or(o.background));
    }
  }
  EXPECT_GT(ink(grid, *layout.title, o.background), 0);
  EXPECT_GT(ink(grid, *layout.labels[0], o.background), 0);
  // Between cells there is only background.
  const Rect gap{layout.images[0][0].x + layout.images[0][0].width + o.frame, layout.images[0][0].y,
                 o.padding, layout.images[0][0].height};
  EXPECT_EQ(ink(grid, gap, o.background), 0);
}

TEST(Grid, LongTextWidensTheGridUpToTheLimitThenIsShortened) {
  std::vector<GridRow> rows(1);
  rows[0].label = std::string(200, 'x');
  GridCell cell;
  cell.image = noise(4, 4, 1);
  rows[0].cells.push_back(cell);
  GridOptions o;
  o.max_text_width = 300;
  const GridLayout layout = layout_grid(rows, o);
  EXPECT_EQ(layout.width, 300 + 2 * o.padding);
  const RgbImage grid = render_grid(rows, o);
  EXPECT_EQ(grid.width, layout.width);
}

TEST(Grid, RejectsEmptyGridsAndBadOptions) {
  EXPECT_THROW(layout_grid({}), ImageError);
  EXPECT_THROW(layout_grid({GridRow{"label", {}}}), ImageError);
  GridOptions o;
  o.scale = 0;
  EXPECT_THROW(layout_grid(sample_rows(), o), ImageError);
}

}  // namespace
}  // namespace spotlight::image
