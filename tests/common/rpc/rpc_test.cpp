#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/rpc/client.hpp"
#include "common/rpc/errors.hpp"
#include "common/rpc/server.hpp"

namespace spotlight::rpc {
namespace {

using namespace std::chrono_literals;

constexpr auto kLong = 5s;  // upper bound for things that must happen

std::vector<RpcReply> echo(std::vector<RpcRequest> batch) {
  std::vector<RpcReply> out;
  for (auto& r : batch)
    out.emplace_back("echo:" + r.payload);
  return out;
}

// An RpcServer serving on its own thread; stops and joins when destroyed.
class ServingServer {
 public:
  ServingServer(BatchHandler handler, RpcServerOptions options = {},
                const std::string& endpoint = "tcp://127.0.0.1:*")
      : server_(std::move(handler), options) {
    // A previous owner's listener is closed asynchronously by libzmq: retry until the port is
    // free (only matters when re-using a fixed endpoint).
    const auto deadline = std::chrono::steady_clock::now() + kLong;
    for (;;) {
      try {
        endpoint_ = server_.bind(endpoint);
        break;
      } catch (const RpcError&) {
        if (std::chrono::steady_clock::now() >= deadline) throw;
        std::this_thread::yield();
      }
    }
    thread_ = std::jthread([this](std::stop_token st) { server_.run(st); });
  }
  const std::string& endpoint() const { return endpoint_; }
  RpcServer& server() { return server_; }

 private:
  RpcServer server_;
  std::string endpoint_;
  std::jthread thread_;  // declared last: joined before server_ is destroyed
};

// A raw ZeroMQ ROUTER standing in for a server that misbehaves.
class RawRouter {
 public:
  RawRouter() : socket_(ctx_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }
  // Binds `endpoint`, retrying while a previous owner's listener still holds the port.
  explicit RawRouter(const std::string& endpoint) : socket_(ctx_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    const auto deadline = std::chrono::steady_clock::now() + kLong;
    for (;;) {
      try {
        socket_.bind(endpoint);
        break;
      } catch (const zmq::error_t&) {
        if (std::chrono::steady_clock::now() >= deadline) throw;
        std::this_thread::yield();
      }
    }
    endpoint_ = endpoint;
  }
  // The next message (all frames, routing id first), or empty after `timeout`.
  std::vector<zmq::message_t> receive(std::chrono::milliseconds timeout) {
    std::vector<zmq::message_t> parts;
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) > 0) {
      if (!zmq::recv_multipart(socket_, std::back_inserter(parts))) parts.clear();
    }
    return parts;
  }
  zmq::socket_t& socket() { return socket_; }
  const std::string& endpoint() const { return endpoint_; }

 private:
  zmq::context_t ctx_;
  zmq::socket_t socket_;
  std::string endpoint_;
};

std::string request_header(std::uint64_t id) {
  std::string h(1, '\x01');
  for (int shift = 56; shift >= 0; shift -= 8)
    h.push_back(static_cast<char>(id >> shift));
  return h;
}

std::uint64_t header_id(const zmq::message_t& header) {
  std::uint64_t id = 0;
  for (std::size_t i = 1; i < 9; ++i)
    id = (id << 8) | header.data<std::uint8_t>()[i];
  return id;
}

TEST(Rpc, RoundTrip) {
  ServingServer s(echo);
  EXPECT_TRUE(s.endpoint().starts_with("tcp://127.0.0.1:")) << s.endpoint();
  RpcClient client(s.endpoint());
  EXPECT_EQ(client.call("image-1", kLong), "echo:image-1");
  EXPECT_EQ(client.call(std::string("\0bin\xff", 5), kLong), std::string("echo:\0bin\xff", 10));
  EXPECT_EQ(client.call("", kLong), "echo:");
  const auto c = s.server().counters();
  EXPECT_EQ(c.requests, 3u);
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(c.malformed, 0u);
  EXPECT_EQ(client.counters().attempts, 3u);
}

