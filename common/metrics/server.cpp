#include "common/metrics/server.hpp"

#include <charconv>
#include <vector>

#include <prometheus/exposer.h>

#include "common/metrics/detail/registry_impl.hpp"

namespace spotlight::metrics {
namespace {

struct HostPort {
  std::string host;
  int port = 0;
};

std::optional<HostPort> split_bind(const std::string& bind) {
  const std::size_t colon = bind.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == bind.size()) return std::nullopt;
  HostPort out;
  out.host = bind.substr(0, colon);
  const std::string port = bind.substr(colon + 1);
  if (port.size() > 5) return std::nullopt;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || out.port > 65535) {
    return std::nullopt;
  }
  // Commas separate several listeners in CivetWeb's syntax; spaces are never valid.
  if (out.host.find_first_of(", \t") != std::string::npos) return std::nullopt;
  const bool v6 = out.host.front() == '[';
  if (v6 != (out.host.back() == ']')) return std::nullopt;
  if (!v6 && out.host.find(':') != std::string::npos) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> bind_problem(const std::string& bind) {
  if (bind.empty() || split_bind(bind)) return std::nullopt;
  return "must be empty or HOST:PORT with PORT in [0, 65535]";
}

struct MetricsServer::Impl {
  std::shared_ptr<prometheus::Registry> registry;  // kept alive while served
  std::unique_ptr<prometheus::Exposer> exposer;
  std::string host;
  std::uint16_t port = 0;
};

MetricsServer::MetricsServer(const Registry& registry, const MetricsServerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const auto hp = split_bind(options.bind);
  if (!hp) {
    throw std::invalid_argument("metrics: bind address '" + options.bind +
                                "' must be HOST:PORT with PORT in [0, 65535]");
  }
  if (options.threads < 1) throw std::invalid_argument("metrics: threads must be >= 1");
  impl_->registry = registry.impl_->registry;
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(options.bind, options.threads);
  } catch (const std::exception& e) {
    throw MetricsError("metrics: cannot listen on '" + options.bind + "': " + e.what());
  }
  impl_->exposer->RegisterCollectable(impl_->registry);
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  if (ports.empty() || ports[0] <= 0) {
    throw MetricsError("metrics: '" + options.bind + "': no listening port reported");
  }
  impl_->host = hp->host;
  impl_->port = static_cast<std::uint16_t>(ports[0]);
}

MetricsServer::~MetricsServer() = default;

std::unique_ptr<MetricsServer> MetricsServer::start(const Registry& registry,
                                                    const MetricsServerOptions& options) {
  if (options.bind.empty()) return nullptr;
  return std::make_unique<MetricsServer>(registry, options);
}

std::uint16_t MetricsServer::port() const {
  return impl_->port;
}

std::string MetricsServer::address() const {
  return impl_->host + ":" + std::to_string(impl_->port);
}

std::string MetricsServer::url() const {
  return "http://" + address() + "/metrics";
}

config::Schema metrics_schema(std::string default_bind) {
  config::Schema schema;
  schema.add(
      config::Entry::string("metrics.bind", std::move(default_bind),
                            "Prometheus endpoint HOST:PORT serving /metrics (port 0: a "
                            "free port, logged at start; empty: metrics not served).")
          .check("must be empty or HOST:PORT with PORT in [0, 65535]", [](const config::Value& v) {
            return !bind_problem(std::get<std::string>(v)).has_value();
          }));
  return schema;
}

MetricsServerOptions metrics_server_options(const config::Config& config) {
  MetricsServerOptions options;
  options.bind = config.get_string("metrics.bind");
  return options;
}

}  // namespace spotlight::metrics
