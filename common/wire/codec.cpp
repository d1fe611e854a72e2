#include "common/wire/codec.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <map>

#include <msgpack.hpp>

namespace spotlight::wire {
namespace {

static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559,
              "the wire format needs IEEE-754 float32");

// msgpack packer stream appending to a std::string.
struct StringSink {
  std::string* out;
  void write(const char* data, std::size_t size) { out->append(data, size); }
};
using Packer = msgpack::packer<StringSink>;

void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<std::uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

void check_length(std::string_view field, std::size_t size) {
  if (size > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("wire: field '" + std::string(field) + "' is too long for msgpack");
  }
}

std::string_view object_type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER:
      return "integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return "float";
    case msgpack::type::STR:
      return "string";
    case msgpack::type::BIN:
      return "bin";
    case msgpack::type::ARRAY:
      return "array";
    case msgpack::type::MAP:
      return "map";
    case msgpack::type::EXT:
      return "ext";
  }
  return "unknown";
}

std::string_view as_view(const msgpack::object& o) {
  return std::string_view(o.via.str.ptr, o.via.str.size);
}

// Structural pre-pass: the bytes are exactly one complete msgpack value within the depth and
// element limits. After it succeeds, unpacking allocates at most O(max_elements) objects.
class ScanVisitor : public msgpack::null_visitor {
 public:
  explicit ScanVisitor(const DecodeOptions& options) : options_(options) {}

  bool start_array(std::uint32_t n) { return open(n); }
  bool end_array() {
    --depth_;
    return true;
  }
  bool start_map(std::uint32_t n) { return open(std::size_t{2} * n); }
  bool end_map() {
    --depth_;
    return true;
  }
  void parse_error(std::size_t, std::size_t error_offset) {
    problem_ = "invalid byte at offset " + std::to_string(error_offset);
  }
  void insufficient_bytes(std::size_t, std::size_t) { problem_ = "truncated"; }

  const std::string& problem() const { return problem_; }

 private:
  bool open(std::size_t elements) {
    if (++depth_ > options_.max_depth) {
      problem_ = "nested deeper than " + std::to_string(options_.max_depth);
      return false;
    }
    elements_ += elements;
    if (elements_ > options_.max_elements) {
      problem_ = "more than " + std::to_string(options_.max_elements) + " elements";
      return false;
    }
    return true;
  }

  const DecodeOptions& options_;
  std::size_t depth_ = 0;
  std::size_t elements_ = 0;
  std::string problem_;
};

// Strings and blobs point into the input instead of being copied (the Reader documents it).
bool reference_everything(msgpack::type::object_type, std::size_t, void*) {
  return true;
}

[[noreturn]] void bad_envelope(const std::string& what) {
  throw WireError(WireErrorKind::kBadEnvelope, "wire: bad envelope: " + what);
}

struct Envelope {
  MessageHeader header;
  const msgpack::object* body = nullptr;
};

Envelope read_envelope(const msgpack::object& root) {
  if (root.type != msgpack::type::MAP) {
    bad_envelope("expected a map, got " + std::string(object_type_name(root)));
  }
  const msgpack::object* type = nullptr;
  const msgpack::object* version = nullptr;
  const msgpack::object* body = nullptr;
  for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
    const msgpack::object_kv& kv = root.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) continue;  // unknown envelope keys are ignored
    const std::string_view key = as_view(kv.key);
    const msgpack::object** slot = key == "type"      ? &type
                                   : key == "version" ? &version
                                   : key == "body"    ? &body
                                                      : nullptr;
    if (slot == nullptr) continue;
    if (*slot != nullptr) bad_envelope("key '" + std::string(key) + "' given twice");
    *slot = &kv.val;
  }
  if (type == nullptr) bad_envelope("key 'type' missing");
  if (type->type != msgpack::type::STR) {
    bad_envelope("'type' must be a string, got " + std::string(object_type_name(*type)));
  }
  Envelope env;
  env.header.type = std::string(as_view(*type));
  if (version == nullptr) bad_envelope("key 'version' missing");
  if (version->type == msgpack::type::POSITIVE_INTEGER &&
      version->via.u64 <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    env.header.version = static_cast<std::int64_t>(version->via.u64);
  } else if (version->type == msgpack::type::NEGATIVE_INTEGER) {
    env.header.version = version->via.i64;
  } else {
    bad_envelope("'version' must be an int64, got " + std::string(object_type_name(*version)));
  }
  env.body = body;
  return env;
}

