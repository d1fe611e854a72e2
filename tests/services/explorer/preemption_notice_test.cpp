// Preemption notices from a file and from a metadata-style HTTP endpoint (a real loopback server
// in a thread), and the watcher that turns the first one into a callback.

#include "services/explorer/preemption_notice.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/process.hpp"

namespace spotlight::explorer {
namespace {

using namespace std::chrono_literals;

// Answers every GET with the current (status, body), one connection at a time.
class MetadataServer {
 public:
  MetadataServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 8) != 0)
      throw std::runtime_error("cannot listen");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~MetadataServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void set(int status, std::string body) {
    std::lock_guard lock(mutex_);
    status_ = status;
    body_ = std::move(body);
  }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stopping_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      char buffer[2048];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      std::string response;
      {
        std::lock_guard lock(mutex_);
        response = "HTTP/1.1 " + std::to_string(status_) +
                   " X\r\nContent-Length: " + std::to_string(body_.size()) +
                   "\r\nConnection: close\r\n\r\n" + body_;
      }
      ::send(c, response.data(), response.size(), MSG_NOSIGNAL);
      ::close(c);
      ++requests_;
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  int status_ = 404;
  std::string body_ = "not found";
  std::thread thread_;
};

TEST(PreemptionNotice, FileAppearingIsANoticeWithItsFirstLineAsReason) {
  const auto dir = spotlight::testing::make_temp_dir("notice");
  const auto path = (dir / "preempt").string();
  EXPECT_FALSE(poll_notice_file(path).has_value());
  { std::ofstream(path) << "spot reclaim\nmore\n"; }
  EXPECT_EQ(poll_notice_file(path), "spot reclaim");
  std::filesystem::remove_all(dir);
}

TEST(PreemptionNotice, UrlFollowsAwsAndGcpConventions) {
  MetadataServer server;
  const auto url = server.url("/latest/meta-data/spot/instance-action");
  EXPECT_FALSE(poll_notice_url(url, 2s).has_value());  // 404: none (AWS before a notice)
  server.set(200, "FALSE");
  EXPECT_FALSE(poll_notice_url(url, 2s).has_value());  // GCP's preempted = FALSE
  server.set(200, R"({"action":"terminate","time":"2026-11-30T06:00:00Z"})");
  EXPECT_EQ(poll_notice_url(url, 2s), R"({"action":"terminate","time":"2026-11-30T06:00:00Z"})");
  server.set(200, "TRUE\n");
  EXPECT_EQ(poll_notice_url(url, 2s), "TRUE");
  server.set(500, "oops");
  EXPECT_FALSE(poll_notice_url(url, 2s).has_value());
}

TEST(PreemptionNotice, UnreachableOrInvalidUrls) {
  const int port = spotlight::testing::free_port();  // nobody listens there
  EXPECT_THROW(poll_notice_url("http://127.0.0.1:" + std::to_string(port) + "/x", 2s),
               std::exception);
  EXPECT_THROW(poll_notice_url("https://example/x", 1s), std::invalid_argument);
  PreemptionNoticeOptions o;
  o.url = "ftp://x";
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o.url = "http://host:port/";
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o.url = "http://169.254.169.254/computeMetadata/v1/instance/preempted";
  EXPECT_NO_THROW(o.validate());
}

// The watcher calls back once, from its thread, on the first notice of either source.
TEST(PreemptionWatcher, CallsBackOnceWhenTheUrlAnnouncesANotice) {
  MetadataServer server;
  std::mutex mutex;
  std::condition_variable changed;
  int calls = 0;
  std::string reason;
  PreemptionNoticeOptions o;
  o.url = server.url("/preempted");
  o.file = (std::filesystem::temp_directory_path() / "spotlight-no-such-notice-file").string();
  o.poll_interval = 20ms;
  PreemptionWatcher watcher(o, [&](std::string r) {
    std::lock_guard lock(mutex);
    ++calls;
    reason = std::move(r);
    changed.notify_all();
  });
  {
    std::unique_lock lock(mutex);
    // Polled a few times with no notice.
    ASSERT_FALSE(changed.wait_for(lock, 200ms, [&] { return calls > 0; }));
  }
  EXPECT_GE(server.requests(), 2);
  server.set(200, "TRUE");
  std::unique_lock lock(mutex);
  ASSERT_TRUE(changed.wait_for(lock, 30s, [&] { return calls > 0; }));
  EXPECT_EQ(reason, "TRUE");
  // The server may count the announcing request only after its answer went out, so the count is
  // taken once a poll interval has passed many times over; no request may follow it.
  changed.wait_for(lock, 200ms, [&] { return calls > 1; });
  const int requests = server.requests();
  changed.wait_for(lock, 200ms, [&] { return calls > 1; });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(server.requests(), requests);  // it stopped polling
}

TEST(PreemptionWatcher, DoesNothingWhenNoSourceIsConfigured) {
  std::atomic<int> calls{0};
  PreemptionWatcher watcher(PreemptionNoticeOptions{}, [&](std::string) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace spotlight::explorer
