#pragma once
// The one base of Spotlight's typed errors: what went wrong as a code, so that code deciding what
// to do (back off, stop, report) reads the code instead of knowing every module's classes.
// Modules derive their own base from it (queue::QueueError, store::StoreError, redis::RedisError)
// and thin subclasses that fix the code (QueueUnavailable, StoreAccessDenied, ...), which catch
// sites may name.

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

// Throws the error of a module for `cause`, a failure of a dependency below it (a Redis error under
// the queue), with `context` in front of its message: Unavailable(what, timeout) or
// AccessDenied(what) when the cause's code says so, else Base(what, code).
template <typename Base, typename Unavailable, typename AccessDenied>
[[noreturn]] void throw_translated(const std::string& context, const Error& cause) {
  const std::string what = context + ": " + cause.what();
  switch (cause.code()) {
    case ErrorCode::kUnavailable:
      throw Unavailable(what, cause.is_timeout());
    case ErrorCode::kAccessDenied:
      throw AccessDenied(what);
    default:
      throw Base(what, cause.code());
  }
}

}  // namespace spotlight::error