TEST(Rpc, ConcurrentClientsAreBatched) {
  std::mutex mutex;
  std::vector<std::size_t> sizes;
  RpcServerOptions options;
  options.max_batch = 64;
  options.batch_window = 20ms;
  ServingServer s(
      [&](std::vector<RpcRequest> batch) {
        {
          std::lock_guard lock(mutex);
          sizes.push_back(batch.size());
        }
        return echo(std::move(batch));
      },
      options);

  constexpr int kClients = 16;
  constexpr int kCallsEach = 8;
  std::latch start(kClients);
  std::atomic<int> wrong{0};
  std::vector<std::jthread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RpcClient client(s.endpoint());
      start.arrive_and_wait();
      for (int i = 0; i < kCallsEach; ++i) {
        const std::string payload = std::to_string(c) + "/" + std::to_string(i);
        if (client.call(payload, kLong) != "echo:" + payload) ++wrong;
      }
    });
  }
  clients.clear();  // joins

  EXPECT_EQ(wrong.load(), 0);
  constexpr std::size_t kTotal = kClients * kCallsEach;
  std::lock_guard lock(mutex);
  std::size_t sum = 0;
  for (const auto n : sizes)
    sum += n;
  EXPECT_EQ(sum, kTotal);
  EXPECT_LT(sizes.size(), kTotal) << "every request had a handler call of its own";
  EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), 1u);
  EXPECT_EQ(s.server().counters().batches, sizes.size());
  EXPECT_EQ(s.server().counters().requests, kTotal);
}

TEST(Rpc, BatchesNeverExceedMaxBatch) {
  std::mutex mutex;
  std::vector<std::size_t> sizes;
  RpcServerOptions options;
  options.max_batch = 3;
  options.batch_window = 50ms;
  ServingServer s(
      [&](std::vector<RpcRequest> batch) {
        {
          std::lock_guard lock(mutex);
          sizes.push_back(batch.size());
        }
        return echo(std::move(batch));
      },
      options);
  constexpr int kClients = 10;
  std::latch start(kClients);
  std::vector<std::jthread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RpcClient client(s.endpoint());
      start.arrive_and_wait();
      EXPECT_EQ(client.call(std::to_string(c), kLong), "echo:" + std::to_string(c));
    });
  }
  clients.clear();
  std::lock_guard lock(mutex);
  EXPECT_GE(sizes.size(), 4u);  // ceil(10 / 3)
  for (const auto n : sizes)
    EXPECT_LE(n, 3u);
}

TEST(Rpc, HandlerErrorsReachTheCaller) {
  ServingServer s([](std::vector<RpcRequest> batch) {
    std::vector<RpcReply> out;
    for (auto& r : batch) {
      if (r.payload == "throw") throw std::runtime_error("scorer crashed");
      out.push_back(r.payload == "bad" ? RpcReply::error("cannot decode image")
                                       : RpcReply("ok:" + r.payload));
    }
    return out;
  });
  RpcClient client(s.endpoint());
  try {
    client.call("bad", kLong);
    FAIL() << "no error";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kHandlerError);
    EXPECT_EQ(e.message(), "cannot decode image");
  }
  try {
    client.call("throw", kLong);
    FAIL() << "no error";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kHandlerError);
    EXPECT_NE(e.message().find("scorer crashed"), std::string::npos) << e.message();
  }
  EXPECT_EQ(client.call("fine", kLong), "ok:fine");
  EXPECT_EQ(s.server().counters().errors, 2u);
  EXPECT_EQ(client.counters().remote_errors, 2u);
  EXPECT_EQ(client.counters().attempts, 3u);  // remote errors are not retried
}

TEST(Rpc, WrongReplyCountIsAnError) {
  ServingServer s([](std::vector<RpcRequest>) { return std::vector<RpcReply>{}; });
  RpcClient client(s.endpoint());
  try {
    client.call("x", kLong);
    FAIL() << "no error";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kHandlerError);
    EXPECT_NE(e.message().find("0 replies for 1 requests"), std::string::npos) << e.message();
  }
}

