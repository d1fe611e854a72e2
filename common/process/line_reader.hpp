#pragma once
// Lines from a descriptor (a child's output pipe, Process::output_fd()), each with a timeout.
//
//   process::LineReader lines(worker.output_fd());
//   while (auto line = lines.next(std::chrono::seconds(5))) handle(*line);
//   if (lines.at_end()) ...;   // the writer closed its end (the child exited)
//
// Contract:
// - next() returns the next '\n'-terminated line without its '\n', or nullopt when `timeout`
//   passes first or the stream ends (then at_end() is true; an unterminated last piece is
//   returned as a line first). It waits with poll(), never by sleeping.
// - The descriptor is not owned; it must outlive the reader. Not thread-safe.

#include <chrono>
#include <optional>
#include <string>

namespace spotlight::process {

class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  std::optional<std::string> next(std::chrono::milliseconds timeout);
  // True once the writer has closed its end and every line has been returned.
  bool at_end() const { return eof_ && buffer_.empty(); }
  int fd() const { return fd_; }

 private:
  // Reads what is available within `timeout` into buffer_; false when nothing came.
  bool fill(std::chrono::milliseconds timeout);

  int fd_;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace spotlight::process
