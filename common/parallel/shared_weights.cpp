#include "common/parallel/shared_weights.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/store/checksum.hpp"

namespace spotlight::parallel {
namespace {

constexpr std::size_t kHeaderBytes = 2 * sizeof(std::uint64_t);

std::string segment_path(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    throw std::invalid_argument("shared weights: bad segment name '" + name + "'");
  }
  return "/" + name;
}

[[noreturn]] void fail(const std::string& what, const std::string& name) {
  throw SharedWeightsError("shared weights: " + what + " '" + name + "': " + std::strerror(errno));
}

// Closes a descriptor and unmaps a mapping on scope exit.
struct Mapping {
  int fd = -1;
  void* data = MAP_FAILED;
  std::size_t size = 0;
  ~Mapping() {
    if (data != MAP_FAILED) munmap(data, size);
    if (fd >= 0) close(fd);
  }
};

}  // namespace

void publish_shared_weights(const std::string& name, std::string_view bytes) {
  const auto path = segment_path(name);
  // Write under a temporary name, then rename is not available for shm: unlink first so a reader
  // never maps a half-written segment of the same name (it sees none, or the old one).
  shm_unlink(path.c_str());
  Mapping m;
  m.fd = shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (m.fd < 0) fail("create", name);
  m.size = kHeaderBytes + bytes.size();
  if (ftruncate(m.fd, static_cast<off_t>(m.size)) != 0) fail("size", name);
  m.data = mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  if (m.data == MAP_FAILED) fail("map", name);
  auto* out = static_cast<unsigned char*>(m.data);
  const std::uint64_t size = bytes.size(), checksum = store::xxh64(bytes);
  std::memcpy(out + kHeaderBytes, bytes.data(), bytes.size());
  std::memcpy(out + sizeof(std::uint64_t), &checksum, sizeof checksum);
  std::memcpy(out, &size, sizeof size);
}

std::optional<std::string> read_shared_weights(const std::string& name) {
  const auto path = segment_path(name);
  Mapping m;
  m.fd = shm_open(path.c_str(), O_RDONLY, 0);
  if (m.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("open", name);
  }
  struct stat st {};
  if (fstat(m.fd, &st) != 0) fail("stat", name);
  m.size = static_cast<std::size_t>(st.st_size);
  if (m.size < kHeaderBytes) throw SharedWeightsError("shared weights: '" + name + "' truncated");
  m.data = mmap(nullptr, m.size, PROT_READ, MAP_SHARED, m.fd, 0);
  if (m.data == MAP_FAILED) fail("map", name);
  const auto* in = static_cast<const unsigned char*>(m.data);
  std::uint64_t size = 0, checksum = 0;
  std::memcpy(&size, in, sizeof size);
  std::memcpy(&checksum, in + sizeof(std::uint64_t), sizeof checksum);
  if (size != m.size - kHeaderBytes) {
    throw SharedWeightsError("shared weights: '" + name + "' holds " +
                             std::to_string(m.size - kHeaderBytes) + " bytes, header says " +
                             std::to_string(size));
  }
  std::string bytes(reinterpret_cast<const char*>(in + kHeaderBytes), size);
  if (store::xxh64(bytes) != checksum) {
    throw SharedWeightsError("shared weights: '" + name + "' checksum mismatch");
  }
  return bytes;
}

void remove_shared_weights(const std::string& name) {
  shm_unlink(segment_path(name).c_str());
}

}  // namespace spotlight::parallel
