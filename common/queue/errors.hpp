#pragma once
// Errors of the lease queue, independent of its transport. Each carries an error::ErrorCode
// (common/error/error.hpp); the subclasses fix it, for catch sites that name one case.
//
//   QueueError               base (error::Error)
//   +- QueueUnavailable      kUnavailable: the backing store cannot be reached (or timed out);
//   |                        nothing is known about the call's effect. Back off and retry: every
//   |                        operation is safe to retry (enqueue and complete are idempotent per
//   |                        task id).
//   +- QueueAccessDenied     kAccessDenied: the backing store refused our credentials or
//   |                        permissions: retrying will not help (fix the configuration, restart).
//   +- InvalidQueueOptions   kInvalid: LeaseQueueOptions rejected; names the field.

#include <string>

#include "common/error/error.hpp"

namespace spotlight::queue {

class QueueError : public error::Error {
 public:
  using error::Error::Error;
};

using QueueUnavailable = error::Unavailable<QueueError>;
using QueueAccessDenied = error::AccessDenied<QueueError>;

class InvalidQueueOptions : public QueueError {
 public:
  InvalidQueueOptions(const std::string& field, const std::string& why)
      : QueueError("LeaseQueueOptions." + field + ": " + why, error::ErrorCode::kInvalid),
        field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Throws the QueueError for `cause`, a failure of the backing store, with `context` in front of
// its message: QueueUnavailable or QueueAccessDenied when its code says so.
[[noreturn]] inline void throw_queue_error(const std::string& context, const error::Error& cause) {
  error::throw_translated<QueueError>(context, cause);
}

}  // namespace spotlight::queue
