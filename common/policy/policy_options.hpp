#pragma once
// What a policy is made of, as configuration: no LibTorch here, so services that only read the
// run's configuration (the planner) need not load it.

#include <cstdint>
#include <string>

namespace spotlight::policy {

struct PolicyOptions {
  std::string preset = "tiny";    // model size preset (model::mmdit_preset)
  std::string device = "cpu";     // "cpu", "cuda", "cuda:1", ...
  std::string dtype = "float32";  // "float32" or "bfloat16"
  uint64_t init_seed = 0;         // weights initialisation
  // "none" or "bfloat16": the DiT forward's matrix products under bf16 autocast, parameters and
  // the sampler in fp32 (model::AutocastGuard). Needs dtype float32.
  std::string autocast = "none";
};

}  // namespace spotlight::policy
