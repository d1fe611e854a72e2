#include "common/process/line_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <poll.h>
#include <unistd.h>

namespace spotlight::process {

bool LineReader::fill(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    const int ready =
        ::poll(&p, 1, static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;  // timed out (or a bad descriptor: nothing to read either way)
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<std::string> LineReader::next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (eof_) {
      if (buffer_.empty()) return std::nullopt;
      std::string last;
      last.swap(buffer_);
      return last;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!fill(std::max(left, std::chrono::milliseconds(0))) && !eof_) return std::nullopt;
  }
}

}  // namespace spotlight::process
