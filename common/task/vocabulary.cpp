#include "common/task/vocabulary.hpp"

#include <cctype>

#include "common/task/errors.hpp"

namespace spotlight::task {
namespace {

// Append-only: ids are positions in this list.
constexpr const char* kWords[] = {
    "<pad>",  "<unk>",  // 0, 1
    "a",      "the",     "number", "and",    "left",    "right", "of", "above", "below", "one",
    "two",    "three",   "four",                                 //
    "red",    "green",   "blue",   "yellow", "magenta", "cyan",  //
    "square", "squares", "disc",   "discs",                      //
    "0",      "1",       "2",      "3",      "4",       "5",     "6",  "7",     "8",     "9",
};

bool is_digits(std::string_view word) {
  if (word.empty()) return false;
  for (char c : word) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

Vocabulary::Vocabulary() {
  for (const char* w : kWords) {
    ids_.emplace(w, static_cast<int64_t>(words_.size()));
    words_.emplace_back(w);
  }
}

int64_t Vocabulary::id(std::string_view word) const {
  auto it = ids_.find(std::string(word));
  return it == ids_.end() ? kUnkId : it->second;
}

const std::string& Vocabulary::word(int64_t id) const {
  if (id < 0 || id >= size()) return words_[kUnkId];
  return words_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocabulary::encode(std::string_view text, int max_len) const {
  if (max_len < 1) {
    throw TaskError("Vocabulary::encode: max_len must be >= 1, got " + std::to_string(max_len));
  }
  std::vector<int64_t> ids;
  ids.reserve(max_len);
  std::string lower;
  size_t i = 0;
  while (i < text.size() && ids.size() < static_cast<size_t>(max_len)) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    lower.clear();
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
      ++i;
    }
    if (lower.empty()) break;
    if (is_digits(lower)) {
      for (char c : lower) {
        ids.push_back(id(std::string_view(&c, 1)));
      }
    } else {
      ids.push_back(id(lower));
    }
  }
  ids.resize(max_len, kPadId);
  return ids;
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  bool previous_digit = false;
  for (int64_t token : ids) {
    if (token == kPadId) continue;
    const std::string& w = word(token);
    const bool digit = is_digits(w);
    if (!out.empty() && !(digit && previous_digit)) out += ' ';
    out += w;
    previous_digit = digit;
  }
  return out;
}

}  // namespace spotlight::task
