#pragma once
// PRIVATE to common/metrics: the state behind Registry, shared with MetricsServer. Includes
// prometheus-cpp headers; never include it from a public header.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "common/metrics/metrics.hpp"

namespace spotlight::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

struct Registry::Impl {
  struct Family {
    MetricType type = MetricType::kCounter;
    prometheus::Family<prometheus::Counter>* counters = nullptr;
    prometheus::Family<prometheus::Gauge>* gauges = nullptr;
    prometheus::Family<prometheus::Histogram>* histograms = nullptr;
  };

  explicit Impl(std::string service);
  // The family called `name`, created on first use. Caller holds `mutex`. Throws
  // std::invalid_argument for a bad name or label name, or a name used with another type.
  Family& family(const std::string& name, const std::string& help, MetricType type,
                 const Labels& labels);

  const std::string service;
  const std::shared_ptr<prometheus::Registry> registry;  // outlives every handle
  std::mutex mutex;                                      // guards families
  std::map<std::string, Family> families;
};

}  // namespace spotlight::metrics
