// Process-wide, thread-safe logging to stderr.
//
//   spotlight::log::set_component("trainer");            // once, early in main()
//   SPOTLIGHT_LOG(info) << "iteration " << k << " done";
//   spotlight::log::warn("lease {} reclaimed after {} ms", id, age_ms);
//
// Every line is written whole (never interleaved with another thread's line) as
//   2025-01-02T03:04:05.678Z INFO  trainer [tid 4242] message
// (UTC wall-clock time with milliseconds; the thread id only after set_thread_ids(true)).
//
// The level comes from the environment variable SPOTLIGHT_LOG_LEVEL (debug|info|warn|error|off,
// case-insensitive; default info), read on first use; set_level() overrides it afterwards.
// Arguments of a disabled level are not evaluated (macro) or not formatted (functions).
#pragma once

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

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

// Replaces each "{}" in fmt by the next argument (via operator<<); "{{" and "}}" are literal
// braces; arguments without a "{}" are appended, separated by spaces.
void format_into(std::ostringstream& out, std::string_view fmt, const std::string* args,
                 std::size_t count);

template <class T>
std::string to_text(const T& value) {
  std::ostringstream out;
  out << value;
  return std::move(out).str();
}

template <class... Args>
std::string format(std::string_view fmt, const Args&... args) {
  std::ostringstream out;
  if constexpr (sizeof...(Args) == 0) {
    format_into(out, fmt, nullptr, 0);
  } else {
    const std::string rendered[] = {to_text(args)...};
    format_into(out, fmt, rendered, sizeof...(Args));
  }
  return std::move(out).str();
}

}  // namespace detail

template <class... Args>
void debug(std::string_view fmt, const Args&... args) {
  if (enabled(Level::kDebug)) write(Level::kDebug, detail::format(fmt, args...));
}
template <class... Args>
void info(std::string_view fmt, const Args&... args) {
  if (enabled(Level::kInfo)) write(Level::kInfo, detail::format(fmt, args...));
}
template <class... Args>
void warn(std::string_view fmt, const Args&... args) {
  if (enabled(Level::kWarn)) write(Level::kWarn, detail::format(fmt, args...));
}
template <class... Args>
void error(std::string_view fmt, const Args&... args) {
  if (enabled(Level::kError)) write(Level::kError, detail::format(fmt, args...));
}

}  // namespace spotlight::log

// SPOTLIGHT_LOG(debug|info|warn|error) << ...; the operands are evaluated only when enabled.
#define SPOTLIGHT_LOG(lvl)                                          \
  !::spotlight::log::enabled(::spotlight::log::detail::level_##lvl) \
      ? (void)0                                                     \
      : ::spotlight::log::detail::Voidify() &                       \
            ::spotlight::log::Line(::spotlight::log::detail::level_##lvl).stream()
