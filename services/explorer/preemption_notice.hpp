#pragma once
// Preemption notices besides SIGTERM (issue #4): the way cloud metadata announces that a spot
// machine is about to go. Two sources, each optional:
//   file:  the notice is the file existing (its first line, if any, is the reason);
//   url:   http://host[:port]/path polled with GET: 200 with a body other than "FALSE" (GCP's
//          .../instance/preempted answers TRUE/FALSE) is a notice, the body its reason; 404 (AWS's
//          .../spot/instance-action before a notice) or any other status is none; a connection
//          error is none (logged once per kind), never a notice.
//
//   PreemptionWatcher w(options, [&](std::string reason) { loop.request_stop(); });
//
// The watcher polls both every poll_interval on its own thread and calls on_notice once, from that
// thread, for the first notice; the destructor stops and joins the thread.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace spotlight::explorer {

inline constexpr std::chrono::milliseconds kDefaultNoticePollInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultNoticeHttpTimeout{1000};

struct PreemptionNoticeOptions {
  std::string file;  // empty: off
  std::string url;   // empty: off; only http:// (metadata servers are plain HTTP on a link)
  std::chrono::milliseconds poll_interval = kDefaultNoticePollInterval;
  std::chrono::milliseconds http_timeout = kDefaultNoticeHttpTimeout;

  bool enabled() const { return !file.empty() || !url.empty(); }
  // Throws std::invalid_argument naming the bad field (a url that is not http://host[:port]/...).
  void validate() const;
};

// The reason of a notice at `path`, std::nullopt when the file does not exist.
std::optional<std::string> poll_notice_file(const std::string& path);

struct HttpResponse {
  int status = 0;
  std::string body;
};
// One GET of an http:// URL. Throws std::invalid_argument for a URL it cannot parse and
// std::runtime_error when the server cannot be reached or answers garbage within `timeout`.
HttpResponse http_get(const std::string& url, std::chrono::milliseconds timeout);

// The reason of a notice at `url`, std::nullopt when there is none (see the top of this file).
// Throws like http_get for an unreachable server.
std::optional<std::string> poll_notice_url(const std::string& url,
                                           std::chrono::milliseconds timeout);

class PreemptionWatcher {
 public:
  // Starts polling at once (no thread when !options.enabled()). Throws std::invalid_argument for
  // invalid options.
  PreemptionWatcher(PreemptionNoticeOptions options, std::function<void(std::string)> on_notice);
  ~PreemptionWatcher();
  PreemptionWatcher(const PreemptionWatcher&) = delete;
  PreemptionWatcher& operator=(const PreemptionWatcher&) = delete;

 private:
  void poll(std::stop_token stop);

  PreemptionNoticeOptions options_;
  std::function<void(std::string)> on_notice_;
  std::jthread thread_;
};

}  // namespace spotlight::explorer
