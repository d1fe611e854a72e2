// remote_reward_schema() (remote_reward.hpp) apart from the client: the run schema has the
// reward.* keys in every build, the core-only one (no ZeroMQ) included.
#include <cmath>
#include <cstdint>

#include "common/reward/remote_reward.hpp"

namespace spotlight::reward {

config::Schema remote_reward_schema() {
  using config::Entry;
  return config::Schema{
      Entry::string("reward.endpoint", "",
                    "ZeroMQ endpoint of the reward service; empty: score in-process (embedded task "
                    "only). Explorers score through it; the trainer too when task.kind is "
                    "prompt_file."),
      Entry::integer("reward.timeout_ms", kDefaultRewardTimeout.count(),
                     "Timeout of one attempt of a reward request, in milliseconds.")
          .range(1, 3600000),
      Entry::integer("reward.retries", kDefaultRewardRetries,
                     "Attempts of a reward request after the first one timed out.")
          .range(0, 100),
      Entry::string("reward.input", "images",
                    "What explorers and the trainer send the reward: images (RGB, 3 latent "
                    "channels) or latents (the reward service decodes them, e.g. with a VAE).")
          .one_of({"images", "latents"}),
      Entry::integer("reward.max_images_per_request",
                     static_cast<std::int64_t>(kDefaultMaxImagesPerRequest),
                     "Images per request; larger batches are split.")
          .range(1, 1 << 20),
      Entry::double_list("reward.range", {kUnitRewardRange.lo, kUnitRewardRange.hi},
                         "[lo, hi]: the rewards of a reward service that declares no range in its "
                         "replies must lie in it (a service's declared range takes precedence). "
                         "Rewards outside the range, or not finite, are refused: the task is "
                         "dead-lettered as a reward fault.")
          .check("must be two finite numbers [lo, hi] with lo < hi",
                 [](const config::Value& v) {
                   const auto& r = std::get<std::vector<double>>(v);
                   return r.size() == 2 && std::isfinite(r[0]) && std::isfinite(r[1]) &&
                          r[0] < r[1];
                 }),
      Entry::string("reward.curve.server_public_file", "",
                    "zcert file with the reward service's public key: requests are "
                    "CURVE-encrypted; empty: plain text."),
      Entry::string("reward.curve.client_secret_file", "",
                    "zcert key pair file of this client; empty: an ephemeral key pair."),
  };
}

}  // namespace spotlight::reward
