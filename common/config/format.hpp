// Internal to spotlight_config: number formatting and scalar parsing shared by schema.cpp and
// config.cpp. Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spotlight::config::detail {

// Shortest text that reads back to the same double; always looks like a float ("1.0", "1e-05").
std::string format_double(double v);
// Shortest text for a bound or number in a message ("1", "0.5").
std::string format_number(double v);
// 'text' in single quotes, for messages and help.
std::string quote(std::string_view text);

// Strict scalar parsers: the whole text must be consumed; a leading '+' is allowed for numbers.
std::optional<std::int64_t> parse_int(std::string_view text);
// Finite values only.
std::optional<double> parse_double(std::string_view text);
// true/false, yes/no, on/off, 1/0, case-insensitive.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace spotlight::config::detail
