// Process-wide, thread-safe logging to stderr.
//
//   spotlight::log::set_component("trainer");            // once, early in main()
//   SPOTLIGHT_LOG(info) << "iteration " << k << " done";
//   spotlight::log::warn("lease {} reclaimed after {} ms", id, age_ms);
//   spotlight::log::info("reward {:.3f}", mean);          // fmt's format syntax, checked at
//   compile time
//
// Every line is written whole (never interleaved with another thread's line) as
//   2025-01-02T03:04:05.678Z INFO  trainer [tid 4242] message
// (UTC wall-clock time with milliseconds; the thread id only after set_thread_ids(true)).
//
// The level comes from the environment variable SPOTLIGHT_LOG_LEVEL (debug|info|warn|error|off,
// case-insensitive; default info), read on first use; set_level() overrides it afterwards.
// Arguments of a disabled level are not evaluated (macro) or not formatted (functions).
// Formatting is fmt's (libfmt): a format string with more or fewer "{}" than arguments, or a spec
// that does not fit its argument, does not compile. Types fmt does not know are written with
// operator<<, and a plain "{}" prints floating point and bools as operator<< does.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/core.h>

namespace spotlight::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

inline constexpr const char* kLevelEnvVar = "SPOTLIGHT_LOG_LEVEL";

// "debug", "info", "warn", "error", "off".
std::string_view to_string(Level level);
// Case-insensitive; also accepts "warning". std::nullopt for anything else.
std::optional<Level> parse_level(std::string_view text);

// Thread-safe. A message is written when its level >= level() and level() != kOff.
void set_level(Level level);
Level level();
bool enabled(Level level);

// The component name shown on every line (e.g. "trainer", "explorer-3"). Thread-safe.
void set_component(std::string name);
std::string component();

// Show the OS thread id on every line. Off by default.
void set_thread_ids(bool on);

// Receives every enabled, formatted line (without the trailing newline). The default sink
// (also restored by passing nullptr) writes the line plus '\n' to stderr with one write.
// Sinks are called under the logger's lock: one line at a time, must not log themselves.
using Sink = std::function<void(Level level, std::string_view line)>;
// Returns the previous sink (nullptr when it was the default).
Sink set_sink(Sink sink);

// Formats the prefix and hands the line to the sink. Does not check the level.
void write(Level level, std::string_view message);

// Collects one message from operator<< and writes it when destroyed.
class Line {
 public:
  explicit Line(Level level) : level_(level) {}
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  // Never throws: a line that cannot be written is dropped.
  ~Line();
  std::ostream& stream() { return stream_; }

 private:
  Level level_;
  std::ostringstream stream_;
};

namespace detail {

inline constexpr Level level_debug = Level::kDebug;
inline constexpr Level level_info = Level::kInfo;
inline constexpr Level level_warn = Level::kWarn;
inline constexpr Level level_error = Level::kError;

// Lets the SPOTLIGHT_LOG macro be one expression (safe inside if/else without braces).
struct Voidify {
  void operator&(std::ostream&) {}
};

template <class T>
std::string to_text(const T& value) {
  std::ostringstream out;
  out << value;
  return std::move(out).str();
}

// A double that prints like operator<< ("%g": 6 significant digits) under a plain "{}" and by
// fmt's rules under any format spec ("{:.3f}", "{:>8}").
struct Real {
  double value;
};

// How an argument reaches fmt: numbers and strings as themselves, floating point as Real, bools
// and everything fmt cannot format (enums, paths, types with only operator<<) as the text
// operator<< writes, as the formatter did before fmt.
template <class T>
inline constexpr bool kAsText =
    std::is_same_v<T, bool> || std::is_enum_v<T> || !fmt::is_formattable<T>::value;

template <class T>
using Arg = std::conditional_t<std::is_floating_point_v<T>, Real,
                               std::conditional_t<kAsText<T>, std::string, const T&>>;

template <class T>
decltype(auto) arg(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return Real{static_cast<double>(value)};
  } else if constexpr (kAsText<T>) {
    return to_text(value);
  } else {
    return (value);
  }
}

// The number of replacement fields in a format string ("{{" and "}}" are literal braces).
consteval std::size_t count_fields(std::string_view text) {
  std::size_t fields = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      ++i;
    } else if (text[i] == '{') {
      ++fields;
    }
  }
  return fields;
}

void arguments_and_placeholders_differ();  // not constexpr: calling it fails the build

// A format string checked at compile time by fmt (specs against argument types) and here (one
// argument per "{}": neither dropped nor missing).
template <class... Args>
struct FormatString {
  template <class S>
  requires std::convertible_to<const S&, std::string_view>
  consteval FormatString(const S& text) : checked(text) {
    if (count_fields(std::string_view(text)) != sizeof...(Args)) {
      arguments_and_placeholders_differ();
    }
  }
  fmt::format_string<Arg<Args>...> checked;
};

}  // namespace detail

// fmt's format syntax ({} {:.3f} {:>8} {{ }}) with operator<< for types fmt does not know; the
// string is checked at compile time. Throws nothing for a valid call.
template <class... Args>
std::string format(detail::FormatString<std::type_identity_t<Args>...> text, const Args&... args) {
  return fmt::vformat(text.checked, fmt::make_format_args(detail::arg(args)...));
}

template <class... Args>
void debug(detail::FormatString<std::type_identity_t<Args>...> text, const Args&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, format<Args...>(text, args...));
}
template <class... Args>
void info(detail::FormatString<std::type_identity_t<Args>...> text, const Args&... args) {
  if (enabled(Level::kInfo)) write(Level::kInfo, format<Args...>(text, args...));
}
template <class... Args>
void warn(detail::FormatString<std::type_identity_t<Args>...> text, const Args&... args) {
  if (enabled(Level::kWarn)) write(Level::kWarn, format<Args...>(text, args...));
}
template <class... Args>
void error(detail::FormatString<std::type_identity_t<Args>...> text, const Args&... args) {
  if (enabled(Level::kError)) write(Level::kError, format<Args...>(text, args...));
}

}  // namespace spotlight::log

// SPOTLIGHT_LOG(debug|info|warn|error) << ...; the operands are evaluated only when enabled.
#define SPOTLIGHT_LOG(lvl)                                                             \
  !::spotlight::log::enabled(::spotlight::log::detail::level_##lvl)                    \
      ? (void)0                                                                        \
      : ::spotlight::log::detail::Voidify() & /* NOLINT(bugprone-macro-parentheses) */ \
            ::spotlight::log::Line(::spotlight::log::detail::level_##lvl).stream()

template <>
struct fmt::formatter<spotlight::log::detail::Real> : fmt::formatter<double> {
  bool plain = true;
  constexpr auto parse(fmt::format_parse_context& ctx) {
    plain = ctx.begin() == ctx.end() || *ctx.begin() == '}';
    return fmt::formatter<double>::parse(ctx);
  }
  // Defined in log.cpp (fmt/format.h stays out of this header).
  fmt::format_context::iterator format(spotlight::log::detail::Real real,
                                       fmt::format_context& ctx) const;
};
