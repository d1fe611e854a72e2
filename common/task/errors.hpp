#pragma once
// Errors of the embedded task. Thrown for bad input (invalid options, a malformed prompt, an image
// of the wrong size); the message names the offending field. A prompt text that does not parse is
// not an error: parse_prompt() returns std::nullopt.

#include <stdexcept>

namespace spotlight::task {

class TaskError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace spotlight::task
