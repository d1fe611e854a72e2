#pragma once
// Errors of the notice bus. A receive that times out is not an error: it returns std::nullopt.
//
//   BusError              = zmqio::SocketError (common/zmq/errors.hpp): a socket could not be set
//   |                     up or used (bind/connect failed, bad endpoint, the publisher's I/O
//   |                     thread died). what() names the endpoint.
//   +- CurveError         = zmqio::CurveError: CURVE requested but unavailable, or a bad key.
//   +- MessageTooLarge    a frame to publish exceeds the configured max_message_size.
//   +- InvalidTopic       empty topic, or one starting with byte 0xFF (reserved for control;
//                         UTF-8 never contains it).

#include <cstddef>
#include <string>

#include "common/zmq/errors.hpp"

namespace spotlight::bus {

using BusError = zmqio::SocketError;
using CurveError = zmqio::CurveError;

class MessageTooLarge : public BusError {
 public:
  MessageTooLarge(const std::string& what, std::size_t size, std::size_t limit)
      : BusError(what), size_(size), limit_(limit) {}
  std::size_t size() const { return size_; }
  std::size_t limit() const { return limit_; }

 private:
  std::size_t size_;
  std::size_t limit_;
};

class InvalidTopic : public BusError {
 public:
  using BusError::BusError;
};

}  // namespace spotlight::bus
