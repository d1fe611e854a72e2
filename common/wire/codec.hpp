// The envelope every Spotlight message travels in (Redis values, ZeroMQ frames), and the
// helpers to write and read message bodies with named fields. msgpack stays behind this header.
//
// Layout (so that non-C++ tools can produce and read messages):
//   msgpack map {"type": str, "version": int, "body": map{str field name -> value}}
// Field values: integers, float64, bool, str, bin, and arrays of those. Unknown envelope keys
// and unknown body fields are ignored (additive changes need no new version); a field or
// envelope key given twice is malformed.
//
// Writing:
//   std::string bytes = wire::Writer("seed_task", 1).str("run_id", id).u64("seed", s).finish();
// Reading (every reader throws WireError naming the message, version and field):
//   wire::Reader r = wire::read_message(bytes);
//   r.expect("seed_task", 1, 1);
//   std::uint64_t seed = r.u64("seed");
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/wire/error.hpp"

namespace spotlight::wire {

inline constexpr std::size_t kDefaultMaxMessageBytes = std::size_t{64} << 20;  // 64 MiB
inline constexpr std::size_t kDefaultMaxElements = std::size_t{1} << 20;  // objects in a message
inline constexpr std::size_t kDefaultMaxDepth = 16;  // nesting of maps and arrays

struct DecodeOptions {
  std::size_t max_bytes = kDefaultMaxMessageBytes;
  // Bounds the memory a small hostile input can make the decoder allocate.
  std::size_t max_elements = kDefaultMaxElements;
  std::size_t max_depth = kDefaultMaxDepth;
};

struct MessageHeader {
  std::string type;
  std::int64_t version = 0;
  bool operator==(const MessageHeader&) const = default;
};

// Reads the envelope only: {type, version} for dispatch; the body is not interpreted.
// Throws WireError (kTooLarge, kNotMsgpack, kBadEnvelope).
MessageHeader peek_type(std::string_view bytes, const DecodeOptions& options = {});

class Reader;

// Parses bytes as one complete msgpack envelope. Throws WireError (kTooLarge, kNotMsgpack,
// kBadEnvelope, kWrongType for a body key that is not a string, kBadValue for a duplicate).
Reader read_message(std::string_view bytes, const DecodeOptions& options = {});

// Builds one message. Field names must be unique within a message (std::logic_error otherwise).
class Writer {
 public:
  Writer(std::string_view type, std::int64_t version);

  Writer& i64(std::string_view field, std::int64_t value);
  Writer& u64(std::string_view field, std::uint64_t value);
  Writer& f64(std::string_view field, double value);
  Writer& boolean(std::string_view field, bool value);
  Writer& str(std::string_view field, std::string_view value);
  Writer& bin(std::string_view field, std::string_view bytes);
  // float32 values as one bin of little-endian IEEE-754 floats.
  Writer& f32_bin(std::string_view field, std::span<const float> values);
  Writer& i64_list(std::string_view field, std::span<const std::int64_t> values);
  Writer& f64_list(std::string_view field, std::span<const double> values);
  Writer& bool_list(std::string_view field, const std::vector<bool>& values);
  Writer& str_list(std::string_view field, std::span<const std::string> values);

  // The encoded message (envelope + body). The Writer stays usable.
  std::string finish() const;

 private:
  void begin_field(std::string_view field);

  std::string type_;
  std::int64_t version_;
  std::string body_;  // packed key/value pairs
  std::vector<std::string> fields_;
};

// A decoded envelope with typed readers for the body fields. It refers to the bytes it was read
// from (no copies of strings or blobs): they must outlive the Reader.
class Reader {
 public:
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  ~Reader();

  const std::string& type() const { return header_.type; }
  std::int64_t version() const { return header_.version; }
  const MessageHeader& header() const { return header_; }

  // Throws kUnexpectedType (or kUnknownType for a type no decoder knows) unless type() is
  // `type`, and kUnsupportedVersion unless min_version <= version() <= max_version.
  void expect(std::string_view type, std::int64_t min_version, std::int64_t max_version) const;

  bool has(std::string_view field) const;
  // Each throws kMissingField, kWrongType, or kBadValue (e.g. a negative number for u64, an
  // integer that does not fit int64, a bin whose length is not a multiple of 4 for f32_bin).
  std::int64_t i64(std::string_view field) const;
  std::uint64_t u64(std::string_view field) const;
  double f64(std::string_view field) const;  // float32, float64 or an integer
  bool boolean(std::string_view field) const;
  std::string str(std::string_view field) const;
  std::string bin(std::string_view field) const;
  // The bin's bytes where they are, in the message this Reader was read from (no copy).
  std::string_view bin_view(std::string_view field) const;
  std::vector<float> f32_bin(std::string_view field) const;
  std::vector<std::int64_t> i64_list(std::string_view field) const;
  std::vector<double> f64_list(std::string_view field) const;
  std::vector<bool> bool_list(std::string_view field) const;
  std::vector<std::string> str_list(std::string_view field) const;

  // Throws WireError(kind) with "wire: message '<type>' v<version>: field '<field>' <what>",
  // for checks across fields in message decoders.
  [[noreturn]] void fail(WireErrorKind kind, std::string_view field, std::string_view what) const;

  struct Impl;  // opaque: the unpacked msgpack tree

 private:
  friend Reader read_message(std::string_view bytes, const DecodeOptions& options);
  Reader(MessageHeader header, std::unique_ptr<Impl> impl);

  MessageHeader header_;
  std::unique_ptr<Impl> impl_;
};

// Copies `count` float32 values, starting at value `first`, out of little-endian IEEE-754 bytes
// (an f32_bin field's bin_view) into `out`. The caller checks the range: (first + count) * 4 <=
// bytes.size().
void copy_f32_le(std::string_view bytes, std::size_t first, std::size_t count, float* out);

// True when `type` is the tag of one of the messages in messages.hpp.
bool is_known_type(std::string_view type);

// The tags of every message in messages.hpp, in declaration order.
std::span<const std::string_view> known_types();

}  // namespace spotlight::wire
