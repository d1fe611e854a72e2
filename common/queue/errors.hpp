#pragma once
// Errors of the lease queue, independent of its transport.
//
//   QueueError               base
//   +- QueueUnavailable      the backing store cannot be reached (or timed out); nothing is known
//   |                        about the call's effect. Back off and retry: every operation is safe
//   |                        to retry (enqueue and complete are idempotent per task id).
//   +- QueueAccessDenied     the backing store refused our credentials or permissions: retrying
//   |                        will not help (fix the configuration and restart).
//   +- InvalidQueueOptions   LeaseQueueOptions rejected; names the field.

#include <stdexcept>
#include <string>

namespace spotlight::queue {

class QueueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class QueueUnavailable : public QueueError {
 public:
  QueueUnavailable(const std::string& what, bool timeout) : QueueError(what), timeout_(timeout) {}
  bool is_timeout() const { return timeout_; }

 private:
  bool timeout_;
};

class QueueAccessDenied : public QueueError {
 public:
  using QueueError::QueueError;
};

class InvalidQueueOptions : public QueueError {
 public:
  InvalidQueueOptions(const std::string& field, const std::string& why)
      : QueueError("LeaseQueueOptions." + field + ": " + why), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace spotlight::queue
