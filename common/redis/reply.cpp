#include "common/redis/reply.hpp"

#include <string>

#include "common/redis/errors.hpp"

namespace spotlight::redis {
namespace {

[[noreturn]] void wrong_type(const Reply& reply, const char* expected) {
  std::string what = "redis reply: expected ";
  what += expected;
  what += ", got ";
  what += reply.type_name();
  if (reply.is_error()) what += " (" + std::get<Reply::Error>(reply.value).message + ")";
  throw RedisReplyError(what);
}

}  // namespace

const std::string& Reply::as_string() const {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  wrong_type(*this, "string");
}

std::int64_t Reply::as_integer() const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return *i;
  wrong_type(*this, "integer");
}

const Reply::Array& Reply::as_array() const {
  if (const auto* a = std::get_if<Array>(&value)) return *a;
  wrong_type(*this, "array");
}

const std::string& Reply::as_status() const {
  if (const auto* s = std::get_if<Status>(&value)) return s->text;
  wrong_type(*this, "status");
}

const std::string& Reply::as_error() const {
  if (const auto* e = std::get_if<Error>(&value)) return e->message;
  wrong_type(*this, "error");
}

std::optional<std::string> Reply::as_optional_string() const {
  if (is_nil()) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  wrong_type(*this, "string or nil");
}

const std::string& Reply::as_text() const {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* s = std::get_if<Status>(&value)) return s->text;
  wrong_type(*this, "string or status");
}

const Reply::Array& Reply::as_array_or_empty() const {
  static const Array kEmpty;
  if (is_nil()) return kEmpty;
  return as_array();
}

const char* Reply::type_name() const {
  switch (value.index()) {
    case 0:
      return "nil";
    case 1:
      return "string";
    case 2:
      return "integer";
    case 3:
      return "status";
    case 4:
      return "error";
    default:
      return "array";
  }
}

}  // namespace spotlight::redis
