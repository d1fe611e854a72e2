#pragma once
// The one base of Spotlight's typed errors: what went wrong as a code, so that code deciding what
// to do (back off, stop, report) reads the code instead of knowing every module's classes.
// Modules derive their own base from it (queue::QueueError, store::StoreError, redis::RedisError);
// Unavailable<Base> and AccessDenied<Base> (QueueUnavailable, StoreAccessDenied, ...) fix the
// code, for catch sites that name one case.

#include <exception>
#include <stdexcept>
#include <string>

namespace spotlight::error {

enum class ErrorCode {
  kOther,         // anything else (a bug, an unexpected reply): the caller's usual handling
  kUnavailable,   // a dependency cannot be reached or timed out; nothing is known about the call's
                  // effect: back off and retry
  kAccessDenied,  // a dependency refused our credentials or permissions: retrying cannot help
  kInvalid,       // options or input rejected before anything was done; the message names the field
  kConflict,      // the request contradicts what is stored (a version published with other content)
  kCorrupt,       // stored data disagrees with itself or its signature
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorCode code = ErrorCode::kOther, bool timeout = false)
      : std::runtime_error(what), code_(code), timeout_(timeout) {}
  ErrorCode code() const noexcept { return code_; }
  // kUnavailable only: true when the call ran past its timeout (the dependency may be alive but
  // slow) rather than being refused.
  bool is_timeout() const noexcept { return timeout_; }

 private:
  ErrorCode code_;
  bool timeout_;
};

// The code of `e`: its own for an Error, kOther for any other exception.
inline ErrorCode code_of(const std::exception& e) noexcept {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error != nullptr ? error->code() : ErrorCode::kOther;
}

// A module's error class `Base` (derived from Error, constructible as Base(what, code, timeout))
// with the code fixed, for catch sites that name one case:
//   using QueueUnavailable = error::Unavailable<QueueError>;
template <typename Base>
class Unavailable : public Base {
 public:
  Unavailable(const std::string& what, bool timeout)
      : Base(what, ErrorCode::kUnavailable, timeout) {}
};

template <typename Base>
class AccessDenied : public Base {
 public:
  explicit AccessDenied(const std::string& what) : Base(what, ErrorCode::kAccessDenied) {}
};

// Throws the error of a module for `cause`, a failure of a dependency below it (a Redis error under
// the queue), with `context` in front of its message: Unavailable<Base> or AccessDenied<Base> when
// the cause's code says so, else Base with the cause's code.
template <typename Base>
[[noreturn]] void throw_translated(const std::string& context, const Error& cause) {
  const std::string what = context + ": " + cause.what();
  switch (cause.code()) {
    case ErrorCode::kUnavailable:
      throw Unavailable<Base>(what, cause.is_timeout());
    case ErrorCode::kAccessDenied:
      throw AccessDenied<Base>(what);
    default:
      throw Base(what, cause.code());
  }
}

}  // namespace spotlight::error
