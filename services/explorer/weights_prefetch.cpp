#include "services/explorer/weights_prefetch.hpp"

#include <exception>
#include <vector>

#include "common/log/log.hpp"
#include "common/store/errors.hpp"
#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"

namespace spotlight::explorer {

namespace {
constexpr const char* kTopic = "weights";
}  // namespace

WeightsPrefetcher::WeightsPrefetcher(const run::BusSubscription& bus, store::WeightStore& store,
                                     PolicyWeights& weights)
    : store_(store), weights_(weights) {
  follower_ = std::make_unique<bus::FollowerThread>(
      bus.subscriber, bus.endpoint, std::vector<std::string>{kTopic},
      [this](const std::string&) { return snapshot(); },
      [this](const bus::Notice& n) { on_state(n); }, bus.follower);
}

WeightsPrefetcher::~WeightsPrefetcher() {
  follower_.reset();
}

PrefetchCounters WeightsPrefetcher::counters() const {
  return PrefetchCounters{loaded_.load(), ignored_.load(), failed_.load(), notices_.load()};
}

// The trainer's bus numbers weights notices version + 1 (bus versions start at 1).
std::optional<bus::Notice> WeightsPrefetcher::snapshot() {
  const auto latest = store_.latest_version();
  if (!latest) return std::nullopt;
  const auto manifest = store_.manifest(*latest);
  if (!manifest) return std::nullopt;
  const wire::WeightsNotice notice{*latest, manifest->checksum, "",
                                   static_cast<std::int64_t>(manifest->bytes),
                                   manifest->published_unix_ms};
  return bus::Notice{kTopic, static_cast<std::uint64_t>(*latest) + 1, notice.encode()};
}

void WeightsPrefetcher::on_state(const bus::Notice& state) {
  ++notices_;
  wire::WeightsNotice notice;
  try {
    notice = wire::WeightsNotice::decode(state.payload);
  } catch (const wire::WireError& e) {
    ++ignored_;
    log::warn("weights notice v{} ignored: {}", state.version, e.what());
    return;
  }
  const std::int64_t v = notice.version;
  if (const auto loaded = weights_.loaded(); loaded && *loaded >= v) return;
  try {
    const auto manifest = store_.manifest(v);
    if (!manifest || manifest->checksum != notice.checksum) {
      ++ignored_;
      log::warn("weights notice of version {} (checksum {}) ignored: the run's weight store has {}",
                v, notice.checksum,
                manifest ? "checksum " + manifest->checksum : std::string("no such version"));
      return;
    }
    const auto bytes = store_.fetch(v);  // verified against the manifest
    if (!bytes) {
      ++ignored_;
      return;
    }
    if (weights_.offer(v, *bytes)) ++loaded_;
  } catch (const store::StoreAccessDenied&) {
    throw;  // counted by the follower; the explorer's own calls report it
  } catch (const std::exception& e) {
    // Redis unavailable or a corrupt blob: the explorer's ensure() gets the version when a task
    // needs it (and rejects a corrupt one the same way).
    ++failed_;
    log::warn("prefetch of weights version {} failed: {}", v, e.what());
  }
}

}  // namespace spotlight::explorer
