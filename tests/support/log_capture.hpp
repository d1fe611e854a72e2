#pragma once
// LogCapture: the log lines at or above a level that this process logs while it lives. It
// installs a log sink and restores the previous one when destroyed; tests read the lines from any
// thread. (tests/services/e2e/log_lines.hpp reads the services' log files instead.)
//
//   testing::LogCapture errors(log::Level::kError);
//   ... run the code under test ...
//   EXPECT_EQ(errors.containing("weights version 1 rejected").size(), 1u);

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/log/log.hpp"

namespace spotlight::testing {

class LogCapture {
 public:
  explicit LogCapture(log::Level at_least) {
    previous_ = log::set_sink([this, at_least](log::Level level, std::string_view line) {
      if (level < at_least) return;
      const std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~LogCapture() { log::set_sink(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The lines that contain `text`, in the order they were logged.
  std::vector<std::string> containing(std::string_view text) const {
    const std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const std::string& line : lines_) {
      if (line.find(text) != std::string::npos) out.push_back(line);
    }
    return out;
  }
  std::size_t count(std::string_view text) const { return containing(text).size(); }

 private:
  log::Sink previous_;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace spotlight::testing
