#include "common/exploration/finish_time.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace spotlight::exploration {
namespace {

void require(bool ok, const char* field, const char* why) {
  if (!ok) throw std::invalid_argument(std::string("FinishTimeOptions.") + field + ": " + why);
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

}  // namespace

void FinishTimeOptions::validate() const {
  require(window >= 1, "window", "must be >= 1");
  require(preemption_delay_seconds >= 0 && std::isfinite(preemption_delay_seconds),
          "preemption_delay_seconds", "must be >= 0");
  require(preemption_half_life_s > 0 && std::isfinite(preemption_half_life_s),
          "preemption_half_life_s", "must be > 0");
  require(max_explorers >= 1, "max_explorers", "must be >= 1");
}

FinishTimeModel::FinishTimeModel(FinishTimeOptions options) : options_(options) {
  options_.validate();
}

void FinishTimeModel::observe_sample_step(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  window_.push_back(seconds);
  while (static_cast<int>(window_.size()) > options_.window)
    window_.pop_front();
}

void FinishTimeModel::observe_departures(double departures, double explorer_seconds,
                                         double now_seconds) {
  if (!(departures >= 0) || !(explorer_seconds >= 0) || !std::isfinite(departures) ||
      !std::isfinite(explorer_seconds)) {
    return;
  }
  if (last_seen_ && now_seconds > *last_seen_) {
    const double decay = std::exp2(-(now_seconds - *last_seen_) / options_.preemption_half_life_s);
    departures_ *= decay;
    exposure_ *= decay;
  }
  last_seen_ = std::max(now_seconds, last_seen_.value_or(now_seconds));
  departures_ += departures;
  exposure_ += explorer_seconds;
}

std::optional<double> FinishTimeModel::mean_sample_step() const {
  if (window_.empty()) return std::nullopt;
  double sum = 0;
  for (double x : window_)
    sum += x;
  return sum / static_cast<double>(window_.size());
}

std::optional<double> FinishTimeModel::sd_sample_step() const {
  const auto mean = mean_sample_step();
  if (!mean) return std::nullopt;
  if (window_.size() < 2) return 0.0;
  double sum = 0;
  for (double x : window_)
    sum += (x - *mean) * (x - *mean);
  return std::sqrt(sum / static_cast<double>(window_.size() - 1));
}

double FinishTimeModel::preemption_rate() const {
  return exposure_ > 0 ? departures_ / exposure_ : 0.0;
}

std::optional<FinishPrediction> FinishTimeModel::predict(const ExplorationWork& work, int explorers,
                                                         double budget_seconds) const {
  const auto m = mean_sample_step();
  if (!m || explorers < 1) return std::nullopt;
  return predict_with(work, explorers, budget_seconds, *m, *sd_sample_step());
}

FinishPrediction FinishTimeModel::predict_with(const ExplorationWork& work, int explorers,
                                               double budget_seconds, double mean,
                                               double sd) const {
  const std::int64_t total =
      std::max<std::int64_t>(work.samples, 0) + std::max<std::int64_t>(work.backlog, 0);
  const double per_explorer = std::ceil(static_cast<double>(total) / explorers);
  const double steps = std::max(work.steps, 1);
  const double busy = per_explorer * steps * mean;
  const double preemptions = preemption_rate() * busy;
  const double cost = steps * mean / 2 + options_.preemption_delay_seconds;
  FinishPrediction p;
  p.mean_seconds = busy + preemptions * cost;
  p.sd_seconds = std::sqrt(per_explorer * steps * steps * sd * sd + preemptions * cost * cost);
  double one;
  if (total == 0) {
    one = budget_seconds >= 0 ? 1.0 : 0.0;
  } else if (p.sd_seconds > 0) {
    one = normal_cdf((budget_seconds - p.mean_seconds) / p.sd_seconds);
  } else {
    one = p.mean_seconds <= budget_seconds ? 1.0 : 0.0;
  }
  // Only explorers with work to do must finish.
  const double busy_explorers = std::min<double>(explorers, static_cast<double>(total));
  p.probability = std::pow(one, std::max(busy_explorers, 1.0));
  return p;
}

std::optional<int> FinishTimeModel::explorers_needed(const ExplorationWork& work,
                                                     double budget_seconds,
                                                     double probability) const {
  const auto m = mean_sample_step();
  if (!m) return std::nullopt;
  const double sd = *sd_sample_step();
  const std::int64_t total =
      std::max<std::int64_t>(work.samples, 0) + std::max<std::int64_t>(work.backlog, 0);
  // P is not monotonic in k in general (more explorers: fewer samples each but more that must all
  // finish), so look at every pool size up to the first that suffices; beyond one sample per
  // explorer nothing changes.
  const int last = static_cast<int>(
      std::min<std::int64_t>(options_.max_explorers, std::max<std::int64_t>(total, 1)));
  for (int k = 1; k <= last; ++k) {
    if (predict_with(work, k, budget_seconds, *m, sd).probability >= probability) return k;
  }
  return std::nullopt;
}

}  // namespace spotlight::exploration
