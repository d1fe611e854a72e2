#include "common/config/env.hpp"

#include <cstdlib>

namespace spotlight::config {

std::optional<std::string> env(const char* name) {
  if (name == nullptr) return std::nullopt;
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace spotlight::config
