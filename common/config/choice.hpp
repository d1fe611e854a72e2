// A closed choice of a string key (exploration.mode, planner.policy, ...) read as an enum.
//
// One table per enum names its values; the schema entry takes its names (`one_of`) and the
// reader parses the value once, so no code compares the text again:
//
//   enum class Mode { kSync, kAsync };
//   inline constexpr config::Choice<Mode> kModes[] = {{"sync", Mode::kSync},
//                                                     {"async", Mode::kAsync}};
//   config::Entry::string("run.mode", "sync", "How.").one_of(config::names(kModes));
//   const Mode mode = config::get_choice(cfg, "run.mode", kModes);
//
// A name that is not in the table is a ConfigError listing the allowed names:
//   config: 'run.mode' must be one of sync|async, got 'asynk' (in --set)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.hpp"
#include "common/config/error.hpp"
#include "common/config/schema.hpp"

namespace spotlight::config {

template <class E>
struct Choice {
  std::string_view name;
  E value;
};

// The names in table order, for Entry::one_of.
template <class E, std::size_t N>
std::vector<std::string> names(const Choice<E> (&choices)[N]) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const auto& c : choices)
    out.emplace_back(c.name);
  return out;
}

// "a|b|c": the names in table order.
template <class E, std::size_t N>
std::string allowed(const Choice<E> (&choices)[N]) {
  std::string out;
  for (const auto& c : choices) {
    if (!out.empty()) out += '|';
    out += c.name;
  }
  return out;
}

// The value named `text`; throws ConfigError(key) "config: '<key>' must be one of a|b|c, got
// '<text>'" (with " (in <origin>)" when `origin` is not empty) for any other text.
template <class E, std::size_t N>
E parse_choice(const Choice<E> (&choices)[N], std::string_view key, std::string_view text,
               std::string_view origin = {}) {
  for (const auto& c : choices) {
    if (c.name == text) return c.value;
  }
  std::string message = "config: '" + std::string(key) + "' must be one of " + allowed(choices) +
                        ", got " + format_value(Value(std::string(text)));
  if (!origin.empty()) message += " (in " + std::string(origin) + ")";
  throw ConfigError(std::string(key), message);
}

// The name of `value` in the table (empty when the table lacks it).
template <class E, std::size_t N>
std::string_view name_of(const Choice<E> (&choices)[N], E value) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return {};
}

// The enum value of the string key `key` (see parse_choice).
template <class E, std::size_t N>
E get_choice(const Config& config, std::string_view key, const Choice<E> (&choices)[N]) {
  return parse_choice(choices, key, config.get_string(key), config.origin(key));
}

}  // namespace spotlight::config
