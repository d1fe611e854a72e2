#include "common/task/prompt.hpp"

#include <cctype>

#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

constexpr std::array<std::string_view, 5> kNumberWords = {"zero", "one", "two", "three", "four"};

std::string object_phrase(const ObjectSpec& spec) {
  std::string out = spec.count == 1 ? "a" : std::string(kNumberWords[spec.count]);
  out += ' ';
  out += name(spec.colour);
  out += ' ';
  out += name(spec.shape);
  if (spec.count != 1) out += 's';
  return out;
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) {
      ++j;
    }
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

// Parses "a red square" / "three red squares" at words[pos..pos+3); advances pos.
std::optional<ObjectSpec> parse_object(const std::vector<std::string>& words, size_t& pos) {
  if (pos + 3 > words.size()) return std::nullopt;
  ObjectSpec spec;
  const std::string& number = words[pos];
  if (number == "a") {
    spec.count = 1;
  } else {
    int count = 0;
    for (int n = 2; n <= kMaxObjectCount; ++n) {
      if (number == kNumberWords[n]) count = n;
    }
    if (count == 0) return std::nullopt;
    spec.count = count;
  }
  bool found_colour = false;
  for (Colour colour : kColours) {
    if (words[pos + 1] == name(colour)) {
      spec.colour = colour;
      found_colour = true;
    }
  }
  if (!found_colour) return std::nullopt;
  bool found_shape = false;
  for (Shape shape : kShapes) {
    std::string expected(name(shape));
    if (spec.count != 1) expected += 's';
    if (words[pos + 2] == expected) {
      spec.shape = shape;
      found_shape = true;
    }
  }
  if (!found_shape) return std::nullopt;
  pos += 3;
  return spec;
}

}  // namespace

std::string_view name(Colour colour) {
  switch (colour) {
    case Colour::kRed:
      return "red";
    case Colour::kGreen:
      return "green";
    case Colour::kBlue:
      return "blue";
    case Colour::kYellow:
      return "yellow";
    case Colour::kMagenta:
      return "magenta";
    case Colour::kCyan:
      return "cyan";
  }
  return "?";
}

std::string_view name(Shape shape) {
  switch (shape) {
    case Shape::kSquare:
      return "square";
    case Shape::kDisc:
      return "disc";
  }
  return "?";
}

std::string_view name(Relation relation) {
  switch (relation) {
    case Relation::kNone:
      return "none";
    case Relation::kLeftOf:
      return "left of";
    case Relation::kRightOf:
      return "right of";
    case Relation::kAbove:
      return "above";
    case Relation::kBelow:
      return "below";
  }
  return "?";
}

std::string_view name(Category category) {
  switch (category) {
    case Category::kSingleObject:
      return "single_object";
    case Category::kTwoObject:
      return "two_object";
    case Category::kCounting:
      return "counting";
    case Category::kPosition:
      return "position";
    case Category::kText:
      return "text";
    case Category::kFreeText:
      return "free_text";
  }
  return "?";
}

std::array<float, 3> palette_rgb(Colour colour) {
  switch (colour) {
    case Colour::kRed:
      return {1.0f, 0.0f, 0.0f};
    case Colour::kGreen:
      return {0.0f, 1.0f, 0.0f};
    case Colour::kBlue:
      return {0.0f, 0.0f, 1.0f};
    case Colour::kYellow:
      return {1.0f, 1.0f, 0.0f};
    case Colour::kMagenta:
      return {1.0f, 0.0f, 1.0f};
    case Colour::kCyan:
      return {0.0f, 1.0f, 1.0f};
  }
  return {0.0f, 0.0f, 0.0f};
}

