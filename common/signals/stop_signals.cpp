#include "common/signals/stop_signals.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace spotlight::signals {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT};
constexpr char kStopByte = 0;  // written by a stop request; signals write their number

std::atomic<bool> g_installed{false};
std::atomic<int> g_read_fd{-1};
std::atomic<int> g_write_fd{-1};  // lock-free: read in the handler
struct sigaction g_previous[2];

void on_signal(int signo) {
  const int saved = errno;
  const char byte = static_cast<char>(signo);
  // Non-blocking: a full pipe already holds a wake-up.
  [[maybe_unused]] const ssize_t n = ::write(g_write_fd.load(), &byte, 1);
  errno = saved;
}

void wake(char byte) {
  [[maybe_unused]] const ssize_t n = ::write(g_write_fd.load(), &byte, 1);
}

}  // namespace

StopSignals::StopSignals() {
  static_assert(std::atomic<int>::is_always_lock_free);
  if (g_installed.exchange(true)) throw std::logic_error("StopSignals: already installed");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_installed = false;
    throw std::system_error(errno, std::generic_category(), "StopSignals: pipe2");
  }
  g_read_fd = fds[0];
  g_write_fd = fds[1];
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 2; ++i) {
    if (::sigaction(kSignals[i], &action, &g_previous[i]) != 0) {
      const int error = errno;
      for (int j = 0; j < i; ++j)
        ::sigaction(kSignals[j], &g_previous[j], nullptr);
      ::close(fds[0]);
      ::close(fds[1]);
      g_installed = false;
      throw std::system_error(error, std::generic_category(), "StopSignals: sigaction");
    }
  }
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 2; ++i)
    ::sigaction(kSignals[i], &g_previous[i], nullptr);
  ::close(g_read_fd.exchange(-1));
  ::close(g_write_fd.exchange(-1));
  g_installed = false;
}

std::optional<int> StopSignals::wait(std::stop_token stop) {
  std::stop_callback on_stop(stop, [] { wake(kStopByte); });
  for (;;) {
    // One byte at a time: each signal is one byte, and one returned must not take the next along.
    char byte = kStopByte;
    const ssize_t n = ::read(g_read_fd.load(), &byte, 1);
    if (n > 0) {
      if (byte != kStopByte) return static_cast<int>(byte);
      if (stop.stop_requested()) return std::nullopt;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "StopSignals: read");
    }
    if (stop.stop_requested()) return std::nullopt;
    pollfd item{g_read_fd.load(), POLLIN, 0};
    if (::poll(&item, 1, -1) < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "StopSignals: poll");
    }
  }
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

}  // namespace spotlight::signals
