#pragma once
// Prometheus metrics of one service: a Registry that creates named metrics, and thin handles to
// update them. prometheus-cpp stays behind this header (pimpl).
//
//   auto registry = std::make_shared<metrics::Registry>("reward");
//   metrics::Counter requests = registry->counter("spotlight_reward_requests_total", "Requests.");
//   metrics::Counter bad = registry->counter("spotlight_reward_errors_total", "Error replies.",
//                                            {{"kind", "bad_prompt"}});
//   metrics::Histogram t = registry->histogram("spotlight_reward_score_seconds", "Scoring time.",
//                                              metrics::exponential_buckets(1e-5, 4, 10));
//   requests.inc();
//   t.observe(0.002);
//   // serve it: metrics::MetricsServer (common/metrics/server.hpp)
//
// Names (docs/operations.md): "spotlight_<service>_<what>_<unit>", lower-case segments
// [a-z0-9]+ joined by '_', <what> may have several segments; counters end in "_total" (their
// unit), gauges and histograms must not. A name breaking the pattern, a label name Prometheus
// rejects, or a name already used for another metric type is a programming error:
// std::invalid_argument naming the metric.
//
// Contract:
// - Registry is thread-safe. Asking again for the same name and labels returns a handle to the
//   same metric (help and buckets of the first call win).
// - Handles are cheap to copy and thread-safe to update; they stay valid while their Registry
//   lives. A default-constructed handle is detached: updates do nothing and reads return 0.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace spotlight::metrics {

// Label name -> value, e.g. {{"kind", "not_msgpack"}}.
using Labels = std::map<std::string, std::string>;

// A value that only goes up.
class Counter {
 public:
  Counter() = default;
  // Adds `amount`; negative amounts are ignored (a counter never decreases).
  void inc(double amount = 1.0) const;
  double value() const;

 private:
  friend class Registry;
  explicit Counter(prometheus::Counter* impl) : impl_(impl) {}
  prometheus::Counter* impl_ = nullptr;
};

// A value that goes up and down.
class Gauge {
 public:
  Gauge() = default;
  void set(double value) const;
  void inc(double amount = 1.0) const;
  void dec(double amount = 1.0) const;
  double value() const;

 private:
  friend class Registry;
  explicit Gauge(prometheus::Gauge* impl) : impl_(impl) {}
  prometheus::Gauge* impl_ = nullptr;
};

// Observations counted into fixed buckets, with their count and sum.
class Histogram {
 public:
  Histogram() = default;
  void observe(double value) const;
  std::uint64_t count() const;  // observations so far
  double sum() const;           // sum of the observations

 private:
  friend class Registry;
  explicit Histogram(prometheus::Histogram* impl) : impl_(impl) {}
  prometheus::Histogram* impl_ = nullptr;
};

// Bucket upper bounds start, start*factor, ..., `count` of them (start > 0, factor > 1).
std::vector<double> exponential_buckets(double start, double factor, int count);
// Bucket upper bounds start, start+width, ..., `count` of them (width > 0).
std::vector<double> linear_buckets(double start, double width, int count);

class Registry {
 public:
  // `service` is the <service> segment of every name here: [a-z][a-z0-9]*, e.g. "reward".
  // Throws std::invalid_argument otherwise.
  explicit Registry(std::string service);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  const std::string& service() const;

  Counter counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // `buckets`: strictly increasing upper bounds (+Inf is implicit); not empty.
  Histogram histogram(const std::string& name, const std::string& help,
                      const std::vector<double>& buckets, const Labels& labels = {});

  // Every metric in the Prometheus text exposition format (what GET /metrics serves).
  std::string text() const;

 private:
  friend class MetricsServer;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace spotlight::metrics
