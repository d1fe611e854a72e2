#pragma once
// Errors of the ZeroMQ transport layer that common/bus and common/rpc share. A receive that times
// out is not an error: it returns std::nullopt.
//
//   SocketError    a socket could not be set up or used (bind/connect failed, bad endpoint, an
//   |              option out of range). what() names the owner ("publisher", "rpc server", ...)
//   |              and the endpoint or option.
//   +- CurveError  CURVE was requested but libzmq lacks it, or a key / key file is invalid.
//                  what() names the file or the option.

#include <stdexcept>

namespace spotlight::zmqio {

class SocketError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CurveError : public SocketError {
 public:
  using SocketError::SocketError;
};

}  // namespace spotlight::zmqio
