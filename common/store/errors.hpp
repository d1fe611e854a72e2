#pragma once
// Errors of the stores, independent of their transport.
//
//   StoreError                 base
//   +- StoreUnavailable        the backing store cannot be reached (or timed out); back off, retry
//   +- StoreAccessDenied       the backing store refused our credentials or permissions: do not
//   |                          retry (fix the configuration and restart)
//   +- InvalidStoreOptions     options rejected; names the field
//   +- VersionConflict         publish() of a version that exists with different content
//   +- CorruptWeights          a version's stored content disagrees with its manifest
//      +- ChecksumMismatch     ... specifically its checksum (expected / actual in hex)
//      +- UntrustedWeights     ... its manifest is unsigned or mis-signed (a store that checks)

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace spotlight::store {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreUnavailable : public StoreError {
 public:
  StoreUnavailable(const std::string& what, bool timeout) : StoreError(what), timeout_(timeout) {}
  bool is_timeout() const { return timeout_; }

 private:
  bool timeout_;
};

class StoreAccessDenied : public StoreError {
 public:
  using StoreError::StoreError;
};

class InvalidStoreOptions : public StoreError {
 public:
  InvalidStoreOptions(const std::string& field, const std::string& why)
      : StoreError("store options ." + field + ": " + why), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

class VersionConflict : public StoreError {
 public:
  VersionConflict(std::int64_t version, const std::string& existing, const std::string& attempted)
      : StoreError("weights version " + std::to_string(version) +
                   " already published with checksum " + existing +
                   ", refusing different content (checksum " + attempted + ")"),
        version_(version) {}
  std::int64_t version() const { return version_; }

 private:
  std::int64_t version_;
};

class CorruptWeights : public StoreError {
 public:
  CorruptWeights(std::int64_t version, const std::string& why)
      : StoreError("weights version " + std::to_string(version) + " is corrupt: " + why),
        version_(version) {}
  std::int64_t version() const { return version_; }

 private:
  std::int64_t version_;
};

class ChecksumMismatch : public CorruptWeights {
 public:
  ChecksumMismatch(std::int64_t version, std::string expected, std::string actual)
      : CorruptWeights(version,
                       "checksum mismatch: manifest says " + expected + ", content has " + actual),
        expected_(std::move(expected)),
        actual_(std::move(actual)) {}
  const std::string& expected() const { return expected_; }
  const std::string& actual() const { return actual_; }

 private:
  std::string expected_;
  std::string actual_;
};

class UntrustedWeights : public CorruptWeights {
 public:
  using CorruptWeights::CorruptWeights;
};

}  // namespace spotlight::store
