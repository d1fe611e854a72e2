#pragma once
// Reading the services' logs in end-to-end tests: lines, matches, and the wall-clock time of a
// line (common/log writes "2025-01-02T03:04:05.678Z LEVEL component message").

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace spotlight::testing {

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

inline std::vector<std::string> lines_with(const std::filesystem::path& path,
                                           const std::string& part) {
  std::vector<std::string> out;
  for (auto& line : read_lines(path)) {
    if (line.find(part) != std::string::npos) out.push_back(line);
  }
  return out;
}

// Milliseconds since the epoch of a log line's UTC timestamp; nullopt for other lines.
inline std::optional<std::int64_t> log_time_ms(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

}  // namespace spotlight::testing