TEST(Rpc, TimeoutRaisesRpcTimeoutAfterAllRetries) {
  RawRouter silent;  // receives, never answers
  RpcClientOptions options;
  options.timeout = 50ms;
  options.retries = 2;
  RpcClient client(silent.endpoint(), options);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.call("hello");
    FAIL() << "no timeout";
  } catch (const RpcTimeout& e) {
    EXPECT_EQ(e.attempts(), 3);
    EXPECT_EQ(e.attempt_timeout(), 50ms);
    EXPECT_EQ(e.endpoint(), silent.endpoint());
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  const auto c = client.counters();
  EXPECT_EQ(c.attempts, 3u);
  EXPECT_EQ(c.timeouts, 3u);
  EXPECT_EQ(c.failed, 1u);
  // Every attempt reached the server with a fresh request id.
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto parts = silent.receive(kLong);
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(parts[3].to_string(), "hello");
    ids.push_back(header_id(parts[2]));
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
}

TEST(Rpc, RepliesToOtherRequestIdsAreIgnored) {
  RawRouter router;
  RpcClient client(router.endpoint());
  auto answer = std::async(std::launch::async, [&] {
    auto parts = router.receive(kLong);
    if (parts.size() != 4) return false;
    const std::uint64_t id = header_id(parts[2]);
    auto send_reply = [&](std::uint64_t reply_id, const std::string& body) {
      std::string header = request_header(reply_id) + std::string(1, '\0');
      std::vector<zmq::message_t> reply;
      reply.emplace_back(parts[0].data(), parts[0].size());
      reply.emplace_back();
      reply.emplace_back(header.data(), header.size());
      reply.emplace_back(body.data(), body.size());
      zmq::send_multipart(router.socket(), reply);
    };
    send_reply(id - 1, "late answer to an earlier attempt");
    send_reply(id, "fresh");
    return true;
  });
  EXPECT_EQ(client.call("q", kLong), "fresh");
  EXPECT_TRUE(answer.get());
  EXPECT_EQ(client.counters().stale_replies, 1u);
}

TEST(Rpc, ClientSurvivesServerRestart) {
  RpcClientOptions options;
  options.timeout = 200ms;
  options.retries = 20;
  auto first = std::make_unique<ServingServer>([](std::vector<RpcRequest> b) {
    std::vector<RpcReply> out;
    for (auto& r : b)
      out.emplace_back("first:" + r.payload);
    return out;
  });
  const std::string endpoint = first->endpoint();
  RpcClient client(endpoint, options);
  EXPECT_EQ(client.call("a"), "first:a");
  first.reset();  // the server dies

  // The replacement crashes too, after taking the request and before answering it ...
  auto crashing = std::make_unique<RawRouter>(endpoint);
  auto call = std::async(std::launch::async, [&] { return client.call("b"); });
  ASSERT_EQ(crashing->receive(kLong).size(), 4u);
  crashing.reset();

  // ... and a third one on the same endpoint answers the retry.
  ServingServer second(
      [](std::vector<RpcRequest> b) {
        std::vector<RpcReply> out;
        for (auto& r : b)
          out.emplace_back("second:" + r.payload);
        return out;
      },
      {}, endpoint);
  ASSERT_EQ(call.wait_for(kLong), std::future_status::ready);
  EXPECT_EQ(call.get(), "second:b");
  // The attempt the crashing server took ended by its closing the connection (or, on a slow
  // machine, by the attempt's timeout first), and was retried.
  EXPECT_GE(client.counters().timeouts + client.counters().disconnects, 1u);
  EXPECT_EQ(client.counters().failed, 0u);
  EXPECT_EQ(client.call("c"), "second:c");
}

// Sends raw frames from a DEALER and returns the status byte of the reply (-1: no reply).
int raw_status(zmq::socket_t& dealer, const std::vector<std::string>& frames) {
  std::vector<zmq::message_t> parts;
  for (const auto& f : frames)
    parts.emplace_back(f.data(), f.size());
  zmq::send_multipart(dealer, parts);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(kLong)) == 0) return -1;
  std::vector<zmq::message_t> reply;
  if (!zmq::recv_multipart(dealer, std::back_inserter(reply))) return -1;
  if (reply.size() != 3 || reply[1].size() != 10) return -2;
  return reply[1].data<std::uint8_t>()[9];
}

