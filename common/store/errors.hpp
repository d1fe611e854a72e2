#pragma once
// Errors of the stores, independent of their transport. Each carries an error::ErrorCode
// (common/error/error.hpp); the subclasses fix it, for catch sites that name one case.
//
//   StoreError                 base (error::Error)
//   +- StoreUnavailable        kUnavailable: the backing store cannot be reached (or timed out);
//   |                          back off, retry
//   +- StoreAccessDenied       kAccessDenied: the backing store refused our credentials or
//   |                          permissions: do not retry (fix the configuration and restart)
//   +- InvalidStoreOptions     kInvalid: options rejected; names the field
//   +- VersionConflict         kConflict: publish() of a version that exists with different content
//   +- CorruptWeights          kCorrupt: a version's stored content disagrees with its manifest
//      +- ChecksumMismatch     ... specifically its checksum (expected / actual in hex)
//      +- UntrustedWeights     ... its manifest is unsigned or mis-signed (a store that checks)

#include <cstdint>
#include <string>
#include <utility>

#include "common/error/error.hpp"

namespace spotlight::store {

class StoreError : public error::Error {
 public:
  using error::Error::Error;
};

using StoreUnavailable = error::Unavailable<StoreError>;
using StoreAccessDenied = error::AccessDenied<StoreError>;

// Throws the StoreError for `cause`, a failure of the backing store, with `context` in front of
// its message: StoreUnavailable or StoreAccessDenied when its code says so.
[[noreturn]] inline void throw_store_error(const std::string& context, const error::Error& cause) {
  error::throw_translated<StoreError>(context, cause);
}

class InvalidStoreOptions : public StoreError {
 public:
  InvalidStoreOptions(const std::string& field, const std::string& why)
      : StoreError("store options ." + field + ": " + why, error::ErrorCode::kInvalid),
        field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

class VersionConflict : public StoreError {
 public:
  VersionConflict(std::int64_t version, const std::string& existing, const std::string& attempted)
      : StoreError("weights version " + std::to_string(version) +
                       " already published with checksum " + existing +
                       ", refusing different content (checksum " + attempted + ")",
                   error::ErrorCode::kConflict),
        version_(version) {}
  std::int64_t version() const { return version_; }

 private:
  std::int64_t version_;
};

class CorruptWeights : public StoreError {
 public:
  CorruptWeights(std::int64_t version, const std::string& why)
      : StoreError("weights version " + std::to_string(version) + " is corrupt: " + why,
                   error::ErrorCode::kCorrupt),
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
