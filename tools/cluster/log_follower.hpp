#pragma once
// Follows a growing log file (tail -f): each poll() copies the whole lines written since the last
// one to an output stream; finish() copies the rest, a last line without its newline included.
// Not thread-safe.

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

namespace spotlight::cluster {

class LogFollower {
 public:
  // `out` null: polls do nothing.
  LogFollower(std::filesystem::path path, std::ostream* out) : path_(std::move(path)), out_(out) {}

  void poll();
  void finish();

 private:
  std::filesystem::path path_;
  std::ostream* out_;
  std::uintmax_t offset_ = 0;
  std::string partial_;
};

}  // namespace spotlight::cluster
