#pragma once
// What a failed call to a dependency means for the caller, from the error::ErrorCode of the error
// (common/error/error.hpp: the queue's, the stores', the Redis client's):
//   kUnavailable   unreachable or timed out: back off and retry (every queue/store operation is
//                  safe to repeat)
//   kAccessDenied  credentials or permissions refused: retrying cannot help; stop with one line
//   kOther         anything else (a bug, bad data): the caller's usual error handling

#include <exception>
#include <functional>

namespace spotlight::outage {

enum class Failure { kUnavailable, kAccessDenied, kOther };

Failure classify(const std::exception& error);

// Runs `probe` (one cheap call, e.g. a GET) at a service's start so that refused credentials stop
// it before its threads start: rethrows kAccessDenied; swallows every other failure (an
// unavailable dependency is ridden through later by the service's loop).
void fail_fast_on_access_denied(const std::function<void()>& probe);

}  // namespace spotlight::outage