TEST(Rpc, MalformedFramesAreAnsweredAndCounted) {
  std::atomic<int> handled{0};
  ServingServer s([&](std::vector<RpcRequest> b) {
    handled += static_cast<int>(b.size());
    return echo(std::move(b));
  });
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(s.endpoint());
  const int kMalformed = static_cast<int>(RpcStatus::kMalformed);
  EXPECT_EQ(raw_status(dealer, {"junk"}), kMalformed);                               // 1 frame
  EXPECT_EQ(raw_status(dealer, {"", "short", "payload"}), kMalformed);               // bad header
  EXPECT_EQ(raw_status(dealer, {"", request_header(1), "p", "extra"}), kMalformed);  // 4 frames
  EXPECT_EQ(raw_status(dealer, {"x", request_header(2), "p"}), kMalformed);          // no delimiter
  std::string v2 = request_header(3);
  v2[0] = '\x02';  // unknown protocol version
  EXPECT_EQ(raw_status(dealer, {"", v2, "p"}), kMalformed);
  EXPECT_EQ(raw_status(dealer, {"", request_header(4), "p"}), 0);  // well-formed

  EXPECT_EQ(s.server().counters().malformed, 5u);
  EXPECT_EQ(handled.load(), 1);
  RpcClient client(s.endpoint());
  EXPECT_EQ(client.call("still serving", kLong), "echo:still serving");
}

TEST(Rpc, RejectsAreCountedByReasonAndReported) {
  std::mutex reasons_mutex;
  std::map<std::string, int> reasons;
  RpcServerOptions options;
  options.max_request_bytes = 16;
  options.on_reject = [&](std::string_view reason) {
    std::lock_guard lock(reasons_mutex);
    ++reasons[std::string(reason)];
  };
  ServingServer s(echo, options);
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(s.endpoint());
  const int kMalformed = static_cast<int>(RpcStatus::kMalformed);
  EXPECT_EQ(raw_status(dealer, {"junk"}), kMalformed);
  EXPECT_EQ(raw_status(dealer, {"", request_header(1), "p", "extra"}), kMalformed);
  EXPECT_EQ(raw_status(dealer, {"x", request_header(2), "p"}), kMalformed);
  EXPECT_EQ(raw_status(dealer, {"", "short", "p"}), kMalformed);
  EXPECT_EQ(raw_status(dealer, {"", request_header(3), std::string(17, 'x')}),
            static_cast<int>(RpcStatus::kTooLarge));
  EXPECT_EQ(raw_status(dealer, {"", request_header(4), std::string(16, 'x')}), 0);

  const RpcServerCounters c = s.server().counters();
  EXPECT_EQ(c.malformed, 5u);
  EXPECT_EQ(c.rejected_frame_count, 2u);
  EXPECT_EQ(c.rejected_delimiter, 1u);
  EXPECT_EQ(c.rejected_header, 1u);
  EXPECT_EQ(c.rejected_too_large, 1u);
  EXPECT_EQ(c.requests, 1u);
  std::lock_guard lock(reasons_mutex);  // the replies above were sent after the callbacks ran
  EXPECT_EQ(reasons, (std::map<std::string, int>{
                         {"frame_count", 2}, {"delimiter", 1}, {"header", 1}, {"too_large", 1}}));
}

TEST(Rpc, OversizedRequestsAreRejected) {
  std::atomic<int> handled{0};
  RpcServerOptions options;
  options.max_request_bytes = 1024;
  ServingServer s(
      [&](std::vector<RpcRequest> b) {
        handled += static_cast<int>(b.size());
        return echo(std::move(b));
      },
      options);
  RpcClient client(s.endpoint());
  try {
    client.call(std::string(4096, 'x'), kLong);
    FAIL() << "accepted";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kTooLarge);
    EXPECT_NE(e.message().find("4096"), std::string::npos) << e.message();
  }
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(s.server().counters().malformed, 1u);
  EXPECT_EQ(client.call(std::string(1024, 'y'), kLong), "echo:" + std::string(1024, 'y'));
}

