#pragma once
// FairQueue: the reward service's admission control and scheduling (issue #13.4), as plain logic
// without sockets or threads. Jobs (requests) queue per client. While several clients wait, a
// batch holds the whole of what every light client has pending (at most `client_units` units,
// images, each: small requests) and one share (`client_units`) of one heavy client, the heavy
// clients taking turns. So a small request waits for the batch in progress and its own, each at
// most one heavy share beside the small requests, however large the heavy ones are; heavy
// clients get a share each in turn, and a client that sends huge requests never gets more than
// one that sends small ones.
//
//   FairQueue queue(options);
//   if (queue.admit(job) != Admission::kAdmitted) answer "busy";       // memory budget
//   for (const Slice& s : queue.take()) score units [s.begin, s.end) of s.job;
//   queue.finish(job);                      // when answered: frees its bytes and its place
//
// take() is equivalent to:
//
//   active = clients with a job that has unscheduled units, in round-robin order from `cursor`
//   if |active| == 1: that client may fill the batch (up to max_batch_units)
//   else: active = [the first heavy client in active, if any] + every light client in active
//         (light: its unscheduled units all fit in one share, <= client_units)
//   for client in active:                       // each at most once
//     share = client_units (the lone client: max_batch_units)
//     for job in client's jobs, oldest first, while share > 0 and the batch has room:
//       slice = the next min(share, room, job's unscheduled units) units of job
//     move client to the back of the round-robin order
//   stop at max_batch_units units or max_batch_slices slices
//
// Budget: a job holds its `bytes` from admit() to finish(); admit() refuses a job that would take
// the total above max_bytes or its client above max_client_bytes. A job of 0 units is admitted
// and returned by no take(); finish it at once.
//
// Thread-compatible: the caller locks.

#include <cstddef>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spotlight::reward {

struct FairQueueOptions {
  std::size_t client_units = 8;       // a client's share of one batch when several wait, >= 1
  std::size_t max_batch_units = 256;  // >= client_units
  std::size_t max_batch_slices = 32;  // >= 1
  std::size_t max_bytes = std::size_t{512} << 20;         // all jobs held
  std::size_t max_client_bytes = std::size_t{128} << 20;  // one client's jobs held

  // Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

// What the queue needs of a job; the reward service derives its requests from it.
struct FairJob {
  virtual ~FairJob() = default;
  std::string client;         // the fairness key (one per client connection)
  std::size_t units = 0;      // work (images)
  std::size_t bytes = 0;      // memory held until finish()
  std::size_t scheduled = 0;  // units handed out by take() so far
};

enum class Admission { kAdmitted, kOverBudget, kClientOverBudget };

class FairQueue {
 public:
  struct Slice {
    std::shared_ptr<FairJob> job;
    std::size_t begin = 0;  // units [begin, end) of the job
    std::size_t end = 0;
  };

  // Throws std::invalid_argument for invalid options.
  explicit FairQueue(FairQueueOptions options);

  Admission admit(std::shared_ptr<FairJob> job);
  std::vector<Slice> take();
  // Removes `job` (scheduled or not) and frees its bytes; a job not queued is ignored.
  void finish(const std::shared_ptr<FairJob>& job);
  // Stops scheduling the rest of `job` (e.g. it failed); finish() it once its slices are done.
  void cancel(const std::shared_ptr<FairJob>& job);

  bool has_work() const;  // some job has unscheduled units
  std::size_t jobs() const { return jobs_; }
  std::size_t bytes() const { return bytes_; }
  std::size_t unscheduled_units() const;
  const FairQueueOptions& options() const { return options_; }

 private:
  struct Client {
    std::deque<std::shared_ptr<FairJob>> jobs;  // oldest first, until finished
    std::size_t bytes = 0;
    std::list<std::string>::iterator position;  // in order_
  };
  static bool pending(const FairJob& job) { return job.scheduled < job.units; }
  bool client_pending(const Client& c) const;
  static std::size_t pending_units(const Client& c);

  FairQueueOptions options_;
  std::map<std::string, Client> clients_;
  std::list<std::string> order_;  // round-robin order of the clients in clients_
  std::size_t jobs_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace spotlight::reward
