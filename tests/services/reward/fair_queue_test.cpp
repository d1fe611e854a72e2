// FairQueue: the reward service's scheduling and memory budget as plain logic (no sockets).

#include "services/reward/fair_queue.hpp"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace spotlight::reward {
namespace {

std::shared_ptr<FairJob> job(const std::string& client, std::size_t units, std::size_t bytes = 1) {
  auto j = std::make_shared<FairJob>();
  j->client = client;
  j->units = units;
  j->bytes = bytes;
  return j;
}

// Units per client in one batch.
std::map<std::string, std::size_t> shares(const std::vector<FairQueue::Slice>& slices) {
  std::map<std::string, std::size_t> out;
  for (const auto& s : slices)
    out[s.job->client] += s.end - s.begin;
  return out;
}

FairQueueOptions options(std::size_t client_units, std::size_t max_batch_units) {
  FairQueueOptions o;
  o.client_units = client_units;
  o.max_batch_units = max_batch_units;
  return o;
}

TEST(FairQueue, ASmallRequestWaitsForOneHeavyShareBesideHugeOnes) {
  FairQueue q(options(8, 256));
  for (const char* heavy : {"h1", "h2", "h3", "h4"})
    ASSERT_EQ(q.admit(job(heavy, 5000)), Admission::kAdmitted);
  // Heavy clients take turns, one share per batch.
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"h1", 8}}));
  // Two small requests arrive while that batch is scored: the next batch holds all of both and
  // the next heavy client's share, nothing more.
  const auto light = job("good", 4), other = job("other", 8);
  ASSERT_EQ(q.admit(light), Admission::kAdmitted);
  ASSERT_EQ(q.admit(other), Admission::kAdmitted);
  EXPECT_EQ(shares(q.take()),
            (std::map<std::string, std::size_t>{{"h2", 8}, {"good", 4}, {"other", 8}}));
  EXPECT_EQ(light->scheduled, 4u);
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"h3", 8}}));
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"h4", 8}}));
  // Slices continue where the last one ended.
  const auto fifth = q.take();
  ASSERT_EQ(fifth.size(), 1u);
  EXPECT_EQ(fifth[0].job->client, "h1");
  EXPECT_EQ(fifth[0].begin, 8u);
  EXPECT_EQ(fifth[0].end, 16u);
}

// However many small requests wait, every batch keeps one share for a heavy client.
TEST(FairQueue, SmallRequestsNeverCrowdOutTheHeavyShare) {
  FairQueue q(options(8, 64));
  const auto heavy = job("heavy", 1000);
  q.admit(heavy);
  for (int c = 0; c < 40; ++c)
    q.admit(job("small-" + std::to_string(c), 8));
  for (int round = 0; round < 5; ++round) {
    const auto batch = shares(q.take());
    EXPECT_EQ(batch.at("heavy"), 8u) << "round " << round;
    EXPECT_EQ(batch.size(), 8u) << "round " << round;  // the heavy share and 7 small requests
  }
  EXPECT_EQ(heavy->scheduled, 5u * 8u);
}

TEST(FairQueue, ALoneClientFillsTheBatchAndKeepsItsOrder) {
  FairQueue q(options(8, 100));
  const auto a = job("c", 60), b = job("c", 60);
  q.admit(a);
  q.admit(b);
  const auto batch = q.take();
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].job, a);
  EXPECT_EQ(batch[0].end - batch[0].begin, 60u);
  EXPECT_EQ(batch[1].job, b);
  EXPECT_EQ(batch[1].end - batch[1].begin, 40u);
  EXPECT_EQ(q.unscheduled_units(), 20u);
}

TEST(FairQueue, ClientsTheBatchHadNoRoomForGoFirstNextTime) {
  FairQueue q(options(10, 20));  // room for two clients' shares per batch
  q.admit(job("heavy", 1000));
  for (const char* c : {"a", "b", "c"})
    q.admit(job(c, 10));
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"heavy", 10}, {"a", 10}}));
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"heavy", 10}, {"b", 10}}));
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"heavy", 10}, {"c", 10}}));
}

TEST(FairQueue, TheBudgetIsCheckedAtAdmissionAndFreedByFinish) {
  FairQueueOptions o;
  o.max_bytes = 100;
  o.max_client_bytes = 60;
  FairQueue q(o);
  const auto a1 = job("a", 1, 50);
  EXPECT_EQ(q.admit(a1), Admission::kAdmitted);
  EXPECT_EQ(q.admit(job("a", 1, 20)), Admission::kClientOverBudget);
  EXPECT_EQ(q.admit(job("b", 1, 50)), Admission::kAdmitted);
  EXPECT_EQ(q.admit(job("c", 1, 1)), Admission::kOverBudget);
  EXPECT_EQ(q.bytes(), 100u);
  EXPECT_EQ(q.jobs(), 2u);
  q.finish(a1);
  q.finish(a1);  // ignored
  EXPECT_EQ(q.bytes(), 50u);
  EXPECT_EQ(q.admit(job("c", 1, 50)), Admission::kAdmitted);
}

TEST(FairQueue, CancelledAndFinishedJobsAreNotScheduled) {
  FairQueue q(options(4, 100));
  const auto a = job("a", 100), b = job("b", 100);
  q.admit(a);
  q.admit(b);
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"a", 4}}));
  q.cancel(a);
  EXPECT_EQ(shares(q.take()), (std::map<std::string, std::size_t>{{"b", 100}}));
  q.finish(a);
  q.finish(b);
  EXPECT_FALSE(q.has_work());
  EXPECT_EQ(q.jobs(), 0u);
  EXPECT_TRUE(q.take().empty());
  // Zero units: admitted, never scheduled.
  const auto empty = job("e", 0);
  EXPECT_EQ(q.admit(empty), Admission::kAdmitted);
  EXPECT_FALSE(q.has_work());
}

TEST(FairQueue, OptionsAreValidated) {
  EXPECT_THROW(FairQueue(options(0, 10)), std::invalid_argument);
  EXPECT_THROW(FairQueue(options(20, 10)), std::invalid_argument);
  FairQueueOptions o;
  o.max_client_bytes = o.max_bytes + 1;
  EXPECT_THROW(FairQueue{o}, std::invalid_argument);
  FairQueueOptions slices;
  slices.max_batch_slices = 0;
  EXPECT_THROW(FairQueue{slices}, std::invalid_argument);
}

}  // namespace
}  // namespace spotlight::reward
