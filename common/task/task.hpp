#pragma once
// The embedded synthetic task ("GenEval-like"): what the tiny DiT learns in pretraining and is
// RL-post-trained on. Runs anywhere, downloads nothing, pure C++.
//
// Prompts (prompt.hpp) come in five categories over a palette of six colours (red, green, blue,
// yellow, magenta, cyan) and two shapes (square, disc) on a black background:
//   single_object "a green disc" | two_object "a red square and a blue disc" |
//   counting "three cyan discs" | position "two red squares left of a blue disc" |
//   text "the number 4821" (an OCR-like task: digits in a 3x5 bitmap font).
// PromptGenerator (generator.hpp) draws training prompts by seed; validation_prompts() returns
// fixed held-out prompts, disjoint from anything the generator produces. Vocabulary
// (vocabulary.hpp) encodes prompts to token ids; render() (render.hpp) draws ground-truth images.
//
// Grading (score.hpp; objects in detect.hpp, digits in digits.hpp) follows GenEval on detected
// objects: connected components of the thresholded image, coloured by the nearest palette colour,
// shaped by whether an equal-area square or disc (crisp or blurred) fits them better.
// A prompt is split into clauses; the image is `correct` iff every clause holds, and `reward` is
// the mean clause credit, exactly 1 iff correct:
//   single_object, two_object  each (colour, shape) is present at least `count` times; extra
//                              objects are allowed.
//                              credit = max(min(m, n) / n, 0.5 * min(m + k, n) / n) with n the
//                              count asked, m objects of the right colour and shape and k of the
//                              right colour but another (or no) shape.
//   counting                   exactly n objects of that colour and shape (others are ignored).
//                              credit = max(c(m), 0.5 * c(m + k)), c(x) = max(0, 1 - |x - n| / n).
//   position                   clauses: A present (>= n), B present, and every detected A is in
//                              the relation to every detected B by box centres, with GenEval's
//                              margin (detect.hpp: relation_holds). Relation credit = share of
//                              (A, B) pairs in relation, 0 if either is missing.
//   text                       the digits read left to right equal the prompt's digits;
//                              reward = max(0, 1 - edit_distance(read, digits) / #digits).
// evaluate() reports the GenEval overall score: the mean over categories of strict accuracy.

#include "common/task/detect.hpp"      // IWYU pragma: export
#include "common/task/digits.hpp"      // IWYU pragma: export
#include "common/task/errors.hpp"      // IWYU pragma: export
#include "common/task/generator.hpp"   // IWYU pragma: export
#include "common/task/image.hpp"       // IWYU pragma: export
#include "common/task/options.hpp"     // IWYU pragma: export
#include "common/task/prompt.hpp"      // IWYU pragma: export
#include "common/task/render.hpp"      // IWYU pragma: export
#include "common/task/score.hpp"       // IWYU pragma: export
#include "common/task/vocabulary.hpp"  // IWYU pragma: export
