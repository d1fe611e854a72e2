// The field lists of the wire messages: each message names its body fields once, in wire order,
// and encode_fields / decode_fields write and read them.
//
//   struct Heartbeat {
//     std::string explorer_id{};
//     std::int64_t tasks = 0;
//     static constexpr auto fields() {
//       return std::tuple{field("explorer_id", &Heartbeat::explorer_id),
//                         field("tasks", &Heartbeat::tasks).check(at_least<0>)};
//     }
//   };
//
// The member's type gives the wire encoding (table below); as_bin() writes a std::string as bin.
//   std::string -> str            std::int64_t -> int          std::uint64_t -> uint
//   double -> float64             bool -> bool                 std::vector<float> -> f32_bin
//   std::vector<std::int64_t>, std::vector<double>, std::vector<bool>, std::vector<std::string>
//     -> arrays                   an enum with WireEnum<E> -> str (one of its names)
//   std::string_view -> bin, read in place (Reader::bin_view; decode only)
//
// Versions: since(v) says the field first appeared in schema version v. encode_fields(m, version)
// writes only the fields of `version`; decode_fields leaves the fields of later versions than the
// message's at their default member initialiser.
//
// Optional groups: optional(g) puts a field into group g (> 0). The group is written when its
// first field is not empty (differs from its type's T{}), and read when any of its fields is
// present; then all of them must be.
//
// Checks: check(fn) calls fn(reader, name, value) right after the field is read; fn throws
// through Reader::fail. Checks across fields belong to the message's decoder, after decode_fields.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/wire/codec.hpp"

namespace spotlight::wire {

// Specialise for an enum sent as one of its names:
//   template <> struct WireEnum<Colour> {
//     static constexpr std::array kNames = {std::pair{Colour::kRed, std::string_view("red")}};
//   };
template <class E>
struct WireEnum;

template <class M, class T>
struct Field {
  using Message = M;
  using Value = T;
  using Check = void (*)(const Reader& reader, std::string_view name, const T& value);

  std::string_view name;
  T M::*member;
  bool bin = false;                // a std::string written as bin, not str
  std::int64_t first_version = 1;  // the schema version the field appeared in
  int optional_group = 0;          // 0: required
  Check validator = nullptr;

  constexpr Field as_bin() const {
    Field f = *this;
    f.bin = true;
    return f;
  }
  constexpr Field since(std::int64_t version) const {
    Field f = *this;
    f.first_version = version;
    return f;
  }
  constexpr Field optional(int group) const {
    Field f = *this;
    f.optional_group = group;
    return f;
  }
  constexpr Field check(Check fn) const {
    Field f = *this;
    f.validator = fn;
    return f;
  }
};

template <class M, class T>
constexpr Field<M, T> field(std::string_view name, T M::*member) {
  return Field<M, T>{.name = name, .member = member};
}

// --- checks for Field::check -------------------------------------------------------------------

// "must be >= kMin, got <value>"
template <std::int64_t kMin>
void at_least(const Reader& reader, std::string_view name, const std::int64_t& value) {
  if (value < kMin) {
    reader.fail(WireErrorKind::kBadValue, name,
                "must be >= " + std::to_string(kMin) + ", got " + std::to_string(value));
  }
}

inline void positive_finite(const Reader& reader, std::string_view name, const double& value) {
  if (!(value > 0) || !std::isfinite(value)) {
    reader.fail(WireErrorKind::kBadValue, name, "must be finite and > 0");
  }
}

// Two finite numbers [lo, hi] with lo < hi.
inline void finite_interval(const Reader& reader, std::string_view name,
                            const std::vector<double>& value) {
  if (value.size() != 2 || !std::isfinite(value[0]) || !std::isfinite(value[1]) ||
      !(value[0] < value[1])) {
    reader.fail(WireErrorKind::kBadValue, name, "must be two finite numbers [lo, hi] with lo < hi");
  }
}

// One of the given words: "must be 'a', 'b' or 'c', got '<value>'".
template <const std::string_view&... kWords>
void one_of(const Reader& reader, std::string_view name, const std::string& value) {
  if (((value == kWords) || ...)) return;
  const std::array<std::string_view, sizeof...(kWords)> words = {kWords...};
  std::string what = "must be ";
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) what += i + 1 == words.size() ? " or " : ", ";
    what += "'" + std::string(words[i]) + "'";
  }
  reader.fail(WireErrorKind::kBadValue, name, what + ", got '" + value + "'");
}

