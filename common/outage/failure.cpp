#include "common/outage/failure.hpp"

#include "common/queue/errors.hpp"
#include "common/redis/errors.hpp"
#include "common/store/errors.hpp"

namespace spotlight::outage {

Failure classify(const std::exception& e) {
  if (dynamic_cast<const queue::QueueUnavailable*>(&e) != nullptr ||
      dynamic_cast<const store::StoreUnavailable*>(&e) != nullptr ||
      dynamic_cast<const redis::RedisUnavailable*>(&e) != nullptr) {
    return Failure::kUnavailable;
  }
  if (dynamic_cast<const queue::QueueAccessDenied*>(&e) != nullptr ||
      dynamic_cast<const store::StoreAccessDenied*>(&e) != nullptr ||
      dynamic_cast<const redis::RedisAuthError*>(&e) != nullptr) {
    return Failure::kAccessDenied;
  }
  return Failure::kOther;
}

void fail_fast_on_access_denied(const std::function<void()>& probe) {
  try {
    probe();
  } catch (const std::exception& e) {
    if (classify(e) == Failure::kAccessDenied) throw;
  }
}

}  // namespace spotlight::outage
