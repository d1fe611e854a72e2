// deploy/redis/users.acl loaded into a real redis-server: every role can do its work through the
// real queue and stores, and an explorer's credentials cannot write the trainer's or the
// planner's keys, forge a task, overwrite or delete a result (issue #13.5).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/queue/redis_lease_queue.hpp"
#include "common/redis/client.hpp"
#include "common/redis/errors.hpp"
#include "common/run/run_config.hpp"
#include "common/run/task_key_source.hpp"
#include "common/store/redis_key_value_store.hpp"
#include "common/store/redis_weight_store.hpp"
#include "tests/support/redis_server.hpp"

namespace spotlight {
namespace {

const run::RunKeys kKeys("acl");

std::string password(const std::string& role) {
  return "test-" + role + "-password";
}

// users.acl with test passwords, in a temporary file.
class RenderedAcl {
 public:
  RenderedAcl() {
    const char* source = std::getenv("SPOTLIGHT_SOURCE_DIR");
    const std::filesystem::path dir = source ? source : ".";
    std::ifstream in(dir / "deploy/redis/users.acl");
    std::stringstream text;
    text << in.rdbuf();
    content_ = text.str();
    for (const std::string role : {"admin", "planner", "trainer", "explorer"}) {
      const std::string from = ">change-me-" + role;
      const auto at = content_.find(from);
      if (at != std::string::npos) content_.replace(at, from.size(), ">" + password(role));
    }
    path_ = std::filesystem::temp_directory_path() /
            ("spotlight-acl-" + std::to_string(::getpid()) + ".acl");
    std::ofstream(path_) << content_;
  }
  ~RenderedAcl() { std::filesystem::remove(path_); }
  const std::string& content() const { return content_; }
  std::string path() const { return path_.string(); }

 private:
  std::string content_;
  std::filesystem::path path_;
};

class RedisAclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SPOTLIGHT_REQUIRE_REDIS_SERVER();
    ASSERT_NE(acl_.content().find("user explorer"), std::string::npos) << "users.acl not found";
    testing::RedisServerOptions o;
    o.appendfsync = "everysec";
    o.user = "admin";
    o.password = password("admin");
    o.extra_args = {"--aclfile", acl_.path()};
    server_ = std::make_unique<testing::RedisServer>(o);
  }
  redis::RedisOptions as(const std::string& role) const {
    auto o = server_->client_options();
    o.user = role;
    o.password = password(role);
    return o;
  }
  queue::LeaseQueueOptions queue_options() const {
    queue::LeaseQueueOptions o;
    o.key_prefix = kKeys.explore_queue;
    o.block_timeout = std::chrono::milliseconds(0);
    return o;
  }
  // The Redis error code of `fn`, "" when it succeeded.
  static std::string code_of(const std::function<void()>& fn) {
    try {
      fn();
      return "";
    } catch (const redis::RedisCommandError& e) {
      return e.code();
    }
  }

  RenderedAcl acl_;
  std::unique_ptr<testing::RedisServer> server_;
};

