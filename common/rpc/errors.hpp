#pragma once
// Errors of the request/reply layer.
//
//   RpcError            base; also thrown for bad options and socket setup failures
//   +- RpcTimeout       no reply after every attempt (the server may be down, slow, or may have
//   |                   executed the request: handlers must be idempotent)
//   +- RpcRemoteError   the server answered with an error status (handler failure, malformed or
//   |                   oversized request); not retried
//   +- RpcConnectionClosed  the connection closed while each attempt's request was outstanding: a
//                       message above the server's transport limit (ZMQ_MAXMSGSIZE, or
//                       max_message_bytes), which it cannot answer; a reply above the client's;
//                       a failed ZMTP/CURVE handshake (wrong keys); or a server going down each
//                       time
// CURVE problems are zmqio::CurveError (common/bus/errors.hpp).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::rpc {

// Status of a reply on the wire (one byte).
enum class RpcStatus : std::uint8_t {
  kOk = 0,
  kHandlerError = 1,  // the handler threw, or returned RpcReply::error(), or a wrong reply count
  kMalformed = 2,     // wrong frame count, bad header or unknown protocol version
  kTooLarge = 3,      // payload above the server's max_request_bytes
};

std::string_view to_string(RpcStatus status);

class RpcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RpcTimeout : public RpcError {
 public:
  RpcTimeout(std::string endpoint, int attempts, std::chrono::milliseconds attempt_timeout)
      : RpcError("rpc call to " + endpoint + ": no reply after " + std::to_string(attempts) +
                 " attempt(s) of " + std::to_string(attempt_timeout.count()) + " ms"),
        endpoint_(std::move(endpoint)),
        attempts_(attempts),
        attempt_timeout_(attempt_timeout) {}
  const std::string& endpoint() const { return endpoint_; }
  int attempts() const { return attempts_; }
  std::chrono::milliseconds attempt_timeout() const { return attempt_timeout_; }

 private:
  std::string endpoint_;
  int attempts_;
  std::chrono::milliseconds attempt_timeout_;
};

class RpcRemoteError : public RpcError {
 public:
  RpcRemoteError(const std::string& endpoint, RpcStatus status, std::string message)
      : RpcError("rpc call to " + endpoint + ": " + std::string(to_string(status)) + ": " +
                 message),
        status_(status),
        message_(std::move(message)) {}
  RpcStatus status() const { return status_; }
  // The server's explanation.
  const std::string& message() const { return message_; }

 private:
  RpcStatus status_;
  std::string message_;
};

class RpcConnectionClosed : public RpcError {
 public:
  RpcConnectionClosed(const std::string& endpoint, int attempts, std::size_t request_bytes,
                      bool handshake_failed)
      : RpcError(
            "rpc call to " + endpoint +
            (handshake_failed
                 ? ": the ZMTP/CURVE handshake failed on each of " + std::to_string(attempts) +
                       " attempt(s) (a wrong server public key, CURVE on one side only, or a "
                       "client key the server does not accept)"
                 : ": the connection closed during each of " + std::to_string(attempts) +
                       " attempt(s) with a request of " + std::to_string(request_bytes) +
                       " bytes (a request above the server's message limit, max_message_size or "
                       "max_message_bytes; a reply above this client's max_message_size; or the "
                       "server going down each time)")),
        attempts_(attempts),
        request_bytes_(request_bytes),
        handshake_failed_(handshake_failed) {}
  int attempts() const { return attempts_; }
  std::size_t request_bytes() const { return request_bytes_; }
  // Every attempt's connection closed before its handshake completed.
  bool handshake_failed() const { return handshake_failed_; }

 private:
  int attempts_;
  std::size_t request_bytes_;
  bool handshake_failed_;
};

}  // namespace spotlight::rpc