// Above the transport limit libzmq cuts the connection: no reply, but the server lives on and
// the same client recovers on its next call. The client sees the connection close and ends each
// attempt then, not at its timeout (kLong here: a client that waited for it would spend three of
// them), and says why no reply came.
TEST(Rpc, FramesAboveMaxMessageSizeDropTheConnectionOnly) {
  RpcServerOptions options;
  options.max_message_size = 8192;
  ServingServer s(echo, options);
  RpcClient client(s.endpoint());  // 2 retries
  try {
    client.call(std::string(100 * 1024, 'x'), kLong);
    ADD_FAILURE() << "a request above the server's max_message_size was answered";
  } catch (const RpcConnectionClosed& e) {
    EXPECT_EQ(e.attempts(), 3);
    EXPECT_EQ(e.request_bytes(), 100u * 1024);
    EXPECT_NE(std::string(e.what()).find("102400 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.counters().disconnects, 3u);
  EXPECT_EQ(client.counters().timeouts, 0u);
  EXPECT_EQ(client.counters().failed, 1u);
  RpcClient other(s.endpoint());
  EXPECT_EQ(other.call("other", kLong), "echo:other");
  EXPECT_EQ(client.call("small", kLong), "echo:small");
  EXPECT_EQ(s.server().counters().requests, 2u);
}

// A RequestSink hands requests to another thread, which answers them later and out of order;
// the payload is the received frame itself, alive as long as the RpcCall.
TEST(Rpc, ASinkAnswersFromAnotherThreadInAnyOrder) {
  std::mutex mutex;
  std::condition_variable_any arrived;
  std::vector<RpcCall> calls;
  RpcServer server([&](RpcCall call) {
    std::lock_guard lock(mutex);
    calls.push_back(std::move(call));
    arrived.notify_one();
  });
  const std::string endpoint = server.bind("tcp://127.0.0.1:*");
  std::jthread loop([&](std::stop_token st) { server.run(st); });
  std::jthread answerer([&](std::stop_token st) {
    std::unique_lock lock(mutex);
    while (arrived.wait(lock, st, [&] { return calls.size() >= 2; })) {
      // Answer the newest first.
      for (auto it = calls.rbegin(); it != calls.rend(); ++it)
        server.reply(it->peer, it->id, RpcReply("got:" + std::string(it->payload.bytes())));
      calls.clear();
    }
  });
  auto a = std::async(std::launch::async, [&] { return RpcClient(endpoint).call("a", kLong); });
  auto b = std::async(std::launch::async, [&] { return RpcClient(endpoint).call("b", kLong); });
  EXPECT_EQ(a.get(), "got:a");
  EXPECT_EQ(b.get(), "got:b");
  EXPECT_EQ(server.counters().requests, 2u);
  server.stop();
}

TEST(Rpc, ASinkErrorReplyReachesTheCaller) {
  RpcServer* self = nullptr;
  RpcServer server([&](RpcCall call) { self->reply(call.peer, call.id, RpcReply::error("no")); });
  self = &server;
  const std::string endpoint = server.bind("tcp://127.0.0.1:*");
  std::jthread loop([&](std::stop_token st) { server.run(st); });
  try {
    RpcClient(endpoint).call("x", kLong);
    ADD_FAILURE() << "an error reply was returned as a result";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kHandlerError);
  }
  EXPECT_EQ(server.counters().errors, 1u);
}

// Frames beyond the protocol's three are read one by one and dropped: the reject names how many
// the message had.
TEST(Rpc, AMessageWithTooManyFramesIsRejectedWithItsFrameCount) {
  ServingServer s(echo);
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(s.endpoint());
  std::vector<std::string> frames = {"", request_header(9), "p"};
  for (int i = 0; i < 50; ++i)
    frames.push_back(std::string(1000, 'x'));
  std::vector<zmq::message_t> out;
  for (const auto& f : frames)
    out.emplace_back(f.data(), f.size());
  zmq::send_multipart(dealer, out);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, kLong), 1);
  std::vector<zmq::message_t> reply;
  ASSERT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(reply)));
  ASSERT_EQ(reply.size(), 3u);
  EXPECT_EQ(header_id(reply[1]), 9u);
  EXPECT_EQ(reply[1].data<std::uint8_t>()[9], static_cast<int>(RpcStatus::kMalformed));
  EXPECT_NE(reply[2].to_string().find("got 53"), std::string::npos) << reply[2].to_string();
  EXPECT_EQ(s.server().counters().rejected_frame_count, 1u);
}

