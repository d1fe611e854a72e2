// Routes raw messages to typed handlers by their type tag, decoding each message once.
//
//   wire::Dispatcher d;
//   d.on<wire::WeightsNotice>([&](wire::WeightsNotice n) { store.fetch(n); });
//   d.on<wire::IterationEvent>([&](wire::IterationEvent e) { schedule(e); });
//   try { d.dispatch(frame); } catch (const wire::WireError& e) { rejected.Increment(); ... }
//
// Not thread-safe while handlers are being registered; dispatch() may run concurrently once
// registration is done (it only reads the table; handlers must be thread-safe themselves).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "common/wire/codec.hpp"

namespace spotlight::wire {

class Dispatcher {
 public:
  // Message is one of messages.hpp (has kType and decode_body). A second handler for the same
  // type replaces the first.
  template <class Message, class Handler>
  Dispatcher& on(Handler handler) {
    handlers_[std::string(Message::kType)] = [h = std::move(handler)](const Reader& reader) {
      h(Message::decode_body(reader));
    };
    return *this;
  }

  // Decodes `bytes` and calls the handler for its type; returns the header.
  // Equivalent to:
  //   Reader r = read_message(bytes, options);        // WireError when malformed
  //   if (no handler for r.type()) throw WireError(is_known_type(r.type()) ? kUnexpectedType
  //                                                                       : kUnknownType);
  //   handler(Message::decode_body(r));               // WireError when the body is malformed
  // Exceptions thrown by the handler propagate unchanged.
  MessageHeader dispatch(std::string_view bytes, const DecodeOptions& options = {}) const;

  bool handles(std::string_view type) const { return handlers_.count(type) != 0; }

 private:
  std::map<std::string, std::function<void(const Reader&)>, std::less<>> handlers_;
};

}  // namespace spotlight::wire
