#pragma once
// Errors of the Redis client. Every failure of a command is one of these; absence (a nil reply)
// is not an error. Each carries an error::ErrorCode (common/error/error.hpp): kUnavailable for
// RedisUnavailable, kAccessDenied for RedisAuthError, kOther for the rest.
//
//   RedisError                 base (error::Error); catch this to handle "anything went wrong
//   |                          talking to Redis"
//   +- RedisUnavailable        no usable connection: refused, reset, closed, timed out, or a
//   |                          server not ready (-LOADING after a restart, -BUSY, -MASTERDOWN,
//   |                          -TRYAGAIN, -CLUSTERDOWN). The connection is dropped; the next
//   |                          command reconnects. A command that failed this way may or may not
//   |                          have been executed by the server.
//   +- RedisCommandError       the server answered with an error reply (-ERR, -NOGROUP, ...).
//   |  +- RedisAuthError       the server refused who we are or what we may do: AUTH failed
//   |                          (WRONGPASS, no password set), -NOAUTH (a password is required),
//   |                          -NOPERM (the ACL user may not run it). Retrying will not help.
//   +- RedisReplyError         the reply had another shape than the caller expected.

#include <string>
#include <utility>

#include "common/error/error.hpp"

namespace spotlight::redis {

class RedisError : public error::Error {
 public:
  using error::Error::Error;
};

// RedisUnavailable(what, timeout): timeout when the connect or the command ran past its timeout
// (the server may be alive but slow); is_timeout() returns it.
using RedisUnavailable = error::Unavailable<RedisError>;

class RedisCommandError : public RedisError {
 public:
  RedisCommandError(std::string command, std::string message,
                    error::ErrorCode code = error::ErrorCode::kOther)
      : RedisError("redis " + command + ": " + message, code),
        command_(std::move(command)),
        message_(std::move(message)) {}
  // The command name (first argv element), e.g. "XREADGROUP".
  const std::string& command() const { return command_; }
  // The server's error text, e.g. "NOGROUP No such key 'q:tasks' or consumer group ...".
  const std::string& message() const { return message_; }
  // The error code: the first word of the message ("ERR", "NOGROUP", "NOSCRIPT", ...).
  std::string code() const { return message_.substr(0, message_.find(' ')); }

 private:
  std::string command_;
  std::string message_;
};

class RedisAuthError : public RedisCommandError {
 public:
  RedisAuthError(std::string command, std::string message)
      : RedisCommandError(std::move(command), std::move(message), error::ErrorCode::kAccessDenied) {
  }
};

// True for the error codes of RedisAuthError: NOAUTH, WRONGPASS, NOPERM.
inline bool is_auth_error_code(const std::string& code) {
  return code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM";
}

class RedisReplyError : public RedisError {
 public:
  using RedisError::RedisError;
};

}  // namespace spotlight::redis
