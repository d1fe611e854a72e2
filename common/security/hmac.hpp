#pragma once
// Message authentication and randomness for Spotlight's security features (signed seed tasks).
// OpenSSL's libcrypto stays behind this header.
//
//   std::string mac = security::hmac_sha256(key, message);        // 32 raw bytes
//   if (!security::equal_constant_time(mac, received)) reject();
//
// Thread-safe.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spotlight::security {

inline constexpr std::size_t kSha256Bytes = 32;

// The C library or OpenSSL failed (no randomness, allocation): nothing to retry.
class SecurityError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// HMAC-SHA256 of `message` under `key` (any length): kSha256Bytes raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view message);
// SHA-256 of `bytes`: kSha256Bytes raw bytes.
std::string sha256(std::string_view bytes);
// True when a == b, in time that depends only on the sizes (for comparing MACs).
bool equal_constant_time(std::string_view a, std::string_view b);
// `n` bytes from a cryptographically secure generator. Throws SecurityError.
std::string random_bytes(std::size_t n);

// Lowercase hex of `bytes`, and back (std::nullopt for odd lengths or non-hex characters).
std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace spotlight::security
