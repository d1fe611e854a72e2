#include "common/metrics/metrics.hpp"

#include <cmath>
#include <mutex>
#include <stdexcept>
#include <variant>

#include <prometheus/check_names.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "common/metrics/detail/registry_impl.hpp"

namespace spotlight::metrics {
namespace {

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// "spotlight_<service>_<what>_<unit>"; the reason it is not, or empty.
std::string name_problem(std::string_view service, std::string_view name, MetricType type) {
  const std::string prefix = "spotlight_" + std::string(service) + "_";
  if (name.substr(0, prefix.size()) != prefix) return "must start with '" + prefix + "'";
  std::vector<std::string_view> segments;
  std::string_view rest = name.substr(prefix.size());
  for (;;) {
    const std::size_t cut = rest.find('_');
    segments.push_back(rest.substr(0, cut));
    if (cut == std::string_view::npos) break;
    rest.remove_prefix(cut + 1);
  }
  for (std::string_view s : segments) {
    if (s.empty()) return "must not have empty segments (\"__\" or a trailing '_')";
    for (char c : s) {
      if (!is_lower_alnum(c)) return "must use only [a-z0-9_]";
    }
  }
  if (segments.size() < 2) return "must be spotlight_<service>_<what>_<unit>";
  if (segments[0][0] >= '0' && segments[0][0] <= '9') return "<what> must start with a letter";
  const bool total = segments.back() == "total";
  if (type == MetricType::kCounter && !total) return "is a counter and must end in '_total'";
  if (type != MetricType::kCounter && total) return "is not a counter and must not end in '_total'";
  return {};
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "?";
}

}  // namespace

// ---- handles ----

void Counter::inc(double amount) const {
  if (impl_ != nullptr && amount >= 0.0) impl_->Increment(amount);
}
double Counter::value() const {
  return impl_ != nullptr ? impl_->Value() : 0.0;
}

void Gauge::set(double value) const {
  if (impl_ != nullptr) impl_->Set(value);
}
void Gauge::inc(double amount) const {
  if (impl_ != nullptr) impl_->Increment(amount);
}
void Gauge::dec(double amount) const {
  if (impl_ != nullptr) impl_->Decrement(amount);
}
double Gauge::value() const {
  return impl_ != nullptr ? impl_->Value() : 0.0;
}

void Histogram::observe(double value) const {
  if (impl_ != nullptr) impl_->Observe(value);
}
std::uint64_t Histogram::count() const {
  return impl_ != nullptr ? impl_->Collect().histogram.sample_count : 0;
}
double Histogram::sum() const {
  return impl_ != nullptr ? impl_->Collect().histogram.sample_sum : 0.0;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (!(start > 0.0) || !(factor > 1.0) || count < 1) {
    throw std::invalid_argument(
        "metrics: exponential_buckets needs start > 0, factor > 1, count >= 1");
  }
  std::vector<double> out;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor)
    out.push_back(bound);
  return out;
}

std::vector<double> linear_buckets(double start, double width, int count) {
  if (!std::isfinite(start) || !(width > 0.0) || count < 1) {
    throw std::invalid_argument(
        "metrics: linear_buckets needs finite start, width > 0, count >= 1");
  }
  std::vector<double> out;
  for (int i = 0; i < count; ++i)
    out.push_back(start + width * i);
  return out;
}

// ---- registry ----

Registry::Impl::Impl(std::string s)
    : service(std::move(s)), registry(std::make_shared<prometheus::Registry>()) {}

Registry::Impl::Family& Registry::Impl::family(const std::string& name, const std::string& help,
                                               MetricType type, const Labels& labels) {
  if (const std::string problem = name_problem(service, name, type); !problem.empty()) {
    throw std::invalid_argument("metrics: " + std::string(type_name(type)) + " name '" + name +
                                "' " + problem);
  }
  for (const auto& [label, value] : labels) {
    if (!prometheus::CheckLabelName(label)) {
      throw std::invalid_argument("metrics: '" + name + "': invalid label name '" + label + "'");
    }
  }
  auto it = families.find(name);
  if (it != families.end()) {
    if (it->second.type != type) {
      throw std::invalid_argument("metrics: '" + name + "' is already a " +
                                  std::string(type_name(it->second.type)) + ", not a " +
                                  std::string(type_name(type)));
    }
    return it->second;
  }
  Family f;
  f.type = type;
  switch (type) {
    case MetricType::kCounter:
      f.counters = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry);
      break;
    case MetricType::kGauge:
      f.gauges = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry);
      break;
    case MetricType::kHistogram:
      f.histograms = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry);
      break;
  }
  return families.emplace(name, f).first->second;
}

Registry::Registry(std::string service) {
  bool ok = !service.empty() && service[0] >= 'a' && service[0] <= 'z';
  for (char c : service)
    ok = ok && is_lower_alnum(c);
  if (!ok) {
    throw std::invalid_argument("metrics: service name '" + service +
                                "' must match [a-z][a-z0-9]*");
  }
  impl_ = std::make_shared<Impl>(std::move(service));
}

Registry::~Registry() = default;

const std::string& Registry::service() const {
  return impl_->service;
}

Counter Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  auto& f = impl_->family(name, help, MetricType::kCounter, labels);
  return Counter(&f.counters->Add(prometheus::Labels(labels.begin(), labels.end())));
}

Gauge Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(impl_->mutex);
  auto& f = impl_->family(name, help, MetricType::kGauge, labels);
  return Gauge(&f.gauges->Add(prometheus::Labels(labels.begin(), labels.end())));
}

Histogram Registry::histogram(const std::string& name, const std::string& help,
                              const std::vector<double>& buckets, const Labels& labels) {
  if (buckets.empty()) throw std::invalid_argument("metrics: '" + name + "': no buckets");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      throw std::invalid_argument("metrics: '" + name +
                                  "': buckets must be finite and strictly increasing");
    }
  }
  std::lock_guard lock(impl_->mutex);
  auto& f = impl_->family(name, help, MetricType::kHistogram, labels);
  return Histogram(&f.histograms->Add(prometheus::Labels(labels.begin(), labels.end()), buckets));
}

std::string Registry::text() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

}  // namespace spotlight::metrics
