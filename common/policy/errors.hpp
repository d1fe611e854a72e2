#pragma once
// A policy that cannot be built or used as configured: an unreadable or incompatible TorchScript
// module, embeddings that do not match the prompt file, a prompt without embeddings, a native-only
// operation on a TorchScript policy. The message names the file, key or prompt.

#include <stdexcept>

namespace spotlight::policy {

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace spotlight::policy