TEST_F(RedisAclTest, EveryRoleDoesItsWorkAndExplorersCannotWriteWhatIsNotTheirs) {
  // Planner: the run's task key, a plan record, signed tasks.
  store::RedisKeyValueStore planner_kv(as("planner"), kKeys.prefix);
  const run::TaskKey key = run::planner_task_key(planner_kv);
  planner_kv.put("planner:plan:0", R"({"iteration":0,"candidates":2,"steps":4})");
  queue::RedisLeaseQueue planner_queue(as("planner"), queue_options());
  for (const char* id : {"i0/p0/c0", "i0/p0/c1", "i0/p0/c2"})
    planner_queue.enqueue(id, "task " + std::string(id));

  // Trainer: weights and its progress.
  store::WeightStoreOptions weights;
  weights.key_prefix = kKeys.prefix;
  store::RedisWeightStore trainer_weights(as("trainer"), weights);
  trainer_weights.publish(0, std::string(1000, 'w'));
  store::RedisKeyValueStore trainer_kv(as("trainer"), kKeys.prefix);
  trainer_kv.put(kKeys.trainer_iteration, "0");

  // Explorer: everything it does in a run.
  queue::RedisLeaseQueue explorer_queue(as("explorer"), queue_options());
  store::RedisKeyValueStore explorer_kv(as("explorer"), kKeys.prefix);
  store::RedisWeightStore explorer_weights(as("explorer"), weights);
  EXPECT_EQ(run::shared_task_key(explorer_kv)->id(), key.id());
  EXPECT_EQ(explorer_kv.counter(kKeys.trainer_iteration), 0);
  EXPECT_EQ(explorer_weights.fetch(0).value_or("").size(), 1000u);
  EXPECT_EQ(explorer_weights.latest_version(), 0);
  explorer_kv.put(kKeys.explorer_heartbeat("e1"), "1");
  explorer_kv.add("explorer:sample_steps", 8);
  explorer_kv.add("cost:spot:busy_ms", 5);
  explorer_kv.put("inflight:i0/p0/c0", "commit");
  EXPECT_EQ(explorer_kv.get("inflight:i0/p0/c0"), "commit");
  explorer_kv.erase("inflight:i0/p0/c0");
  auto leases = explorer_queue.lease("e1", 3, std::chrono::milliseconds(0));
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_TRUE(explorer_queue.extend(leases[0]));
  EXPECT_TRUE(explorer_queue.complete(leases[0], "result").recorded);
  EXPECT_EQ(explorer_queue.fail(leases[1], "sampling failed"), queue::FailOutcome::kRetry);
  EXPECT_EQ(explorer_queue.reject(leases[2], "unsigned"), queue::FailOutcome::kDeadLettered);
  const auto again = explorer_queue.reclaim("e2", std::chrono::milliseconds(0), 5);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(explorer_queue.release(again[0]));
  EXPECT_TRUE(
      explorer_queue
          .complete(explorer_queue.reclaim("e2", std::chrono::milliseconds(0), 5).at(0), "result-2")
          .recorded);

  // An explorer may not acknowledge: its completion and its dead letter wait, parked, for the
  // planner's reconciliation to acknowledge them (the results are readable at once).
  EXPECT_EQ(planner_queue.stats().acked_total, 0);
  const auto settled =
      planner_queue.reconcile(std::vector<std::string>{"i0/p0/c0", "i0/p0/c1", "i0/p0/c2"});
  EXPECT_EQ(settled.settled, 3);  // two completions, one dead letter
  EXPECT_TRUE(settled.requeued.empty());
  EXPECT_TRUE(settled.lost.empty());
  {
    const queue::QueueStats s = planner_queue.stats();
    EXPECT_EQ(s.acked_total, 2);
    EXPECT_EQ(s.dead_lettered_total, 1);
    EXPECT_EQ(s.length, 0);
  }

  // ... and nothing else.
  redis::RedisClient explorer(as("explorer"));
  const std::string p = kKeys.prefix + ":";
  const std::vector<std::vector<std::string>> denied = {
      {"SET", p + kKeys.trainer_iteration, "99"},
      {"SET", p + kKeys.trainer_timing, "{}"},
      {"SET", p + "planner:plan:1", "{}"},
      {"SET", p + "planner:enqueued", "5"},
      {"SET", p + "explorer:e1:seen", "1"},  // no such key any more
      {"SET", p + run::RunKeys::kTaskKey, "attacker's key"},
      {"DEL", p + "weights:latest"},
      {"SET", p + "weights:latest", "7"},
      {"HSET", p + "explore:results", "i0/p0/c0", "garbage"},  // overwrite a result
      {"HDEL", p + "explore:results", "i0/p0/c0"},
      {"DEL", p + "explore:results"},
      {"XADD", p + "explore:tasks", "*", "task", "forged", "payload", "x"},  // forge a task
      {"HSET", p + "explore:payloads", "i0/p0/c0", "x"},
      // The result bell: rung only by complete() (LPUSH + LTRIM in its script), never taken,
      // read or deleted by an explorer, and no other list is writable.
      {"BLPOP", p + "explore:notices", "0.01"},
      {"LPOP", p + "explore:notices"},
      {"LRANGE", p + "explore:notices", "0", "-1"},
      {"DEL", p + "explore:notices"},
      // Dead-lettered task ids: written only by the dead-lettering scripts, never read or deleted
      // by an explorer (a deleted mark would make the trainer wait for a task that is gone).
      {"HGET", p + "explore:dead_ids", "i0/p0/c2"},
      {"HDEL", p + "explore:dead_ids", "i0/p0/c2"},
      {"DEL", p + "explore:dead_ids"},
      {"LPUSH", p + "explore:results", "x"},
      {"LPUSH", p + kKeys.trainer_iteration, "x"},
      {"INCRBY", p + "cost:reserved:busy_ms", "1"},
      {"FLUSHALL"},
      {"CONFIG", "SET", "appendonly", "no"},
      {"KEYS", "*"},
      {"EVAL", "return 1", "0"},
  };
  // No task can vanish by an explorer's hand: it acknowledges and deletes nothing it did not
  // lease (nor anything else: the lease scripts park, the planner acknowledges).
  planner_queue.enqueue("i1/p0/c0", "task i1/p0/c0");
  planner_queue.enqueue("i1/p0/c1", "task i1/p0/c1");
  const auto others = queue::RedisLeaseQueue(as("explorer"), queue_options())
                          .lease("e3", 1, std::chrono::milliseconds(0));
  ASSERT_EQ(others.size(), 1u);
  const std::string waiting_entry = planner_queue.enqueue("i1/p0/c1", "").entry_id;
  for (const std::string& entry : {others[0].entry_id, waiting_entry}) {
    for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
             {"XACK", p + "explore:tasks", "explorers", entry},
             {"XDEL", p + "explore:tasks", entry},
             {"XTRIM", p + "explore:tasks", "MAXLEN", "0"},
             {"XGROUP", "DESTROY", p + "explore:tasks", "explorers"},
             {"XGROUP", "SETID", p + "explore:tasks", "explorers", "$"},
             {"XGROUP", "DELCONSUMER", p + "explore:tasks", "explorers", "e3"},
             {"XSETID", p + "explore:tasks", "99999999999999-0"},
             {"XAUTOCLAIM", p + "explore:tasks", "explorers", "e4", "0", "0-0", "JUSTID"},
             {"DEL", p + "explore:tasks"},
             {"UNLINK", p + "explore:tasks"},
             {"RENAME", p + "explore:tasks", p + "explore:stats"},
             {"HDEL", p + "explore:index", "i1/p0/c0"},
             {"HDEL", p + "explore:payloads", "i1/p0/c0"},
         }) {
      std::vector<std::string_view> words(argv.begin(), argv.end());
      EXPECT_EQ(code_of([&] { explorer.command(words); }), "NOPERM") << argv[0] << " " << argv[1];
    }
  }
  EXPECT_EQ(planner_queue.stats().length, 2);
  EXPECT_EQ(planner_queue.stats().leased, 1);

  for (const auto& argv : denied) {
    std::vector<std::string_view> words(argv.begin(), argv.end());
    EXPECT_EQ(code_of([&] { explorer.command(words); }), "NOPERM")
        << argv[0] << " " << argv[1 % argv.size()];
  }
  // A script of its own does not help: the commands inside are checked too.
  const std::string sha =
      explorer.command({"SCRIPT", "LOAD", "return redis.call('HSET', KEYS[1], 'i0/p0/c0', 'x')"})
          .as_string();
  EXPECT_NE(code_of([&] { explorer.command({"EVALSHA", sha, "1", p + "explore:results"}); }), "");
  EXPECT_EQ(code_of([&] {
              explorer.command({"EVALSHA", sha, "1", p + kKeys.trainer_iteration});
            }),
            "NOPERM");
  // Nor the queue's own enqueue script.
  EXPECT_THROW(explorer_queue.enqueue("i9/p0/c0", "forged"), queue::QueueError);
  // The results and the trainer's keys are as they were.
  EXPECT_EQ(trainer_kv.get(kKeys.trainer_iteration), "0");
  EXPECT_EQ(planner_queue.result("i0/p0/c0"), "result");
  EXPECT_EQ(planner_queue.stats().enqueued_total, 5);
  // The planner's reaper finds explorers and hands their leases back (raw commands it uses).
  redis::RedisClient planner(as("planner"));
  EXPECT_EQ(code_of([&] {
              planner.command({"SCAN", "0", "MATCH", p + "explorer:*:heartbeat", "COUNT", "100"});
              planner.command({"MGET", p + kKeys.explorer_heartbeat("e1")});
              planner.command({"XINFO", "CONSUMERS", p + "explore:tasks", "explorers"});
              planner.command({"XGROUP", "DELCONSUMER", p + "explore:tasks", "explorers", "e1"});
            }),
            "");
  // The trainer reads results in one HMGET and takes the bell the explorers' completions rang.
  queue::RedisLeaseQueue trainer_queue(as("trainer"), queue_options());
  const std::vector<std::string> ids = {"i0/p0/c0", "i0/p0/c1", "i0/p0/c2"};
  const auto found = trainer_queue.results(ids);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], "result");
  EXPECT_EQ(found[1], "result-2");                 // failed once, then reclaimed and completed
  EXPECT_EQ(found[2], std::nullopt);               // rejected
  const auto gone = trainer_queue.abandoned(ids);  // and the trainer can tell: dead-lettered
  ASSERT_EQ(gone.size(), 3u);
  EXPECT_FALSE(gone[0]);
  EXPECT_FALSE(gone[1]);
  ASSERT_TRUE(gone[2]);
  EXPECT_EQ(gone[2]->how, queue::Abandonment::kDeadLettered);
  EXPECT_EQ(gone[2]->reason, "unsigned");
  EXPECT_TRUE(trainer_queue.wait_result_notice(std::chrono::milliseconds(10)));
  EXPECT_FALSE(trainer_queue.wait_result_notice(std::chrono::milliseconds(10)));  // one flag
  // The trainer may quarantine a result (its role).
  EXPECT_TRUE(trainer_queue.quarantine("i0/p0/c0", "result", "test").quarantined);
  // Without credentials nothing works at all.
  auto anonymous = server_->client_options();
  anonymous.user.clear();
  anonymous.password.reset();
  EXPECT_THROW(redis::RedisClient(anonymous).command({"GET", p + kKeys.trainer_iteration}),
               redis::RedisError);
}

}  // namespace
}  // namespace spotlight
