#include "common/outage/failure.hpp"

#include "common/error/error.hpp"

namespace spotlight::outage {

Failure classify(const std::exception& e) {
  switch (error::code_of(e)) {
    case error::ErrorCode::kUnavailable:
      return Failure::kUnavailable;
    case error::ErrorCode::kAccessDenied:
      return Failure::kAccessDenied;
    default:
      return Failure::kOther;
  }
}

void fail_fast_on_access_denied(const std::function<void()>& probe) {
  try {
    probe();
  } catch (const std::exception& e) {
    if (classify(e) == Failure::kAccessDenied) throw;
  }
}

}  // namespace spotlight::outage
