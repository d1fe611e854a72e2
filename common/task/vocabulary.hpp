#pragma once
// The fixed word list of the prompt encoder. Ids never change: 0 <pad>, 1 <unk>, then the words
// of every prompt the task can produce. A digit string is split into one token per digit
// ("4821" -> 4 8 2 1), so any number is expressible.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace spotlight::task {

class Vocabulary {
 public:
  static constexpr int64_t kPadId = 0;
  static constexpr int64_t kUnkId = 1;
  // Every prompt of the task encodes to at most this many tokens (before padding).
  static constexpr int kMaxPromptTokens = 8;

  Vocabulary();

  // Lower-cases `text`, splits it on whitespace, maps each word to its id (digit strings to one id
  // per digit, unknown words to kUnkId), then truncates or pads with kPadId to exactly max_len
  // ids. Throws TaskError if max_len < 1.
  std::vector<int64_t> encode(std::string_view text, int max_len) const;

  // Inverse of encode for known words: skips padding, joins words with single spaces and
  // consecutive digit tokens into one number. Ids out of range decode as "<unk>".
  std::string decode(const std::vector<int64_t>& ids) const;

  // Id of one word (lower case), kUnkId if unknown.
  int64_t id(std::string_view word) const;
  // Word of an id; "<unk>" if out of range.
  const std::string& word(int64_t id) const;

  int64_t size() const { return static_cast<int64_t>(words_.size()); }

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace spotlight::task
