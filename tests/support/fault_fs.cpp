// See fault_fs.hpp. The real calls are found with dlsym(RTLD_NEXT, ...).
#include "tests/support/fault_fs.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

constexpr int kMaxFds = 65536;

std::mutex g_prefix_mutex;
std::string g_prefix;  // empty: disarmed
std::atomic<bool> g_armed{false};
std::atomic<long> g_fail_at{0};
std::atomic<int> g_errno{ENOSPC};
std::atomic<bool> g_sticky{false};
std::atomic<long> g_steps{0};
std::atomic<long> g_failed{0};
std::atomic<bool> g_tracked[kMaxFds];

template <class Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool under_prefix(const char* path) {
  if (!g_armed.load() || path == nullptr) return false;
  std::lock_guard lock(g_prefix_mutex);
  return !g_prefix.empty() && std::strncmp(path, g_prefix.c_str(), g_prefix.size()) == 0;
}

// A descriptor opened under the prefix and still naming a path there. The second check matters:
// a descriptor closed where this shim does not see it (fclose, closedir and other libc-internal
// closes) stays marked, and its number may be reused by another thread's socket or eventfd
// (libzmq's), whose writes must not fail.
bool tracked(int fd) {
  if (!g_armed.load() || fd < 0 || fd >= kMaxFds || !g_tracked[fd].load()) return false;
  char link[64];
  char target[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return true;  // no /proc: trust the mark
  target[n] = '\0';
  if (under_prefix(target)) return true;
  g_tracked[fd].store(false);
  return false;
}

void track(int fd, bool on) {
  if (fd >= 0 && fd < kMaxFds) g_tracked[fd].store(on);
}

std::atomic<bool> g_trace{false};

// Counts one step; true when it must fail (errno is set).
bool step_fails(const char* what, const char* path = nullptr, int fd = -1) {
  const long n = ++g_steps;
  if (g_trace.load()) {
    char line[512];
    const int len = std::snprintf(line, sizeof line, "fault_fs step %ld: %s %s %d\n", n, what,
                                  path != nullptr ? path : "", fd);
    if (len > 0) {
      static const auto raw_write = real<ssize_t (*)(int, const void*, size_t)>("write");
      raw_write(2, line, static_cast<size_t>(std::min<int>(len, sizeof line - 1)));
    }
  }
  const long at = g_fail_at.load();
  if (at > 0 && (n == at || (g_sticky.load() && n > at))) {
    ++g_failed;
    errno = g_errno.load();
    return true;
  }
  return false;
}

// Opens for writing under the prefix are steps; directories opened there (for fsync) are
// tracked without being a step (opendir opens them too).
bool counted_open(const char* path, int flags) {
  return under_prefix(path) && ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)));
}

bool tracked_open(const char* path, int flags) {
  return counted_open(path, flags) || ((flags & O_DIRECTORY) != 0 && under_prefix(path));
}

void arm_from_environment() {
  g_trace = std::getenv("SPOTLIGHT_FAULT_TRACE") != nullptr;
  const char* prefix = std::getenv("SPOTLIGHT_FAULT_PREFIX");
  if (prefix == nullptr || *prefix == '\0') return;
  const char* at = std::getenv("SPOTLIGHT_FAULT_AT");
  const char* error = std::getenv("SPOTLIGHT_FAULT_ERRNO");
  const char* sticky = std::getenv("SPOTLIGHT_FAULT_STICKY");
  spotlight_fault_arm(prefix, at ? std::atol(at) : 0, error ? std::atoi(error) : ENOSPC,
                      sticky && std::strcmp(sticky, "1") == 0);
}

// Arms from the environment once this file's globals are initialised (a constructor attribute
// could run before them, and the initialisation would then disarm it).
struct ArmFromEnvironment {
  ArmFromEnvironment() { arm_from_environment(); }
} g_arm_from_environment;

using OpenFn = int (*)(const char*, int, ...);
using OpenatFn = int (*)(int, const char*, int, ...);

int do_open(const char* name, const char* path, int flags, mode_t mode) {
  static const auto fn = real<OpenFn>(name);
  if (counted_open(path, flags) && step_fails(name, path)) return -1;
  const int fd = fn(path, flags, mode);
  track(fd, tracked_open(path, flags));  // also forgets a reused descriptor number
  return fd;
}

}  // namespace

extern "C" {

void spotlight_fault_arm(const char* prefix, long fail_at, int error_number, int sticky) {
  {
    std::lock_guard lock(g_prefix_mutex);
    g_prefix = prefix != nullptr ? prefix : "";
  }
  for (auto& fd : g_tracked)
    fd.store(false);
  g_fail_at = fail_at;
  g_errno = error_number;
  g_sticky = sticky != 0;
  g_steps = 0;
  g_failed = 0;
  g_armed = true;
}

void spotlight_fault_disarm(void) {
  g_armed = false;
  std::lock_guard lock(g_prefix_mutex);
  g_prefix.clear();
}

long spotlight_fault_steps(void) {
  return g_steps.load();
}

long spotlight_fault_failed(void) {
  return g_failed.load();
}

int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return do_open("open", path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return do_open("open64", path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  static const auto fn = real<OpenatFn>("openat");
  mode_t mode = 0;
  if ((flags & (O_CREAT | O_TMPFILE)) != 0) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  // Only absolute paths can be matched against the prefix.
  const bool absolute = path[0] == '/';
  if (absolute && counted_open(path, flags) && step_fails("openat", path)) return -1;
  const int fd = fn(dirfd, path, flags, mode);
  track(fd, absolute && tracked_open(path, flags));
  return fd;
}

ssize_t write(int fd, const void* data, size_t size) {
  static const auto fn = real<ssize_t (*)(int, const void*, size_t)>("write");
  if (tracked(fd) && step_fails("write", nullptr, fd)) return -1;
  return fn(fd, data, size);
}

int fsync(int fd) {
  static const auto fn = real<int (*)(int)>("fsync");
  if (tracked(fd) && step_fails("fsync", nullptr, fd)) return -1;
  return fn(fd);
}

int fdatasync(int fd) {
  static const auto fn = real<int (*)(int)>("fdatasync");
  if (tracked(fd) && step_fails("fdatasync", nullptr, fd)) return -1;
  return fn(fd);
}

int close(int fd) {
  static const auto fn = real<int (*)(int)>("close");
  const bool counted = tracked(fd);
  track(fd, false);
  const int rc = fn(fd);  // the descriptor is released either way
  if (counted && step_fails("close", nullptr, fd)) return -1;
  return rc;
}

int rename(const char* from, const char* to) {
  static const auto fn = real<int (*)(const char*, const char*)>("rename");
  if ((under_prefix(from) || under_prefix(to)) && step_fails("rename", to)) return -1;
  return fn(from, to);
}

int mkdir(const char* path, mode_t mode) {
  static const auto fn = real<int (*)(const char*, mode_t)>("mkdir");
  if (under_prefix(path) && step_fails("mkdir", path)) return -1;
  return fn(path, mode);
}

}  // extern "C"
