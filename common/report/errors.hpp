#pragma once
// A report that cannot be built: an invalid page (a bad section id, a figure that is not a PNG) or
// a JSON description with a wrong field, named in the message ("sections[1].blocks[0].x: ...").

#include <stdexcept>

namespace spotlight::report {

class ReportError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace spotlight::report
