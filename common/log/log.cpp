#include "common/log/log.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include <fmt/format.h>
#include <unistd.h>

namespace spotlight::log {
namespace {

struct State {
  std::mutex mutex;  // guards component, sink and the write itself
  std::string component;
  Sink sink;
  std::atomic<int> level{static_cast<int>(Level::kInfo)};
  std::atomic<bool> thread_ids{false};
};

State& state() {
  static State* s = [] {
    auto* fresh = new State;  // leaked on purpose: usable from static destructors
    const char* env = std::getenv(kLevelEnvVar);
    if (env != nullptr && *env != '\0') {
      if (auto parsed = parse_level(env)) {
        fresh->level.store(static_cast<int>(*parsed));
      } else {
        std::fprintf(stderr,
                     "log: ignoring %s='%s' (expected debug|info|warn|error|off), using info\n",
                     kLevelEnvVar, env);
      }
    }
    return fresh;
  }();
  return *s;
}

// "2025-01-02T03:04:05.678Z"
void append_timestamp(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[40];
  const int n = std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
  out.append(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::string_view padded_name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO ";
    case Level::kWarn:
      return "WARN ";
    case Level::kError:
      return "ERROR";
    case Level::kOff:
      break;
  }
  return "OFF  ";
}

}  // namespace

std::string_view to_string(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      break;
  }
  return "off";
}

std::optional<Level> parse_level(std::string_view text) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "debug") return Level::kDebug;
  if (lower == "info") return Level::kInfo;
  if (lower == "warn" || lower == "warning") return Level::kWarn;
  if (lower == "error") return Level::kError;
  if (lower == "off") return Level::kOff;
  return std::nullopt;
}

void set_level(Level level) {
  state().level.store(static_cast<int>(level));
}

Level level() {
  return static_cast<Level>(state().level.load(std::memory_order_relaxed));
}

bool enabled(Level level) {
  const int current = state().level.load(std::memory_order_relaxed);
  return level != Level::kOff && current != static_cast<int>(Level::kOff) &&
         static_cast<int>(level) >= current;
}

void set_component(std::string name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.component = std::move(name);
}

std::string component() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.component;
}

void set_thread_ids(bool on) {
  state().thread_ids.store(on);
}

Sink set_sink(Sink sink) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::swap(s.sink, sink);
  return sink;
}

void write(Level level, std::string_view message) {
  State& s = state();
  std::string line;
  line.reserve(64 + message.size());
  append_timestamp(line);
  line.push_back(' ');
  line.append(padded_name(level));
  const bool with_tid = s.thread_ids.load(std::memory_order_relaxed);
  const long tid = with_tid ? static_cast<long>(::gettid()) : 0;

  std::lock_guard lock(s.mutex);
  if (!s.component.empty()) {
    line.push_back(' ');
    line.append(s.component);
  }
  if (with_tid) {
    line.append(" [tid ").append(std::to_string(tid)).push_back(']');
  }
  line.push_back(' ');
  line.append(message);
  if (s.sink) {
    s.sink(level, line);
    return;
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

Line::~Line() {
  try {
    write(level_, stream_.str());
  } catch (...) {
    // Dropping a log line is better than terminating the service.
  }
}

namespace detail {

void arguments_and_placeholders_differ() {}

}  // namespace detail

}  // namespace spotlight::log

fmt::format_context::iterator fmt::formatter<spotlight::log::detail::Real>::format(
    spotlight::log::detail::Real real, fmt::format_context& ctx) const {
  if (!plain) return fmt::formatter<double>::format(real.value, ctx);
  std::ostringstream out;  // operator<<'s default: 6 significant digits, as before fmt
  out << real.value;
  const std::string text = std::move(out).str();
  return std::copy(text.begin(), text.end(), ctx.out());
}
