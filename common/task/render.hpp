#pragma once
// Ground-truth images for pretraining: what a perfect model would draw for a prompt.

#include <cstdint>

#include "common/task/image.hpp"
#include "common/task/options.hpp"
#include "common/task/prompt.hpp"

namespace spotlight::task {

// Renders `prompt` at options.image_size, a pure function of (prompt, seed, options).
//  - Objects: flat palette colour on black, side/diameter object_size() plus a jitter of
//    0..max(1, object_size()/4) pixels, at random positions at least object_gap() pixels apart
//    and 1 pixel from the border. A relation holds with margin (the offset is mostly along the
//    relation's axis), so the scorer accepts it even after blurring.
//  - Text: white digits in a 3x5 bitmap font scaled by text_scale(), one font pixel between
//    digits, at a random position.
// Throws TaskError if the prompt or options are invalid.
Image render(const Prompt& prompt, uint64_t seed, const TaskOptions& options);

// Nominal object side/diameter in pixels for an image size: max(7, round(0.22 * size)). Discs
// smaller than 7 pixels do not rasterise visibly rounder than a blurred square.
int object_size(int image_size);
// Minimum background gap between objects: max(3, size / 10); blur plus noise does not merge them.
int object_gap(int image_size);
// Pixels per font pixel of the digit font: size / 15 (so four digits always fit).
int text_scale(int image_size);

}  // namespace spotlight::task