msgpack::object_handle unpack_checked(std::string_view bytes, const DecodeOptions& options) {
  if (bytes.size() > options.max_bytes) {
    throw WireError(WireErrorKind::kTooLarge, "wire: message larger than limit (" +
                                                  std::to_string(bytes.size()) + " bytes > " +
                                                  std::to_string(options.max_bytes) + ")");
  }
  if (bytes.empty()) throw WireError(WireErrorKind::kNotMsgpack, "wire: not msgpack (empty)");
  try {
    ScanVisitor scan(options);
    std::size_t offset = 0;
    const bool complete = msgpack::parse(bytes.data(), bytes.size(), offset, scan);
    if (!complete) {
      throw WireError(
          WireErrorKind::kNotMsgpack,
          "wire: not msgpack (" + (scan.problem().empty() ? "malformed" : scan.problem()) + ")");
    }
    if (offset != bytes.size()) {
      throw WireError(WireErrorKind::kNotMsgpack,
                      "wire: not msgpack (" + std::to_string(bytes.size() - offset) +
                          " trailing bytes after offset " + std::to_string(offset) + ")");
    }
    const msgpack::unpack_limit limit(options.max_elements, options.max_elements,
                                      std::numeric_limits<std::uint32_t>::max(),
                                      std::numeric_limits<std::uint32_t>::max(),
                                      std::numeric_limits<std::uint32_t>::max(), options.max_depth);
    return msgpack::unpack(bytes.data(), bytes.size(), reference_everything, nullptr, limit);
  } catch (const WireError&) {
    throw;
  } catch (const std::exception& e) {
    throw WireError(WireErrorKind::kNotMsgpack,
                    std::string("wire: not msgpack (") + e.what() + ")");
  }
}

std::string field_prefix(const MessageHeader& h) {
  return "wire: message '" + h.type + "' v" + std::to_string(h.version) + ": ";
}

template <class T>
void append_le(std::string& out, T value) {
  if constexpr (std::endian::native == std::endian::big) {
    auto raw = std::bit_cast<std::array<char, sizeof(T)>>(value);
    std::reverse(raw.begin(), raw.end());
    out.append(raw.data(), raw.size());
  } else {
    out.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
}

}  // namespace

std::string_view to_string(WireErrorKind kind) {
  switch (kind) {
    case WireErrorKind::kTooLarge:
      return "too_large";
    case WireErrorKind::kNotMsgpack:
      return "not_msgpack";
    case WireErrorKind::kBadEnvelope:
      return "bad_envelope";
    case WireErrorKind::kUnknownType:
      return "unknown_type";
    case WireErrorKind::kUnexpectedType:
      return "unexpected_type";
    case WireErrorKind::kUnsupportedVersion:
      return "unsupported_version";
    case WireErrorKind::kMissingField:
      return "missing_field";
    case WireErrorKind::kWrongType:
      return "wrong_type";
    case WireErrorKind::kBadValue:
      return "bad_value";
  }
  return "unknown";
}

// --- Writer --------------------------------------------------------------------------------------

Writer::Writer(std::string_view type, std::int64_t version) : type_(type), version_(version) {}

