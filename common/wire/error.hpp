// The one error of the wire layer: a message that cannot be decoded.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::wire {

enum class WireErrorKind {
  kTooLarge,            // more bytes than DecodeOptions::max_bytes
  kNotMsgpack,          // not one complete msgpack value, trailing bytes, or over the limits
  kBadEnvelope,         // not a {type, version, body} map
  kUnknownType,         // a type tag no decoder here knows
  kUnexpectedType,      // a known type, but not the one asked for
  kUnsupportedVersion,  // a known type at a schema version this build cannot read
  kMissingField,        // a required body field is absent
  kWrongType,           // a body field has another msgpack type than its schema says
  kBadValue,            // right type, impossible value (out of range, inconsistent sizes, ...)
};

// Stable snake_case name, for metric labels: "too_large", "not_msgpack", ...
std::string_view to_string(WireErrorKind kind);

// Thrown by every decoder for every malformed input; decoders never crash or throw anything
// else. The message names the problem, e.g.
//   wire: message 'seed_task' v1: field 'seed' missing
//   wire: message 'seed_task' v1: field 'seed' has wrong type (expected uint64, got string)
//   wire: unknown type 'foo'
//   wire: message 'seed_task': unsupported version 3 (supported: 1)
//   wire: not msgpack (truncated)
//   wire: message larger than limit (70000000 bytes > 67108864)
class WireError : public std::runtime_error {
 public:
  WireError(WireErrorKind kind, const std::string& message, std::string type = {},
            std::int64_t version = 0, std::string field = {})
      : std::runtime_error(message),
        kind_(kind),
        type_(std::move(type)),
        version_(version),
        field_(std::move(field)) {}

  WireErrorKind kind() const { return kind_; }
  // The message type tag, when the envelope could be read; else empty.
  const std::string& type() const { return type_; }
  // The schema version, when the envelope could be read; else 0.
  std::int64_t version() const { return version_; }
  // The body field concerned ("seed", "prompts[2]"); empty when not about one field.
  const std::string& field() const { return field_; }

 private:
  WireErrorKind kind_;
  std::string type_;
  std::int64_t version_;
  std::string field_;
};

}  // namespace spotlight::wire
