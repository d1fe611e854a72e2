#include "common/task/digits.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "common/task/detail/analysis.hpp"
#include "common/task/detail/font.hpp"
#include "common/task/render.hpp"

namespace spotlight::task {
namespace {

using detail::Analysis;

// Glyphs are matched crisp or blurred once: twice-blurred 2-pixel strokes are too featureless
// to tell from a blurred blob, so they are illegible by design.
constexpr int kGlyphBlurLevels = 2;
// Margin in pixels around a glyph's box in its pixel-level check: holds the spill of one blur but
// not the neighbouring glyph's (glyphs are one font pixel, >= 2 pixels, apart).
constexpr int kGlyphMargin = 1;

using GlyphCells = std::array<std::array<double, detail::kGlyphWidth>, detail::kGlyphHeight>;

// Summed-area table of brightness: sum over [0, x) x [0, y) at (y * (width + 1) + x).
std::vector<double> integral_image(const Analysis& a) {
  const size_t stride = a.width + 1;
  std::vector<double> sums(stride * (a.height + 1), 0.0);
  for (int y = 0; y < a.height; ++y) {
    double row = 0.0;
    for (int x = 0; x < a.width; ++x) {
      row += a.brightness[static_cast<size_t>(y) * a.width + x];
      sums[(y + 1) * stride + x + 1] = sums[y * stride + x + 1] + row;
    }
  }
  return sums;
}

// Mean brightness of each cell of the 3x5 grid over a font-sized box at (x0, y0) (cells of
// scale x scale pixels; the box must lie inside the image).
GlyphCells cell_means(const std::vector<double>& sums, int width, int x0, int y0, int scale) {
  const size_t stride = width + 1;
  GlyphCells cells{};
  for (int row = 0; row < detail::kGlyphHeight; ++row) {
    const size_t ya = y0 + row * scale, yb = ya + scale;
    for (int col = 0; col < detail::kGlyphWidth; ++col) {
      const size_t xa = x0 + col * scale, xb = xa + scale;
      const double sum = sums[yb * stride + xb] - sums[ya * stride + xb] - sums[yb * stride + xa] +
                         sums[ya * stride + xa];
      cells[row][col] = sum / (scale * scale);
    }
  }
  return cells;
}

// The font at one scale: every digit crisp and blurred once, (a) as centred unit-norm cell means
// for correlation, (b) as pixels on a black margin of kGlyphMargin for the pixel-level check.
struct GlyphTemplates {
  int scale = 0;
  int width = 0, height = 0;  // of the pixel templates, margin included
  std::array<std::array<GlyphCells, 10>, kGlyphBlurLevels> cells{};
  std::array<std::array<std::vector<double>, 10>, kGlyphBlurLevels> pixels;
};

GlyphTemplates make_glyph_templates(int scale) {
  GlyphTemplates out;
  out.scale = scale;
  const int gw = detail::kGlyphWidth * scale, gh = detail::kGlyphHeight * scale;
  const int w = gw + 2 * kGlyphMargin, h = gh + 2 * kGlyphMargin;
  out.width = w;
  out.height = h;
  std::vector<double> pixels, scratch;
  for (int digit = 0; digit < 10; ++digit) {
    pixels.assign(static_cast<size_t>(w) * h, 0.0);
    for (int y = 0; y < gh; ++y) {
      for (int x = 0; x < gw; ++x) {
        const bool ink = detail::glyph_ink(digit, x / scale, y / scale);
        pixels[(y + kGlyphMargin) * w + x + kGlyphMargin] = ink ? 1.0 : 0.0;
      }
    }
    for (int level = 0; level < kGlyphBlurLevels; ++level) {
      if (level > 0) detail::box_blur(pixels, scratch, w, h);
      out.pixels[level][digit] = pixels;
      GlyphCells& t = out.cells[level][digit];
      double mean = 0.0;
      for (int row = 0; row < detail::kGlyphHeight; ++row) {
        for (int col = 0; col < detail::kGlyphWidth; ++col) {
          double sum = 0.0;
          for (int y = row * scale; y < (row + 1) * scale; ++y) {
            for (int x = col * scale; x < (col + 1) * scale; ++x) {
              sum += pixels[(y + kGlyphMargin) * w + x + kGlyphMargin];
            }
          }
          t[row][col] = sum / (scale * scale);
          mean += t[row][col];
        }
      }
      mean /= detail::kGlyphWidth * detail::kGlyphHeight;
      double norm = 0.0;
      for (auto& row : t) {
        for (double& v : row) {
          v -= mean;
          norm += v * v;
        }
      }
      for (auto& row : t) {
        for (double& v : row) {
          v /= std::sqrt(norm);
        }
      }
    }
  }
  return out;
}

// Templates per scale, built once (thread-safe).
const GlyphTemplates& glyph_templates(int scale) {
  constexpr int kMaxScale = 256 / 15;
  static std::array<std::once_flag, kMaxScale + 1> once;
  static std::array<GlyphTemplates, kMaxScale + 1> templates;
  scale = std::clamp(scale, 1, kMaxScale);
  std::call_once(once[scale], [scale] { templates[scale] = make_glyph_templates(scale); });
  return templates[scale];
}

// Pixel-level check of "digit at this blur level, drawn with some brightness b on black, at
// (x0, y0)": fits b by least squares over the box and its margin and returns the residual energy
// relative to the fitted glyph's (infinity if b <= 0). Blobs and bars that correlate with a digit
// at cell level leave its holes and gaps filled, and fail here.
double glyph_residual(const Analysis& a, const GlyphTemplates& t, int level, int digit, int x0,
                      int y0, double noise_energy) {
  const std::vector<double>& tp = t.pixels[level][digit];
  double dot = 0.0, observed = 0.0, energy = 0.0;
  double dark = 0.0;  // pixels where the template is dark, weighted by how dark
  for (int y = 0; y < t.height; ++y) {
    const int iy = y0 - kGlyphMargin + y;
    if (iy < 0 || iy >= a.height) continue;
    for (int x = 0; x < t.width; ++x) {
      const int ix = x0 - kGlyphMargin + x;
      if (ix < 0 || ix >= a.width) continue;
      const double o = a.brightness[static_cast<size_t>(iy) * a.width + ix];
      const double v = tp[static_cast<size_t>(y) * t.width + x];
      dot += o * v;
      observed += o * o;
      energy += v * v;
      dark += 1.0 - v;
    }
  }
  if (!(dot > 0.0)) return std::numeric_limits<double>::infinity();
  const double b = dot / energy;
  // sum (o - b v)^2 = sum o^2 - 2 b dot + b^2 energy = observed - b * dot, less what background
  // noise explains where the template is dark (ink, clipped at full brightness, carries little).
  return std::max(0.0, observed - b * dot - dark * noise_energy) / (b * dot);
}

// Mean squared brightness of the pixels more than 2 pixels from any foreground: what noise adds
// per pixel to a glyph's residual.
double background_energy(const Analysis& a) {
  // Foreground dilated by 2 in x, then in y.
  std::vector<char> near_x(a.brightness.size(), 0), near(a.brightness.size(), 0);
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      if (!a.foreground(x, y)) continue;
      for (int dx = std::max(0, x - 2); dx <= std::min(a.width - 1, x + 2); ++dx) {
        near_x[static_cast<size_t>(y) * a.width + dx] = 1;
      }
    }
  }
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      if (!near_x[static_cast<size_t>(y) * a.width + x]) continue;
      for (int dy = std::max(0, y - 2); dy <= std::min(a.height - 1, y + 2); ++dy) {
        near[static_cast<size_t>(dy) * a.width + x] = 1;
      }
    }
  }
  double sum = 0.0;
  int n = 0;
  for (size_t i = 0; i < a.brightness.size(); ++i) {
    if (near[i]) continue;
    sum += static_cast<double>(a.brightness[i]) * a.brightness[i];
    ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

// Best reading of one glyph at one blur level.
struct Reading {
  int digit = -1;                                             // -1: nothing correlated
  double residual = std::numeric_limits<double>::infinity();  // glyph_residual of the reading
};
using Readings = std::array<Reading, kGlyphBlurLevels>;

// Tries the font box at (x0, y0): at each blur level, the two digits whose cell patterns
// correlate best (at least kMinGlyphCorrelation) are checked at pixel level; one with a lower
// residual than best[level] replaces it.
void match_glyph(const Analysis& a, const std::vector<double>& sums, const GlyphTemplates& t,
                 int x0, int y0, double noise_energy, Readings& best) {
  constexpr int kCandidates = 2;
  const GlyphCells cells = cell_means(sums, a.width, x0, y0, t.scale);
  constexpr double kCells = detail::kGlyphWidth * detail::kGlyphHeight;
  double mean = 0.0;
  for (const auto& row : cells) {
    for (double v : row) {
      mean += v;
    }
  }
  mean /= kCells;
  double var = 0.0;
  for (const auto& row : cells) {
    for (double v : row) {
      var += (v - mean) * (v - mean);
    }
  }
  if (!(var > 1e-12)) return;
  const double inv_sd = 1.0 / std::sqrt(var);
  for (int level = 0; level < kGlyphBlurLevels; ++level) {
    std::array<std::pair<double, int>, 10> ranked;
    for (int digit = 0; digit < 10; ++digit) {
      double cov = 0.0;  // the templates have mean 0, so the cells need no centring here
      for (int row = 0; row < detail::kGlyphHeight; ++row) {
        for (int col = 0; col < detail::kGlyphWidth; ++col) {
          cov += cells[row][col] * t.cells[level][digit][row][col];
        }
      }
      ranked[digit] = {cov * inv_sd, digit};
    }
    std::partial_sort(ranked.begin(), ranked.begin() + kCandidates, ranked.end(), std::greater<>());
    for (int k = 0; k < kCandidates; ++k) {
      const auto [correlation, digit] = ranked[k];
      if (correlation < kMinGlyphCorrelation) break;
      const double residual = glyph_residual(a, t, level, digit, x0, y0, noise_energy);
      if (residual < best[level].residual) best[level] = {digit, residual};
    }
  }
}

// Reads one glyph whose ink lies in columns [x0, x1], at every blur level; nullopt if there is
// nothing glyph-like. Rows with fewer than min_ink foreground pixels (stray noise) do not extend
// the glyph's box. Blur and noise widen or thin that box by a pixel or two, so every font-sized
// box (3 x 5 font pixels of `scale`) from a pixel before it to a pixel past it, or within a pixel
// of centred on it, is tried.
std::optional<Readings> read_glyph(const Analysis& a, const std::vector<double>& sums, int x0,
                                   int x1, int scale, int min_ink, double noise_energy) {
  int y0 = a.height;
  int y1 = -1;
  for (int y = 0; y < a.height; ++y) {
    int ink = 0;
    for (int x = x0; x <= x1; ++x) {
      ink += a.foreground(x, y);
    }
    if (ink >= min_ink) {
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  if (y1 < 0) return std::nullopt;
  if (2 * (y1 - y0 + 1) < detail::kGlyphHeight * scale) return std::nullopt;  // a stray stroke
  const GlyphTemplates& templates = glyph_templates(scale);
  const int gw = detail::kGlyphWidth * scale;
  const int gh = detail::kGlyphHeight * scale;
  const int cx = (x0 + x1 + 1 - gw) / 2;
  const int cy = (y0 + y1 + 1 - gh) / 2;
  const int bx_lo = std::max(0, std::min(x0 - 1, cx - 1));
  const int bx_hi = std::min(a.width - gw, std::max(x1 - gw + 2, cx + 1));
  const int by_lo = std::max(0, std::min(y0 - 1, cy - 1));
  const int by_hi = std::min(a.height - gh, std::max(y1 - gh + 2, cy + 1));
  Readings best;
  for (int bx = bx_lo; bx <= bx_hi; ++bx) {
    for (int by = by_lo; by <= by_hi; ++by) {
      match_glyph(a, sums, templates, bx, by, noise_energy, best);
    }
  }
  return best;
}

}  // namespace

std::string read_digits(const Image& image, const TaskOptions& options) {
  const Analysis a = detail::analyse(image, options);
  const int s = text_scale(options.image_size);
  const int glyph = detail::kGlyphWidth * s;
  const int pitch = glyph + s;  // glyph plus one font pixel of spacing
  const std::vector<double> sums = integral_image(a);
  const double noise_energy = background_energy(a);
  // A column (or a glyph row) is ink if it holds at least one font pixel's width of foreground;
  // single stray noise pixels are not.
  const int min_ink = std::max(2, s);
  std::vector<bool> ink(a.width, false);
  for (int x = 0; x < a.width; ++x) {
    int count = 0;
    for (int y = 0; y < a.height; ++y) {
      count += a.foreground(x, y);
    }
    ink[x] = count >= min_ink;
  }
  std::vector<Readings> glyphs;
  int x = 0;
  while (x < a.width) {
    if (!ink[x]) {
      ++x;
      continue;
    }
    const int begin = x;
    while (x < a.width && ink[x]) {
      ++x;
    }
    const int width = x - begin;      // run [begin, x)
    if (2 * width < glyph) continue;  // narrower than half a glyph: a stray mark
    // A run as wide as k glyphs is k glyphs that ran together.
    const int k = std::max(1, static_cast<int>(std::lround((width + s) / double(pitch))));
    int spacing = s;
    double cell = (width - (k - 1) * spacing) / double(k);
    if (cell < 1.0) {
      spacing = 0;
      cell = width / double(k);
    }
    for (int i = 0; i < k; ++i) {
      const double start = begin + i * (cell + spacing);
      const int x0 = std::clamp(static_cast<int>(std::lround(start)), begin, x - 1);
      const int x1 = std::clamp(static_cast<int>(std::lround(start + cell)) - 1, x0, x - 1);
      if (std::optional<Readings> r = read_glyph(a, sums, x0, x1, s, min_ink, noise_energy)) {
        glyphs.push_back(*r);
      }
    }
  }
  // One blur level for the whole string (its glyphs were drawn alike): the level whose readings
  // fit best in total (residuals capped at 1, so one unreadable glyph does not decide).
  int level = 0;
  double best_total = std::numeric_limits<double>::infinity();
  for (int l = 0; l < kGlyphBlurLevels; ++l) {
    double total = 0.0;
    for (const Readings& r : glyphs) {
      total += std::min(1.0, r[l].residual);
    }
    if (total < best_total) {
      best_total = total;
      level = l;
    }
  }
  std::string out;
  for (const Readings& r : glyphs) {
    const Reading& g = r[level];
    out += g.digit < 0 || g.residual > kMaxGlyphResidual ? '?' : static_cast<char>('0' + g.digit);
  }
  return out;
}

}  // namespace spotlight::task
