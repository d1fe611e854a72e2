#pragma once
// Errors of common/image: bad arguments (a size that does not match its pixels) and PNG bytes that
// do not decode. The message says what is wrong.

#include <stdexcept>

namespace spotlight::image {

class ImageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace spotlight::image