namespace fields_detail {

// The Writer and Reader members that carry a value of type T.
template <auto kWrite, auto kRead>
struct Encoding {
  static constexpr auto kWriter = kWrite;
  static constexpr auto kReader = kRead;
};
template <class T>
struct NaturalEncoding;  // none: the member's type has no wire encoding
template <>
struct NaturalEncoding<std::string> : Encoding<&Writer::str, &Reader::str> {};
template <>
struct NaturalEncoding<std::string_view> : Encoding<&Writer::bin, &Reader::bin_view> {};
template <>
struct NaturalEncoding<std::int64_t> : Encoding<&Writer::i64, &Reader::i64> {};
template <>
struct NaturalEncoding<std::uint64_t> : Encoding<&Writer::u64, &Reader::u64> {};
template <>
struct NaturalEncoding<double> : Encoding<&Writer::f64, &Reader::f64> {};
template <>
struct NaturalEncoding<bool> : Encoding<&Writer::boolean, &Reader::boolean> {};
template <>
struct NaturalEncoding<std::vector<float>> : Encoding<&Writer::f32_bin, &Reader::f32_bin> {};
template <>
struct NaturalEncoding<std::vector<std::int64_t>> : Encoding<&Writer::i64_list, &Reader::i64_list> {
};
template <>
struct NaturalEncoding<std::vector<double>> : Encoding<&Writer::f64_list, &Reader::f64_list> {};
template <>
struct NaturalEncoding<std::vector<bool>> : Encoding<&Writer::bool_list, &Reader::bool_list> {};
template <>
struct NaturalEncoding<std::vector<std::string>> : Encoding<&Writer::str_list, &Reader::str_list> {
};
using BinEncoding = Encoding<&Writer::bin, &Reader::bin>;  // Field::as_bin()

template <class T>
concept WireEnumType = std::is_enum_v<T> && requires {
  WireEnum<T>::kNames;
};

template <class M, class T>
void write_value(Writer& w, const Field<M, T>& f, const T& v) {
  if constexpr (WireEnumType<T>) {
    for (const auto& [value, text] : WireEnum<T>::kNames) {
      if (value == v) {
        w.str(f.name, text);
        return;
      }
    }
    w.str(f.name, "unknown");
  } else if constexpr (std::is_same_v<T, std::string>) {
    (w.*(f.bin ? BinEncoding::kWriter : NaturalEncoding<T>::kWriter))(f.name, v);
  } else {
    (w.*NaturalEncoding<T>::kWriter)(f.name, v);
  }
}

template <class M, class T>
T read_value(const Reader& r, const Field<M, T>& f) {
  if constexpr (WireEnumType<T>) {
    const std::string text = r.str(f.name);
    std::string names;
    for (const auto& [value, name] : WireEnum<T>::kNames) {
      if (name == text) return value;
      names += (names.empty() ? "" : "|") + std::string(name);
    }
    r.fail(WireErrorKind::kBadValue, f.name, "must be one of " + names + ", got '" + text + "'");
  } else if constexpr (std::is_same_v<T, std::string>) {
    return (r.*(f.bin ? BinEncoding::kReader : NaturalEncoding<T>::kReader))(f.name);
  } else {
    return (r.*NaturalEncoding<T>::kReader)(f.name);
  }
}

// Whether optional group `group` is in `m`: its first field is not empty (not T{}).
template <class M, class Fields>
bool group_written(const M& m, int group, const Fields& fields) {
  bool found = false;
  bool written = false;
  std::apply(
      [&](const auto&... f) {
        const auto visit = [&](const auto& one) {
          if (found || one.optional_group != group) return;
          found = true;
          using T = std::decay_t<decltype(m.*one.member)>;
          written = !(m.*one.member == T{});
        };
        (visit(f), ...);
      },
      fields);
  return written;
}

// Whether any field of optional group `group` is in the message `r` reads.
template <class Fields>
bool group_present(const Reader& r, int group, const Fields& fields) {
  return std::apply(
      [&](const auto&... f) { return ((f.optional_group == group && r.has(f.name)) || ...); },
      fields);
}

}  // namespace fields_detail

// The message `m` as schema version `version` of M::kType: the fields of M::fields() in order,
// leaving out the fields of later versions and the optional groups that are empty.
template <class M>
std::string encode_fields(const M& m, std::int64_t version = M::kVersion) {
  Writer w(M::kType, version);
  const auto fields = M::fields();
  std::apply(
      [&](const auto&... f) {
        const auto write = [&](const auto& one) {
          if (one.first_version > version) return;
          if (one.optional_group != 0 &&
              !fields_detail::group_written(m, one.optional_group, fields)) {
            return;
          }
          fields_detail::write_value(w, one, m.*one.member);
        };
        (write(f), ...);
      },
      fields);
  return w.finish();
}

// Checks r's type and version (r.expect(M::kType, 1, M::kVersion)), then reads the fields of
// M::fields() in order, each followed by its check. Throws WireError as Reader and the checks do.
template <class M>
M decode_fields(const Reader& r) {
  r.expect(M::kType, 1, M::kVersion);
  M m{};
  const auto fields = M::fields();
  std::apply(
      [&](const auto&... f) {
        const auto read = [&](const auto& one) {
          if (one.first_version > r.version()) return;
          if (one.optional_group != 0 &&
              !fields_detail::group_present(r, one.optional_group, fields)) {
            return;
          }
          m.*one.member = fields_detail::read_value(r, one);
          if (one.validator != nullptr) one.validator(r, one.name, m.*one.member);
        };
        (read(f), ...);
      },
      fields);
  return m;
}

}  // namespace spotlight::wire
