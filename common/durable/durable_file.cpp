#include "common/durable/durable_file.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spotlight::durable {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& operation, const fs::path& path, int error_number) {
  throw WriteError(operation, path, error_number);
}

fs::path directory_of(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// Closes the descriptor on every path; close() errors are reported by close_checked().
class Fd {
 public:
  Fd(int fd) : fd_(fd) {}  // NOLINT(google-explicit-constructor)
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void close_checked(const fs::path& path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close", path, errno);
  }

 private:
  int fd_;
};

void write_all(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path, errno);
    }
    if (n == 0) fail("write", path, EIO);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

WriteError::WriteError(std::string operation, fs::path path, int error_number)
    : std::runtime_error(operation + " " + path.string() + ": " + std::strerror(error_number)),
      operation_(std::move(operation)),
      path_(std::move(path)),
      errno_(error_number) {}

bool WriteError::out_of_space() const {
  return errno_ == ENOSPC || errno_ == EDQUOT;
}

void write_new_file(const fs::path& path, std::string_view bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail("open", path, errno);
  write_all(fd.get(), bytes, path);
  if (::fsync(fd.get()) != 0) fail("fsync", path, errno);
  fd.close_checked(path);
}

void append_file(const fs::path& path, std::string_view bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail("open", path, errno);
  write_all(fd.get(), bytes, path);
  if (::fsync(fd.get()) != 0) fail("fsync", path, errno);
  fd.close_checked(path);
}

void sync_directory(const fs::path& directory) {
  Fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) fail("open", directory, errno);
  if (::fsync(fd.get()) != 0) fail("fsync", directory, errno);
  fd.close_checked(directory);
}

void rename(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("rename " + from.string() + " to", to, errno);
  sync_directory(directory_of(to));
  if (directory_of(from) != directory_of(to)) sync_directory(directory_of(from));
}

void write_file(const fs::path& path, std::string_view bytes) {
  const fs::path tmp = path.string() + ".tmp";
  try {
    write_new_file(tmp, bytes);
    durable::rename(tmp, path);
  } catch (const WriteError&) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

void create_directories(const fs::path& directory) {
  // Walk up to the first existing ancestor, then create downwards.
  std::vector<fs::path> missing;
  for (fs::path p = directory; !p.empty(); p = p.parent_path()) {
    std::error_code error;
    if (fs::is_directory(p, error)) break;
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir", *it, errno);
    sync_directory(directory_of(*it));
  }
}

void check_writable_directory(const fs::path& directory) {
  durable::create_directories(directory);
  const fs::path probe = directory / (".write-probe-" + std::to_string(::getpid()));
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail("create a file in", directory, errno);
  fd.close_checked(probe);
  ::unlink(probe.c_str());
}

}  // namespace spotlight::durable
