#include "common/zmq/curve.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/zmq/errors.hpp"

namespace spotlight::zmqio {
namespace {

constexpr std::size_t kZ85KeyLength = 40;

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

struct ParsedCert {
  std::optional<std::string> public_key;
  std::optional<std::string> secret_key;
};

// Reads `name = "value"` lines; anything else (sections, metadata, comments) is ignored.
ParsedCert parse_cert(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw CurveError("CURVE key file " + path.string() + ": cannot open: " + std::strerror(errno));
  }
  ParsedCert cert;
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (name == "public-key") {
      cert.public_key = value;
    } else if (name == "secret-key") {
      cert.secret_key = value;
    }
  }
  return cert;
}

}  // namespace

bool curve_available() {
  return zmq_has("curve") != 0;
}

void require_curve() {
  if (!curve_available()) {
    throw CurveError(
        "CURVE encryption was requested but this libzmq was built without CURVE support "
        "(zmq_has(\"curve\") is false): rebuild libzmq with libsodium or disable the curve "
        "options");
  }
}

void validate_curve_key(const std::string& key, const std::string& what) {
  if (key.size() != kZ85KeyLength) {
    throw CurveError(what + ": a CURVE key must be 40 Z85 characters, got " +
                     std::to_string(key.size()));
  }
  std::array<std::uint8_t, 32> raw{};
  if (zmq_z85_decode(raw.data(), key.c_str()) == nullptr) {
    throw CurveError(what + ": not a valid Z85 string");
  }
}

CurveKeyPair generate_curve_keypair() {
  require_curve();
  std::array<char, kZ85KeyLength + 1> pub{};
  std::array<char, kZ85KeyLength + 1> sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0) {
    throw CurveError(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{std::string(pub.data()), std::string(sec.data())};
}

CurveKeyPair load_curve_keypair(const std::filesystem::path& path) {
  const ParsedCert cert = parse_cert(path);
  const std::string where = "CURVE key file " + path.string();
  if (!cert.public_key) throw CurveError(where + ": missing public-key");
  if (!cert.secret_key) throw CurveError(where + ": missing secret-key");
  validate_curve_key(*cert.public_key, where + ": public-key");
  validate_curve_key(*cert.secret_key, where + ": secret-key");
  if (curve_available()) {
    std::array<char, kZ85KeyLength + 1> derived{};
    if (zmq_curve_public(derived.data(), cert.secret_key->c_str()) != 0 ||
        std::string(derived.data()) != *cert.public_key) {
      throw CurveError(where + ": public-key does not belong to secret-key");
    }
  }
  return CurveKeyPair{*cert.public_key, *cert.secret_key};
}

std::string load_curve_public_key(const std::filesystem::path& path) {
  const ParsedCert cert = parse_cert(path);
  const std::string where = "CURVE key file " + path.string();
  if (!cert.public_key) throw CurveError(where + ": missing public-key");
  validate_curve_key(*cert.public_key, where + ": public-key");
  return *cert.public_key;
}

namespace {

void write_key_file(const std::filesystem::path& path, const std::string& body, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0 || ::fchmod(fd, mode) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw CurveError("CURVE key file " + path.string() + ": cannot create: " + reason);
  }
  std::size_t written = 0;
  while (written < body.size()) {
    const ssize_t n = ::write(fd, body.data() + written, body.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  const bool closed = ::close(fd) == 0;
  if (written != body.size() || !closed) {
    throw CurveError("CURVE key file " + path.string() + ": write failed");
  }
}

}  // namespace

void save_curve_keypair(const std::filesystem::path& path, const CurveKeyPair& keys) {
  validate_curve_key(keys.public_key, "save_curve_keypair: public_key");
  validate_curve_key(keys.secret_key, "save_curve_keypair: secret_key");
  std::ostringstream text;
  text << "#   ZeroMQ CURVE key pair (zcert format); keep this file private\n"
       << "metadata\n"
       << "curve\n"
       << "    public-key = \"" << keys.public_key << "\"\n"
       << "    secret-key = \"" << keys.secret_key << "\"\n";
  // Created 0600 from the start (and forced to 0600 if it existed): the secret never sits in a
  // world-readable file.
  write_key_file(path, text.str(), 0600);
}

void save_curve_public_key(const std::filesystem::path& path, const std::string& public_key) {
  validate_curve_key(public_key, "save_curve_public_key: public_key");
  std::ostringstream text;
  text << "#   ZeroMQ CURVE public key (zcert format); safe to distribute\n"
       << "metadata\n"
       << "curve\n"
       << "    public-key = \"" << public_key << "\"\n";
  write_key_file(path, text.str(), 0644);
}

}  // namespace spotlight::zmqio
