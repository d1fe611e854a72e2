#include "services/planner/stop_flag.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace spotlight::planner {

namespace {
std::atomic<StopFlag*> g_signal_flag{nullptr};
}  // namespace

void StopFlag::on_signal(int signo) {
  if (StopFlag* flag = g_signal_flag.load()) {
    flag->signal_.store(signo);
    flag->request();
  }
}

StopFlag::StopFlag() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "StopFlag: pipe2");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

StopFlag::~StopFlag() {
  StopFlag* self = this;
  if (g_signal_flag.compare_exchange_strong(self, nullptr)) {
    ::signal(SIGTERM, SIG_DFL);  // nobody to tell any more: the default (terminate) again
    ::signal(SIGINT, SIG_DFL);
  }
  ::close(read_fd_);
  ::close(write_fd_);
}

void StopFlag::request() {
  const int saved_errno = errno;  // a signal handler must leave errno as it found it
  if (!requested_.exchange(true)) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(write_fd_, &byte, 1);  // full pipe: already awake
  }
  errno = saved_errno;
}

bool StopFlag::wait_for(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!requested()) {
    // Rounded up: poll() must not return before the deadline.
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd fd{read_fd_, POLLIN, 0};
    // The byte is never read: once requested, the pipe stays readable.
    if (::poll(&fd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30))) < 0 &&
        errno != EINTR) {
      break;
    }
  }
  return requested();
}

std::optional<int> StopFlag::signal() const {
  const int signo = signal_.load();
  if (signo == 0) return std::nullopt;
  return signo;
}

void StopFlag::stop_on_signals(StopFlag& flag) {
  g_signal_flag.store(&flag);
  struct sigaction action {};
  action.sa_handler = &StopFlag::on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
}

}  // namespace spotlight::planner
