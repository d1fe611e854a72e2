#pragma once
// Object detection, the eyes of the scorer. Tuned for blurry, noisy model output:
//
//  1. Foreground: pixels whose brightest channel (clamped to [0,1], NaN as 0) exceeds
//     kForegroundThreshold (the background is black).
//  2. Connected components (4-connectivity); components below noise_area() pixels are noise.
//  3. Objects: components of at least object_min_area() pixels.
//     Box: the bounding box, trimmed of edge rows/columns holding fewer than max(2, 1/4 of the
//     fullest) of the component's pixels (stray noise pixels stuck to an edge); centre = box
//     centre (as GenEval).
//     Colour: the palette colour nearest to the mean RGB scaled so its brightest channel is 1,
//     none if farther than kMaxColourDistance (grey, white, orange ...).
//     Shape: none for a component smaller than shape_min_area() (half a nominal object: a
//     fragment, however square, is not a square; a scatter of fragments must not count as
//     objects). Otherwise an equal-area square and disc are fitted to the component's soft
//     brightness (background-subtracted, scaled to its level, centred on its centroid), each crisp
//     and blurred once and twice by a 3x3 box; the better fit wins. None if the box's aspect ratio
//     exceeds kMaxAspect or neither fits within kMaxShapeError (rings, bars, scribbles). Unlike a
//     bounding-box fill ratio, this survives blur plus noise on 7-pixel objects, where a blurred
//     square loses its corners and one stray pixel moves the box.

#include <array>
#include <optional>
#include <vector>

#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::task {

inline constexpr float kForegroundThreshold = 0.45f;
inline constexpr double kMaxColourDistance = 0.5;
inline constexpr double kMaxAspect = 1.5;
// Largest mismatch per unit area of a shape fit (real shapes, blurred and noisy: < 0.17;
// rings, L's, plus signs: > 0.39).
inline constexpr double kMaxShapeError = 0.3;

// Components below this many pixels are noise: max(3, size^2 / 256).
int noise_area(int image_size);
// Components below this many pixels are not objects: max(4, size^2 / 128).
int object_min_area(int image_size);
// Objects below this many pixels have no shape (fragments): object_size()^2 / 2, half the
// nominal square (a rendered object, blurred or not, covers at least ~0.75 of it).
int shape_min_area(int image_size);

struct DetectedObject {
  std::optional<Colour> colour;        // nullopt: no palette colour is close
  std::optional<Shape> shape;          // nullopt: neither square nor disc
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // trimmed bounding box, inclusive pixel coordinates
  int area = 0;                        // the component's pixels inside the box
  std::array<float, 3> mean_rgb{};     // mean colour of the component's pixels
  double square_error = 0.0;           // mismatch of the best square fit, per unit area
  double disc_error = 0.0;             // mismatch of the best disc fit, per unit area

  double centre_x() const { return 0.5 * (x0 + x1 + 1); }
  double centre_y() const { return 0.5 * (y0 + y1 + 1); }
  int box_width() const { return x1 - x0 + 1; }
  int box_height() const { return y1 - y0 + 1; }
};

// Objects in raster order of their first pixel. Throws TaskError if the image is not
// options.image_size square or its rgb has the wrong length.
std::vector<DetectedObject> detect_objects(const Image& image, const TaskOptions& options);

// GenEval's relative position of box A to box B (POSITION_THRESHOLD = 0.1): shrink the centre
// offset along each axis by threshold * (size_a + size_b), normalise by the original offset's
// length; "left of" iff the x component < -min_component (image y grows downwards, so "above"
// iff the y component < -min_component). kNone never holds.
bool relation_holds(const DetectedObject& a, const DetectedObject& b, Relation relation,
                    double threshold = 0.1, double min_component = 0.5);

}  // namespace spotlight::task
