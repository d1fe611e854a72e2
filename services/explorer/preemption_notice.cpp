#include "services/explorer/preemption_notice.hpp"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include <httplib.h>
#include <sys/stat.h>

#include "common/log/log.hpp"

namespace spotlight::explorer {
namespace {

struct Url {
  std::string host;
  std::string port = "80";
  std::string path = "/";
};

Url parse_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    throw std::invalid_argument("preemption notice url '" + url + "': only http:// is supported");
  }
  const std::string rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  Url u;
  if (slash != std::string::npos) u.path = rest.substr(slash);
  const auto colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  if (u.host.empty() || u.port.empty() ||
      !std::all_of(u.port.begin(), u.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("preemption notice url '" + url +
                                "': expected http://host[:port]/path");
  }
  return u;
}

std::string trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

}  // namespace

void PreemptionNoticeOptions::validate() const {
  if (!url.empty()) parse_url(url);
  if (poll_interval.count() <= 0) {
    throw std::invalid_argument("PreemptionNoticeOptions.poll_interval: must be > 0");
  }
  if (http_timeout.count() <= 0) {
    throw std::invalid_argument("PreemptionNoticeOptions.http_timeout: must be > 0");
  }
}

std::optional<std::string> poll_notice_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  line = trim(line);
  return line.empty() ? std::string("notice file ") + path : line;
}

HttpResponse http_get(const std::string& url, std::chrono::milliseconds timeout) {
  const Url u = parse_url(url);
  httplib::Client client("http://" + u.host + ":" + u.port);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  constexpr std::size_t kMaxResponse = 64 << 10;
  std::string body;
  // GCP's metadata server answers only requests that carry this header; AWS ignores it.
  const httplib::Headers headers = {{"Metadata-Flavor", "Google"}};
  const auto result = client.Get(u.path, headers, [&](const char* data, std::size_t size) {
    body.append(data, size);
    return body.size() <= kMaxResponse;
  });
  if (body.size() > kMaxResponse) throw std::runtime_error("response too large");
  if (!result) throw std::runtime_error("GET " + url + ": " + httplib::to_string(result.error()));
  return HttpResponse{result->status, std::move(body)};
}

std::optional<std::string> poll_notice_url(const std::string& url,
                                           std::chrono::milliseconds timeout) {
  const HttpResponse r = http_get(url, timeout);
  if (r.status != 200) return std::nullopt;
  std::string body = trim(r.body);
  std::string upper = body;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "FALSE") return std::nullopt;
  return body.empty() ? std::string("notice at ") + url : body;
}

PreemptionWatcher::PreemptionWatcher(PreemptionNoticeOptions options,
                                     std::function<void(std::string)> on_notice)
    : options_((options.validate(), std::move(options))), on_notice_(std::move(on_notice)) {
  if (options_.enabled()) thread_ = std::jthread([this](std::stop_token stop) { poll(stop); });
}

PreemptionWatcher::~PreemptionWatcher() = default;  // jthread: request_stop + join

void PreemptionWatcher::poll(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::string last_error;
  while (!stop.stop_requested()) {
    std::optional<std::string> reason;
    if (!options_.file.empty()) reason = poll_notice_file(options_.file);
    if (!reason && !options_.url.empty()) {
      try {
        reason = poll_notice_url(options_.url, options_.http_timeout);
      } catch (const std::exception& e) {
        if (last_error != e.what())
          log::warn("preemption notice url {}: {}", options_.url, e.what());
        last_error = e.what();
      }
    }
    if (reason) {
      on_notice_(*reason);
      return;
    }
    std::unique_lock lock(mutex);
    wake.wait_for(lock, stop, options_.poll_interval, [] { return false; });
  }
}

}  // namespace spotlight::explorer
