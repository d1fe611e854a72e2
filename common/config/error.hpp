// Errors of the configuration layer.
#pragma once

#include <stdexcept>
#include <string>

namespace spotlight::config {

// A configuration that cannot be used: unknown key, value of the wrong type, failed validation,
// unreadable or unparsable file, bad command line. The message is meant for the operator and
// names the key with its full dotted name and where the value came from, e.g.
//   config: unknown key 'trainer.lrr' (in /runs/a.yaml:3); did you mean 'trainer.lr'?
//   config: 'sampler.steps' must be in [1, 1000], got 0 (in --set)
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string key, const std::string& message)
      : std::runtime_error(message), key_(std::move(key)) {}
  // The full dotted key concerned; empty when the error is not about one key.
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// A programming error in code that reads a Config: asking for a key the schema does not declare,
// or for a type other than the declared one.
class ConfigAccessError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace spotlight::config
