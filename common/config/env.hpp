// Secrets (passwords, tokens) and deployment facts (MASTER_ADDR, RANK, WORLD_SIZE) come from
// the environment, never from YAML config files or dumps.
#pragma once

#include <optional>
#include <string>

namespace spotlight::config {

// The value of environment variable `name`; std::nullopt when it is not set (an empty value is
// returned as ""). Safe to call concurrently as long as nobody calls setenv() meanwhile.
std::optional<std::string> env(const char* name);

}  // namespace spotlight::config
