#pragma once
// A Redis reply (RESP2) as a small value type. Strings are binary-safe byte strings.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace spotlight::redis {

struct Reply {
  struct Nil {
    bool operator==(const Nil&) const = default;
  };
  struct Status {  // simple string reply, e.g. "OK", "PONG"
    std::string text;
    bool operator==(const Status&) const = default;
  };
  struct Error {  // an error nested in an array (pipelines, EXEC, scripts); top level throws
    std::string message;
    bool operator==(const Error&) const = default;
  };
  using Array = std::vector<Reply>;

  std::variant<Nil, std::string, std::int64_t, Status, Error, Array> value;

  bool is_nil() const { return std::holds_alternative<Nil>(value); }
  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_integer() const { return std::holds_alternative<std::int64_t>(value); }
  bool is_status() const { return std::holds_alternative<Status>(value); }
  bool is_error() const { return std::holds_alternative<Error>(value); }
  bool is_array() const { return std::holds_alternative<Array>(value); }

  // Typed accessors; each throws RedisReplyError naming the expected and actual type.
  const std::string& as_string() const;
  std::int64_t as_integer() const;
  const Array& as_array() const;
  const std::string& as_status() const;
  const std::string& as_error() const;
  // nil -> nullopt, bulk string -> its bytes, anything else throws RedisReplyError.
  std::optional<std::string> as_optional_string() const;
  // Bulk string or status text (some commands answer either).
  const std::string& as_text() const;
  // Nil as an empty array (e.g. a blocking XREADGROUP that timed out).
  const Array& as_array_or_empty() const;

  // "nil", "string", "integer", "status", "error" or "array".
  const char* type_name() const;

  bool operator==(const Reply&) const = default;
};

}  // namespace spotlight::redis