void validate(const Prompt& prompt) {
  auto fail = [](const std::string& what) { throw TaskError("invalid Prompt: " + what); };
  auto check_count = [&](const ObjectSpec& spec, int lo, int hi, const char* field) {
    if (spec.count < lo || spec.count > hi) {
      fail(std::string(field) + ".count must be in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got " + std::to_string(spec.count));
    }
  };
  auto check_colour_shape = [&](const ObjectSpec& spec, const char* field) {
    if (static_cast<unsigned>(spec.colour) >= kColours.size()) fail(std::string(field) + ".colour");
    if (static_cast<unsigned>(spec.shape) >= kShapes.size()) fail(std::string(field) + ".shape");
  };
  auto expect_objects = [&](size_t n) {
    if (prompt.objects.size() != n) {
      fail("objects must have " + std::to_string(n) + " entries for category " +
           std::string(name(prompt.category)) + ", got " + std::to_string(prompt.objects.size()));
    }
  };
  auto expect_relation = [&](bool wanted) {
    if (wanted != (prompt.relation != Relation::kNone)) {
      fail(std::string("relation must be ") + (wanted ? "set" : "kNone") + " for category " +
           std::string(name(prompt.category)));
    }
  };
  if (prompt.category != Category::kText && !prompt.digits.empty()) {
    fail("digits must be empty for category " + std::string(name(prompt.category)));
  }
  if (prompt.category != Category::kFreeText && !prompt.free_text.empty()) {
    fail("free_text must be empty for category " + std::string(name(prompt.category)));
  }
  switch (prompt.category) {
    case Category::kSingleObject:
      expect_objects(1);
      expect_relation(false);
      check_count(prompt.objects[0], 1, 1, "objects[0]");
      break;
    case Category::kTwoObject:
      expect_objects(2);
      expect_relation(false);
      check_count(prompt.objects[0], 1, 1, "objects[0]");
      check_count(prompt.objects[1], 1, 1, "objects[1]");
      break;
    case Category::kCounting:
      expect_objects(1);
      expect_relation(false);
      check_count(prompt.objects[0], 2, kMaxObjectCount, "objects[0]");
      break;
    case Category::kPosition:
      expect_objects(2);
      expect_relation(true);
      if (static_cast<unsigned>(prompt.relation) > static_cast<unsigned>(Relation::kBelow)) {
        fail("relation out of range");
      }
      check_count(prompt.objects[0], 1, 2, "objects[0]");
      check_count(prompt.objects[1], 1, 1, "objects[1]");
      break;
    case Category::kText:
      expect_objects(0);
      expect_relation(false);
      if (prompt.digits.empty() || prompt.digits.size() > static_cast<size_t>(kMaxDigits)) {
        fail("digits must have 1.." + std::to_string(kMaxDigits) + " characters, got \"" +
             prompt.digits + "\"");
      }
      for (char c : prompt.digits) {
        if (c < '0' || c > '9') fail("digits must be '0'-'9', got \"" + prompt.digits + "\"");
      }
      return;
    case Category::kFreeText:
      expect_objects(0);
      expect_relation(false);
      if (prompt.free_text.empty()) fail("free_text must not be empty");
      return;
    default:
      fail("category out of range");
  }
  for (size_t i = 0; i < prompt.objects.size(); ++i) {
    check_colour_shape(prompt.objects[i], i == 0 ? "objects[0]" : "objects[1]");
  }
  if (prompt.objects.size() == 2 && prompt.objects[0].colour == prompt.objects[1].colour &&
      prompt.objects[0].shape == prompt.objects[1].shape) {
    fail("objects[0] and objects[1] must differ in colour or shape");
  }
}

std::string Prompt::text() const {
  validate(*this);
  switch (category) {
    case Category::kSingleObject:
    case Category::kCounting:
      return object_phrase(objects[0]);
    case Category::kTwoObject:
      return object_phrase(objects[0]) + " and " + object_phrase(objects[1]);
    case Category::kPosition:
      return object_phrase(objects[0]) + " " + std::string(name(relation)) + " " +
             object_phrase(objects[1]);
    case Category::kText:
      return "the number " + digits;
    case Category::kFreeText:
      return free_text;
  }
  return {};
}

Prompt free_text_prompt(std::string text) {
  Prompt prompt;
  prompt.category = Category::kFreeText;
  prompt.free_text = std::move(text);
  validate(prompt);
  return prompt;
}

std::optional<Prompt> parse_prompt(std::string_view text) {
  std::vector<std::string> words;
  for (std::string_view w : split_words(text)) {
    std::string lower(w);
    for (char& c : lower) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    words.push_back(std::move(lower));
  }
  Prompt prompt;
  if (words.size() == 3 && words[0] == "the" && words[1] == "number") {
    prompt.category = Category::kText;
    prompt.digits = words[2];
  } else {
    size_t pos = 0;
    std::optional<ObjectSpec> first = parse_object(words, pos);
    if (!first) return std::nullopt;
    prompt.objects.push_back(*first);
    if (pos == words.size()) {
      prompt.category = first->count == 1 ? Category::kSingleObject : Category::kCounting;
    } else if (words[pos] == "and") {
      prompt.category = Category::kTwoObject;
      ++pos;
    } else {
      prompt.category = Category::kPosition;
      for (Relation relation : kRelations) {
        const std::vector<std::string_view> rel = split_words(name(relation));
        if (pos + rel.size() > words.size()) continue;
        bool match = true;
        for (size_t i = 0; i < rel.size(); ++i) {
          match = match && words[pos + i] == rel[i];
        }
        if (match) {
          prompt.relation = relation;
          pos += rel.size();
          break;
        }
      }
      if (prompt.relation == Relation::kNone) return std::nullopt;
    }
    if (prompt.category == Category::kTwoObject || prompt.category == Category::kPosition) {
      std::optional<ObjectSpec> second = parse_object(words, pos);
      if (!second) return std::nullopt;
      prompt.objects.push_back(*second);
    }
    if (pos != words.size()) return std::nullopt;
  }
  try {
    validate(prompt);
  } catch (const TaskError&) {
    return std::nullopt;
  }
  return prompt;
}

}  // namespace spotlight::task
