#pragma once
// Structured prompts of the embedded task and their one canonical English text.
//
//   single_object  "a green disc"                         objects = {1 x (green, disc)}
//   two_object     "a red square and a blue disc"         objects = {1 x A, 1 x B}, A != B
//   counting       "three cyan discs"                     objects = {n x A}, 2 <= n <= 4
//   position       "two red squares left of a blue disc"  objects = {n x A, 1 x B}, A != B,
//                                                         n in {1, 2}, relation != kNone
//   text           "the number 4821"                      digits = "4821", no objects
//   free_text      any text of a user's prompt file        free_text = the text verbatim
//
// text() and parse_prompt() are inverses: parse_prompt(p.text()) == p for every valid prompt of
// the embedded categories. A free_text prompt (task.kind prompt_file: a user's own prompts,
// conditioned by precomputed embeddings) is never parsed from text and cannot be graded by the
// embedded scorer (score() throws TaskError); a reward service scores it.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotlight::task {

// Fixed palette on a black background (RGB in [0,1]: see palette_rgb()).
enum class Colour { kRed, kGreen, kBlue, kYellow, kMagenta, kCyan };
enum class Shape { kSquare, kDisc };
enum class Relation { kNone, kLeftOf, kRightOf, kAbove, kBelow };
// GenEval-like categories plus an OCR-like digit task; kFreeText is a user's prompt (not part of
// the embedded task, so not in kCategories).
enum class Category { kSingleObject, kTwoObject, kCounting, kPosition, kText, kFreeText };

inline constexpr std::array<Colour, 6> kColours = {
    Colour::kRed, Colour::kGreen, Colour::kBlue, Colour::kYellow, Colour::kMagenta, Colour::kCyan};
inline constexpr std::array<Shape, 2> kShapes = {Shape::kSquare, Shape::kDisc};
inline constexpr std::array<Relation, 4> kRelations = {Relation::kLeftOf, Relation::kRightOf,
                                                       Relation::kAbove, Relation::kBelow};
inline constexpr std::array<Category, 5> kCategories = {Category::kSingleObject,
                                                        Category::kTwoObject, Category::kCounting,
                                                        Category::kPosition, Category::kText};

// Largest object count a prompt may ask for (the vocabulary has "one" .. "four").
inline constexpr int kMaxObjectCount = 4;
// Longest digit string of a text prompt.
inline constexpr int kMaxDigits = 4;

// Lower-case English names: "red", "disc", "left of", and for categories the GenEval-style tags
// "single_object", "two_object", "counting", "position", "text", "free_text" (stable; usable as
// metric labels).
std::string_view name(Colour colour);
std::string_view name(Shape shape);
std::string_view name(Relation relation);
std::string_view name(Category category);

// Palette colour as RGB in [0,1].
std::array<float, 3> palette_rgb(Colour colour);

struct ObjectSpec {
  int count = 1;
  Colour colour = Colour::kRed;
  Shape shape = Shape::kSquare;

  bool operator==(const ObjectSpec&) const = default;
};

struct Prompt {
  Category category = Category::kSingleObject;
  std::vector<ObjectSpec> objects;      // empty for kText
  Relation relation = Relation::kNone;  // set only for kPosition: objects[0] <relation> objects[1]
  std::string digits;                   // set only for kText: 1..kMaxDigits characters '0'-'9'
  std::string free_text;                // set only for kFreeText: non-empty

  // The canonical text, e.g. "two red squares left of a blue disc". Throws TaskError if invalid.
  std::string text() const;

  bool operator==(const Prompt&) const = default;
};

// Throws TaskError naming the field if `prompt` breaks the shape documented above.
void validate(const Prompt& prompt);

// A user's prompt: category kFreeText holding `text` verbatim. Throws TaskError when empty.
Prompt free_text_prompt(std::string text);

// Parses a canonical prompt text (as produced by Prompt::text(); case and extra spaces are
// tolerated). Returns std::nullopt for anything else.
std::optional<Prompt> parse_prompt(std::string_view text);

}  // namespace spotlight::task