void Writer::begin_field(std::string_view field) {
  if (std::find(fields_.begin(), fields_.end(), field) != fields_.end()) {
    throw std::logic_error("wire: message '" + type_ + "': field '" + std::string(field) +
                           "' written twice");
  }
  check_length(field, field.size());
  fields_.emplace_back(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pack_str(pk, field);
}

Writer& Writer::i64(std::string_view field, std::int64_t value) {
  begin_field(field);
  StringSink sink{&body_};
  Packer(sink).pack_int64(value);
  return *this;
}

Writer& Writer::u64(std::string_view field, std::uint64_t value) {
  begin_field(field);
  StringSink sink{&body_};
  Packer(sink).pack_uint64(value);
  return *this;
}

Writer& Writer::f64(std::string_view field, double value) {
  begin_field(field);
  StringSink sink{&body_};
  Packer(sink).pack_double(value);
  return *this;
}

Writer& Writer::boolean(std::string_view field, bool value) {
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  if (value) {
    pk.pack_true();
  } else {
    pk.pack_false();
  }
  return *this;
}

Writer& Writer::str(std::string_view field, std::string_view value) {
  check_length(field, value.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pack_str(pk, value);
  return *this;
}

Writer& Writer::bin(std::string_view field, std::string_view bytes) {
  check_length(field, bytes.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_bin(static_cast<std::uint32_t>(bytes.size()));
  pk.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
  return *this;
}

Writer& Writer::f32_bin(std::string_view field, std::span<const float> values) {
  check_length(field, values.size_bytes());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_bin(static_cast<std::uint32_t>(values.size_bytes()));
  if constexpr (std::endian::native == std::endian::little) {
    body_.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  } else {
    for (float v : values)
      append_le(body_, v);
  }
  return *this;
}

Writer& Writer::i64_list(std::string_view field, std::span<const std::int64_t> values) {
  check_length(field, values.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_array(static_cast<std::uint32_t>(values.size()));
  for (std::int64_t v : values)
    pk.pack_int64(v);
  return *this;
}

Writer& Writer::f64_list(std::string_view field, std::span<const double> values) {
  check_length(field, values.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_array(static_cast<std::uint32_t>(values.size()));
  for (double v : values)
    pk.pack_double(v);
  return *this;
}

Writer& Writer::bool_list(std::string_view field, const std::vector<bool>& values) {
  check_length(field, values.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_array(static_cast<std::uint32_t>(values.size()));
  for (bool v : values) {
    if (v) {
      pk.pack_true();
    } else {
      pk.pack_false();
    }
  }
  return *this;
}

Writer& Writer::str_list(std::string_view field, std::span<const std::string> values) {
  check_length(field, values.size());
  for (const auto& v : values)
    check_length(field, v.size());
  begin_field(field);
  StringSink sink{&body_};
  Packer pk(sink);
  pk.pack_array(static_cast<std::uint32_t>(values.size()));
  for (const auto& v : values)
    pack_str(pk, v);
  return *this;
}

std::string Writer::finish() const {
  std::string out;
  out.reserve(body_.size() + type_.size() + 48);
  StringSink sink{&out};
  Packer pk(sink);
  pk.pack_map(3);
  pack_str(pk, "type");
  pack_str(pk, type_);
  pack_str(pk, "version");
  pk.pack_int64(version_);
  pack_str(pk, "body");
  pk.pack_map(static_cast<std::uint32_t>(fields_.size()));
  out.append(body_);
  return out;
}

// --- Reader --------------------------------------------------------------------------------------

struct Reader::Impl {
  msgpack::object_handle handle;
  // Body fields by name; names and values point into the input bytes or handle's zone.
  std::map<std::string_view, const msgpack::object*, std::less<>> fields;
};

Reader::Reader(MessageHeader header, std::unique_ptr<Impl> impl)
    : header_(std::move(header)), impl_(std::move(impl)) {}
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;
Reader::~Reader() = default;

Reader read_message(std::string_view bytes, const DecodeOptions& options) {
  auto impl = std::make_unique<Reader::Impl>();
  impl->handle = unpack_checked(bytes, options);
  Envelope env = read_envelope(impl->handle.get());
  const MessageHeader& h = env.header;
  if (env.body == nullptr) {
    throw WireError(WireErrorKind::kBadEnvelope,
                    "wire: bad envelope: message '" + h.type + "' v" + std::to_string(h.version) +
                        ": key 'body' missing",
                    h.type, h.version);
  }
  if (env.body->type != msgpack::type::MAP) {
    throw WireError(
        WireErrorKind::kBadEnvelope,
        field_prefix(h) + "body must be a map, got " + std::string(object_type_name(*env.body)),
        h.type, h.version);
  }
  const msgpack::object_map& map = env.body->via.map;
  for (std::uint32_t i = 0; i < map.size; ++i) {
    const msgpack::object_kv& kv = map.ptr[i];
    if (kv.key.type != msgpack::type::STR) {
      throw WireError(WireErrorKind::kWrongType,
                      field_prefix(h) + "body key #" + std::to_string(i) +
                          " is not a string (got " + std::string(object_type_name(kv.key)) + ")",
                      h.type, h.version);
    }
    const std::string_view name = as_view(kv.key);
    if (!impl->fields.emplace(name, &kv.val).second) {
      throw WireError(WireErrorKind::kBadValue,
                      field_prefix(h) + "field '" + std::string(name) + "' given twice", h.type,
                      h.version, std::string(name));
    }
  }
  return Reader(std::move(env.header), std::move(impl));
}

MessageHeader peek_type(std::string_view bytes, const DecodeOptions& options) {
  msgpack::object_handle handle = unpack_checked(bytes, options);
  return read_envelope(handle.get()).header;
}

void Reader::expect(std::string_view type, std::int64_t min_version,
                    std::int64_t max_version) const {
  if (header_.type != type) {
    if (!is_known_type(header_.type)) {
      throw WireError(WireErrorKind::kUnknownType, "wire: unknown type '" + header_.type + "'",
                      header_.type, header_.version);
    }
    throw WireError(
        WireErrorKind::kUnexpectedType,
        "wire: expected message '" + std::string(type) + "', got '" + header_.type + "'",
        header_.type, header_.version);
  }
  if (header_.version < min_version || header_.version > max_version) {
    const std::string supported = min_version == max_version ? std::to_string(min_version)
                                                             : std::to_string(min_version) + "-" +
                                                                   std::to_string(max_version);
    throw WireError(WireErrorKind::kUnsupportedVersion,
                    "wire: message '" + header_.type + "': unsupported version " +
                        std::to_string(header_.version) + " (supported: " + supported + ")",
                    header_.type, header_.version);
  }
}

void Reader::fail(WireErrorKind kind, std::string_view field, std::string_view what) const {
  throw WireError(kind,
                  field_prefix(header_) + "field '" + std::string(field) + "' " + std::string(what),
                  header_.type, header_.version, std::string(field));
}

bool Reader::has(std::string_view field) const {
  return impl_->fields.count(field) != 0;
}

namespace {

// Element readers shared by scalar fields and list elements; `name` is "seed" or "prompts[2]".
struct Access {
  const Reader& reader;

  [[noreturn]] void wrong(std::string_view name, std::string_view expected,
                          const msgpack::object& o) const {
    reader.fail(WireErrorKind::kWrongType, name,
                "has wrong type (expected " + std::string(expected) + ", got " +
                    std::string(object_type_name(o)) + ")");
  }

  std::int64_t i64(std::string_view name, const msgpack::object& o) const {
    if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
    if (o.type == msgpack::type::POSITIVE_INTEGER) {
      if (o.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        reader.fail(WireErrorKind::kBadValue, name,
                    "out of range for int64 (" + std::to_string(o.via.u64) + ")");
      }
      return static_cast<std::int64_t>(o.via.u64);
    }
    wrong(name, "int64", o);
  }

  std::uint64_t u64(std::string_view name, const msgpack::object& o) const {
    if (o.type == msgpack::type::POSITIVE_INTEGER) return o.via.u64;
    if (o.type == msgpack::type::NEGATIVE_INTEGER) {
      reader.fail(WireErrorKind::kBadValue, name,
                  "out of range for uint64 (" + std::to_string(o.via.i64) + ")");
    }
    wrong(name, "uint64", o);
  }

  double f64(std::string_view name, const msgpack::object& o) const {
    switch (o.type) {
      case msgpack::type::FLOAT32:
      case msgpack::type::FLOAT64:
        return o.via.f64;
      case msgpack::type::POSITIVE_INTEGER:
        return static_cast<double>(o.via.u64);
      case msgpack::type::NEGATIVE_INTEGER:
        return static_cast<double>(o.via.i64);
      default:
        wrong(name, "float64", o);
    }
  }

  bool boolean(std::string_view name, const msgpack::object& o) const {
    if (o.type == msgpack::type::BOOLEAN) return o.via.boolean;
    wrong(name, "bool", o);
  }

  std::string str(std::string_view name, const msgpack::object& o) const {
    if (o.type == msgpack::type::STR) return std::string(o.via.str.ptr, o.via.str.size);
    wrong(name, "string", o);
  }

  const msgpack::object_array& array(std::string_view name, const msgpack::object& o,
                                     std::string_view expected) const {
    if (o.type != msgpack::type::ARRAY) wrong(name, expected, o);
    return o.via.array;
  }
};

std::string element_name(std::string_view field, std::uint32_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

}  // namespace

namespace {
const msgpack::object& lookup(const Reader& reader, const Reader::Impl& impl,
                              std::string_view field) {
  auto it = impl.fields.find(field);
  if (it == impl.fields.end()) reader.fail(WireErrorKind::kMissingField, field, "missing");
  return *it->second;
}
}  // namespace

std::int64_t Reader::i64(std::string_view field) const {
  return Access{*this}.i64(field, lookup(*this, *impl_, field));
}
std::uint64_t Reader::u64(std::string_view field) const {
  return Access{*this}.u64(field, lookup(*this, *impl_, field));
}
double Reader::f64(std::string_view field) const {
  return Access{*this}.f64(field, lookup(*this, *impl_, field));
}
bool Reader::boolean(std::string_view field) const {
  return Access{*this}.boolean(field, lookup(*this, *impl_, field));
}
std::string Reader::str(std::string_view field) const {
  return Access{*this}.str(field, lookup(*this, *impl_, field));
}

std::string Reader::bin(std::string_view field) const {
  const msgpack::object& o = lookup(*this, *impl_, field);
  if (o.type != msgpack::type::BIN) Access{*this}.wrong(field, "bin", o);
  return std::string(o.via.bin.ptr, o.via.bin.size);
}

std::string_view Reader::bin_view(std::string_view field) const {
  const msgpack::object& o = lookup(*this, *impl_, field);
  if (o.type != msgpack::type::BIN) Access{*this}.wrong(field, "bin", o);
  return std::string_view(o.via.bin.ptr, o.via.bin.size);
}

void copy_f32_le(std::string_view bytes, std::size_t first, std::size_t count, float* out) {
  if (count == 0) return;
  std::memcpy(out, bytes.data() + first * sizeof(float), count * sizeof(float));
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t i = 0; i < count; ++i) {
      auto raw = std::bit_cast<std::array<char, 4>>(out[i]);
      std::reverse(raw.begin(), raw.end());
      out[i] = std::bit_cast<float>(raw);
    }
  }
}

std::vector<float> Reader::f32_bin(std::string_view field) const {
  const msgpack::object& o = lookup(*this, *impl_, field);
  if (o.type != msgpack::type::BIN) Access{*this}.wrong(field, "bin of float32", o);
  const std::size_t size = o.via.bin.size;
  if (size % sizeof(float) != 0) {
    fail(WireErrorKind::kBadValue, field,
         "has " + std::to_string(size) + " bytes, not a whole number of float32");
  }
  std::vector<float> out(size / sizeof(float));
  if (size > 0) std::memcpy(out.data(), o.via.bin.ptr, size);
  if constexpr (std::endian::native == std::endian::big) {
    for (float& v : out) {
      auto raw = std::bit_cast<std::array<char, 4>>(v);
      std::reverse(raw.begin(), raw.end());
      v = std::bit_cast<float>(raw);
    }
  }
  return out;
}

std::vector<std::int64_t> Reader::i64_list(std::string_view field) const {
  const Access a{*this};
  const auto& arr = a.array(field, lookup(*this, *impl_, field), "array of int64");
  std::vector<std::int64_t> out;
  out.reserve(arr.size);
  for (std::uint32_t i = 0; i < arr.size; ++i)
    out.push_back(a.i64(element_name(field, i), arr.ptr[i]));
  return out;
}

std::vector<double> Reader::f64_list(std::string_view field) const {
  const Access a{*this};
  const auto& arr = a.array(field, lookup(*this, *impl_, field), "array of float64");
  std::vector<double> out;
  out.reserve(arr.size);
  for (std::uint32_t i = 0; i < arr.size; ++i)
    out.push_back(a.f64(element_name(field, i), arr.ptr[i]));
  return out;
}

std::vector<bool> Reader::bool_list(std::string_view field) const {
  const Access a{*this};
  const auto& arr = a.array(field, lookup(*this, *impl_, field), "array of bool");
  std::vector<bool> out;
  out.reserve(arr.size);
  for (std::uint32_t i = 0; i < arr.size; ++i) {
    out.push_back(a.boolean(element_name(field, i), arr.ptr[i]));
  }
  return out;
}

std::vector<std::string> Reader::str_list(std::string_view field) const {
  const Access a{*this};
  const auto& arr = a.array(field, lookup(*this, *impl_, field), "array of string");
  std::vector<std::string> out;
  out.reserve(arr.size);
  for (std::uint32_t i = 0; i < arr.size; ++i)
    out.push_back(a.str(element_name(field, i), arr.ptr[i]));
  return out;
}

}  // namespace spotlight::wire