// With max_message_bytes, a connection that sends more than that unanswered is closed before the
// server holds the message (libzmq would keep it whole until its last frame), the server counts
// it and goes on serving; requests within the limit, large ones included, are answered as before.
TEST(Rpc, AMessageAboveMaxMessageBytesClosesItsConnectionBeforeTheServerHoldsIt) {
  RpcServerOptions options;
  options.max_request_bytes = 64 * 1024;
  options.max_message_bytes = 96 * 1024;
  std::vector<std::string> rejects;  // on the run() thread, read after the counters show it
  std::mutex mutex;
  options.on_reject = [&](std::string_view reason) {
    std::lock_guard lock(mutex);
    rejects.emplace_back(reason);
  };
  ServingServer s(echo, options);
  RpcClient client(s.endpoint());
  EXPECT_EQ(client.call(std::string(60 * 1024, 'a'), kLong), "echo:" + std::string(60 * 1024, 'a'));
  try {
    client.call(std::string(80 * 1024, 'b'), kLong);  // within the message limit: answered
    ADD_FAILURE() << "a payload above max_request_bytes was accepted";
  } catch (const RpcRemoteError& e) {
    EXPECT_EQ(e.status(), RpcStatus::kTooLarge);
  }

  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(s.endpoint());
  std::vector<zmq::message_t> out;
  out.emplace_back();
  const std::string header = request_header(3);
  out.emplace_back(header.data(), header.size());
  for (int i = 0; i < 200; ++i)
    out.emplace_back(std::string(16 * 1024, 'x'));  // 3.2 MB in frames far below any limit
  zmq::send_multipart(dealer, out);
  const auto deadline = std::chrono::steady_clock::now() + kLong;
  while (s.server().counters().rejected_message_size == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  const auto counters = s.server().counters();
  EXPECT_EQ(counters.rejected_message_size, 1u);
  EXPECT_EQ(counters.rejected_frame_count, 0u);  // the server never saw the message
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(rejects, (std::vector<std::string>{"too_large", "message_size"}));
  }
  EXPECT_EQ(RpcClient(s.endpoint()).call("after", kLong), "echo:after");

  // An RpcClient's request above the limit: the relay closes the connection, and the client says
  // so instead of waiting out its timeouts.
  RpcClient big(s.endpoint());
  EXPECT_THROW(big.call(std::string(200 * 1024, 'c'), kLong), RpcConnectionClosed);
  EXPECT_EQ(big.counters().disconnects, 3u);
  EXPECT_EQ(big.counters().timeouts, 0u);

  // The limit must leave room for a whole request.
  RpcServerOptions bad;
  bad.max_request_bytes = 1024 * 1024;
  bad.max_message_bytes = 1024;
  EXPECT_THROW(RpcServer(echo, bad), RpcError);
}

TEST(Rpc, StopEndsRun) {
  RpcServer server(echo);
  server.bind("tcp://127.0.0.1:*");
  std::promise<void> done;
  std::thread loop([&] {
    server.run();
    done.set_value();
  });
  server.stop();
  EXPECT_EQ(done.get_future().wait_for(kLong), std::future_status::ready);
  loop.join();
  server.run();  // a stopped server returns at once
}

TEST(Rpc, BadOptionsAreRejected) {
  RpcServerOptions options;
  options.max_batch = 0;
  EXPECT_THROW(RpcServer(echo, options), RpcError);
  EXPECT_THROW(RpcServer(BatchHandler{}), RpcError);
  options = RpcServerOptions{};
  options.max_message_size = 10;
  EXPECT_THROW(RpcServer(echo, options), RpcError);
  RpcClientOptions client_options;
  client_options.retries = -1;
  EXPECT_THROW(RpcClient("tcp://127.0.0.1:1", client_options), RpcError);
  EXPECT_THROW(RpcClient(""), RpcError);
}

}  // namespace
}  // namespace spotlight::rpc
