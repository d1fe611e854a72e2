#include "services/reward/reward_service.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "common/log/log.hpp"
#include "common/task/prompt.hpp"
#include "common/wire/codec.hpp"
#include "common/wire/error.hpp"
#include "common/wire/messages.hpp"
#include "services/reward/fair_queue.hpp"
#include "services/reward/reclaimer.hpp"

namespace spotlight::reward {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kBadImage = "bad_image";
constexpr std::string_view kBadPrompt = "bad_prompt";
constexpr std::string_view kNonFinite = "non_finite";
constexpr std::string_view kScoreFailed = "score_failed";
constexpr std::string_view kOverBudget = "over_budget";

// Frames up to max_request_bytes + this still get a polite "too large" answer; larger ones are
// dropped by libzmq as soon as their size arrives, before any of it is buffered.
constexpr std::int64_t kFrameHeadroom = std::int64_t{1} << 20;
// The request's other frames and the ZMTP/CURVE framing of all three.
constexpr std::int64_t kMessageHeadroom = std::int64_t{64} << 10;
// Memory goes back to the system when the queue empties after this much was released.
constexpr std::size_t kTrimAfterBytes = std::size_t{1} << 20;
// ... and once it has stayed empty this long: memory goes back after a load, not between the
// requests of one (each large request would fault all its pages in again, on the I/O thread that
// every client's messages go through).
constexpr std::chrono::milliseconds kTrimAfterIdle{500};

constexpr wire::WireErrorKind kWireErrorKinds[] = {
    wire::WireErrorKind::kTooLarge,       wire::WireErrorKind::kNotMsgpack,
    wire::WireErrorKind::kBadEnvelope,    wire::WireErrorKind::kUnknownType,
    wire::WireErrorKind::kUnexpectedType, wire::WireErrorKind::kUnsupportedVersion,
    wire::WireErrorKind::kMissingField,   wire::WireErrorKind::kWrongType,
    wire::WireErrorKind::kBadValue,
};

// One admitted request: its bytes stay in the received frame; the decoded view points into them.
struct Job final : FairJob {
  std::uint64_t rpc_id = 0;
  rpc::RpcPayload payload;
  wire::RewardRequestView request;
  std::vector<double> rewards;
  std::vector<bool> correct;
  std::size_t scored = 0;
  std::string error;       // non-empty: answered with it
  std::string error_kind;  // errors_total label
  std::size_t index = 0;   // in handle()'s batch
  bool done() const { return !error.empty() || scored == static_cast<std::size_t>(request.count); }
};

std::string error_reply(const std::string& request_id, const std::string& message) {
  wire::RewardReply reply;
  reply.request_id = request_id;
  reply.error = message;
  return reply.encode();
}

// Scores declare the reward function's range, which clients check every reward against.
std::string reply_body(const Job& job, const RewardRange& range) {
  if (!job.error.empty()) return error_reply(job.request.request_id, job.error);
  wire::RewardReply reply;
  reply.request_id = job.request.request_id;
  reply.rewards = job.rewards;
  reply.correct = job.correct;
  reply.range = {range.lo, range.hi};
  return reply.encode();
}

// Why a request cannot be admitted.
struct Rejection {
  std::string kind;  // metric label
  std::string message;
  std::string request_id;  // empty when the request could not be decoded
  bool wire = false;       // the message itself was malformed (not its content)
};

}  // namespace

struct RewardService::Impl {
  Impl(std::unique_ptr<RewardFunction> r, RewardServiceOptions o,
       std::shared_ptr<metrics::Registry> reg);

  // Decodes and checks one request (not its prompts or pixels: those are checked per slice).
  std::optional<Rejection> prepare(Job& job) const;
  // Scores `slices` in one reward call; failures become the jobs' errors.
  void score(const std::vector<FairQueue::Slice>& slices);
  // The prompts and images of one reward call, and which job's units they are.
  struct ScoreBatch {
    struct Part {
      Job* job;
      std::size_t begin, end;
    };
    std::vector<Part> parts;
    std::vector<task::Prompt> prompts;
    std::vector<task::Image> images;
  };
  struct SliceProblem {
    std::string kind;     // the error counter's label
    std::string message;  // the reply's error text
  };
  // Appends the slice's prompts and images to `batch` (the caller drops them on a problem): a
  // prompt that is not one of the task's, or a pixel that is not finite, is the slice's problem.
  std::optional<SliceProblem> decode_slice(const Job& job, const FairQueue::Slice& slice,
                                           ScoreBatch& batch) const;
  // Runs the reward function over the batch; returns why it failed (empty: `scores` holds one
  // score per image).
  std::string call_reward(const ScoreBatch& batch, std::vector<Scored>& scores);
  // Writes the scores into their jobs and updates the batch metrics.
  void record_scores(const ScoreBatch& batch, const std::vector<Scored>& scores);
  void count_error(std::string_view kind, std::size_t n = 1);
  void count_rejected(std::string_view reason) {
    auto it = rejected.find(reason);
    if (it != rejected.end()) it->second.inc();
  }
  void reject(const Rejection& r) {
    malformed.inc();
    count_error(r.kind);
    if (r.wire) count_rejected(r.kind);
  }

  // The reading thread's side: admit or answer at once.
  void on_call(rpc::RpcCall call);
  // The scoring thread: until `stop`, then stops the server.
  void score_loop(std::stop_token stop);
  // Posts the reply of a finished job, which it holds until sent (then the reclaimer frees it).
  void answer(std::shared_ptr<FairJob> job);

  std::unique_ptr<RewardFunction> reward;
  // reward->range(), taken once: replies are built on other threads than the one that scores.
  RewardRange declared_range;
  RewardServiceOptions options;
  std::shared_ptr<metrics::Registry> registry;
  std::mutex handle_mutex;  // one batch at a time through the (thread-compatible) reward
  Reclaimer reclaimer;      // before server: the replies the server still holds release into it
  std::optional<rpc::RpcServer> server;

  std::mutex mutex;  // guards queue, first_waiting
  std::condition_variable_any work;
  FairQueue queue;
  std::optional<Clock::time_point> first_waiting;  // arrival that ended an idle spell
  std::stop_source stopping;
  std::size_t released_since_trim = 0;  // scoring thread only

  metrics::Counter requests, batches, images_scored, correct, malformed;
  std::map<std::string, metrics::Counter, std::less<>> errors;  // by kind
  // Messages rejected before scoring (RPC framing, size, wire decoding, budget), by reason.
  std::map<std::string, metrics::Counter, std::less<>> rejected;
  metrics::Histogram batch_requests, batch_images, score_seconds;
  metrics::Gauge reward_mean, reward_std, queued_bytes, queued_requests;
};

namespace {

FairQueueOptions fair_queue_options(const RewardServiceOptions& o) {
  FairQueueOptions q;
  q.client_units = o.client_images_per_batch;
  q.max_batch_units = o.max_batch_images;
  q.max_batch_slices = o.max_batch;
  q.max_bytes = o.max_queued_bytes;
  q.max_client_bytes = o.max_client_queued_bytes;
  return q;
}

const RewardServiceOptions& checked(const RewardServiceOptions& o) {
  const auto require = [](bool ok, const std::string& why) {
    if (!ok) throw std::invalid_argument("reward service: " + why);
  };
  require(o.max_batch_images >= 1, "max_batch_images must be >= 1");
  require(o.client_images_per_batch >= 1 && o.client_images_per_batch <= o.max_batch_images,
          "client_images_per_batch must be in [1, max_batch_images]");
  require(o.max_client_queued_bytes >= o.max_request_bytes,
          "max_client_queued_bytes must be >= max_request_bytes (or no request of that size "
          "could ever be queued)");
  require(o.max_queued_bytes >= o.max_client_queued_bytes,
          "max_queued_bytes must be >= max_client_queued_bytes");
  return o;
}

}  // namespace

RewardService::Impl::Impl(std::unique_ptr<RewardFunction> r, RewardServiceOptions o,
                          std::shared_ptr<metrics::Registry> reg)
    : reward(std::move(r)),
      options(std::move(o)),
      registry(std::move(reg)),
      queue(fair_queue_options(checked(options))) {
  if (!reward) throw std::invalid_argument("reward service: reward function is null");
  declared_range = reward->range();
  options.task.validate();
  if (!registry) registry = std::make_shared<metrics::Registry>("reward");
  if (registry->service() != "reward") {
    throw std::invalid_argument("reward service: metrics registry is for service '" +
                                registry->service() + "', expected 'reward'");
  }
  auto& m = *registry;
  requests = m.counter("spotlight_reward_requests_total", "Requests received.");
  batches = m.counter("spotlight_reward_batches_total", "Batches handled (one reward call each).");
  images_scored = m.counter("spotlight_reward_images_scored_total", "Images scored.");
  correct = m.counter("spotlight_reward_correct_total", "Images scored as strictly correct.");
  malformed = m.counter("spotlight_reward_malformed_total",
                        "Requests rejected for their content (wire errors, bad images/prompts).");
  const std::string errors_help = "Error replies by kind.";
  for (wire::WireErrorKind kind : kWireErrorKinds) {
    const std::string k(wire::to_string(kind));
    errors[k] = m.counter("spotlight_reward_errors_total", errors_help, {{"kind", k}});
  }
  for (std::string_view kind : {kBadImage, kBadPrompt, kNonFinite, kScoreFailed}) {
    const std::string k(kind);
    errors[k] = m.counter("spotlight_reward_errors_total", errors_help, {{"kind", k}});
  }
  const std::string rejected_help =
      "Messages rejected before scoring (RPC framing, size, wire decoding, memory budget), by "
      "reason.";
  std::vector<std::string> reasons = {
      "frame_count",           "delimiter", "header", "too_large", "message_size", "handshake",
      std::string(kOverBudget)};
  for (wire::WireErrorKind kind : kWireErrorKinds)
    reasons.emplace_back(wire::to_string(kind));
  for (const auto& reason : reasons) {
    rejected.try_emplace(reason, m.counter("spotlight_reward_rejected_messages_total",
                                           rejected_help, {{"reason", reason}}));
  }
  batch_requests =
      m.histogram("spotlight_reward_batch_size_requests", "Requests (slices of them) per batch.",
                  metrics::exponential_buckets(1, 2, 11));
  batch_images = m.histogram("spotlight_reward_batch_size_images", "Images scored per batch.",
                             metrics::exponential_buckets(1, 2, 14));
  score_seconds =
      m.histogram("spotlight_reward_score_seconds", "Time of the reward function call of a batch.",
                  metrics::exponential_buckets(1e-5, 4, 12));
  reward_mean = m.gauge("spotlight_reward_reward_mean", "Mean reward of the last scored batch.");
  reward_std = m.gauge("spotlight_reward_reward_std",
                       "Standard deviation of the rewards of the last scored batch.");
  queued_bytes =
      m.gauge("spotlight_reward_queued_bytes", "Bytes of requests received and not yet answered.");
  queued_requests =
      m.gauge("spotlight_reward_queued_requests", "Requests received and not yet answered.");
}

void RewardService::Impl::count_error(std::string_view kind, std::size_t n) {
  auto it = errors.find(kind);
  if (it != errors.end()) it->second.inc(static_cast<double>(n));
}

std::optional<Rejection> RewardService::Impl::prepare(Job& job) const {
  wire::DecodeOptions decode_options;
  decode_options.max_bytes = options.max_request_bytes;
  try {
    job.request = wire::RewardRequestView::decode(job.payload.bytes(), decode_options);
  } catch (const wire::WireError& e) {
    return Rejection{std::string(wire::to_string(e.kind())), e.what(), {}, true};
  }
  const auto& r = job.request;
  if (r.content != wire::RewardRequest::kImages) {
    return Rejection{std::string(kBadImage),
                     "reward_request '" + r.request_id + "': carries " + r.content +
                         "; this service scores images (decode latents in a reward service of "
                         "your own: docs/reward-protocol.md)",
                     r.request_id};
  }
  const int size = options.task.image_size;
  if (r.count > 0 && (r.channels != 3 || r.width != size || r.height != size)) {
    return Rejection{std::string(kBadImage),
                     "reward_request '" + r.request_id + "': images are " +
                         std::to_string(r.width) + "x" + std::to_string(r.height) + "x" +
                         std::to_string(r.channels) + ", this service scores " +
                         std::to_string(size) + "x" + std::to_string(size) + "x3",
                     r.request_id};
  }
  job.units = static_cast<std::size_t>(r.count);
  job.rewards.assign(job.units, 0.0);
  job.correct.assign(job.units, false);
  return std::nullopt;
}

void RewardService::Impl::score(const std::vector<FairQueue::Slice>& slices) {
  ScoreBatch batch;
  for (const auto& slice : slices) {
    Job& job = static_cast<Job&>(*slice.job);
    if (!job.error.empty()) continue;
    const std::size_t first = batch.prompts.size();
    if (auto problem = decode_slice(job, slice, batch)) {
      batch.prompts.resize(first);
      batch.images.resize(first);
      malformed.inc();
      count_error(problem->kind);
      job.error = problem->message;
      job.error_kind = problem->kind;
      SPOTLIGHT_LOG(debug) << "rejected request " << job.rpc_id << ": " << problem->message;
      continue;
    }
    batch.parts.push_back(ScoreBatch::Part{&job, slice.begin, slice.end});
  }
  if (batch.images.empty()) return;
  batches.inc();
  batch_requests.observe(static_cast<double>(batch.parts.size()));
  std::vector<Scored> scores;
  if (const std::string failure = call_reward(batch, scores); !failure.empty()) {
    log::error("batch of {} requests: {}", batch.parts.size(), failure);
    count_error(kScoreFailed, batch.parts.size());
    for (const auto& p : batch.parts) {
      p.job->error = failure;
      p.job->error_kind = kScoreFailed;
    }
    return;
  }
  record_scores(batch, scores);
}

std::optional<RewardService::Impl::SliceProblem> RewardService::Impl::decode_slice(
    const Job& job, const FairQueue::Slice& slice, ScoreBatch& batch) const {
  const auto& r = job.request;
  const std::string what = "reward_request '" + r.request_id + "'";
  const std::size_t per_image = r.image_values();
  for (std::size_t i = slice.begin; i < slice.end; ++i) {
    auto prompt = task::parse_prompt(r.prompts[i]);
    if (!prompt) {
      return SliceProblem{std::string(kBadPrompt), what + ": prompts[" + std::to_string(i) + "] '" +
                                                       r.prompts[i] +
                                                       "' is not a prompt of the embedded task"};
    }
    task::Image image{static_cast<int>(r.width), static_cast<int>(r.height),
                      std::vector<float>(per_image)};
    wire::copy_f32_le(r.images, i * per_image, per_image, image.rgb.data());
    const auto bad =
        std::find_if(image.rgb.begin(), image.rgb.end(), [](float v) { return !std::isfinite(v); });
    if (bad != image.rgb.end()) {
      const auto at = static_cast<std::size_t>(bad - image.rgb.begin());
      const std::size_t pixel = at / 3;
      return SliceProblem{std::string(kNonFinite),
                          what + ": images[" + std::to_string(i) + "] has " +
                              (std::isnan(*bad) ? "NaN" : "Inf") +
                              " at x=" + std::to_string(pixel % static_cast<std::size_t>(r.width)) +
                              " y=" + std::to_string(pixel / static_cast<std::size_t>(r.width)) +
                              " channel " + std::to_string(at % 3) + " (pixels must be finite)"};
    }
    batch.prompts.push_back(std::move(*prompt));
    batch.images.push_back(std::move(image));
  }
  return std::nullopt;
}

std::string RewardService::Impl::call_reward(const ScoreBatch& batch, std::vector<Scored>& scores) {
  std::string failure;
  const auto started = Clock::now();
  try {
    scores = reward->score(batch.prompts, batch.images);
    if (scores.size() != batch.images.size()) {
      failure = "reward function '" + reward->name() + "' returned " +
                std::to_string(scores.size()) + " scores for " +
                std::to_string(batch.images.size()) + " images";
    }
  } catch (const std::exception& e) {
    failure = "reward function '" + reward->name() + "' failed: " + e.what();
  }
  score_seconds.observe(std::chrono::duration<double>(Clock::now() - started).count());
  return failure;
}

void RewardService::Impl::record_scores(const ScoreBatch& batch,
                                        const std::vector<Scored>& scores) {
  std::size_t next = 0;
  double sum = 0.0, sum_sq = 0.0;
  std::size_t n_correct = 0;
  for (const auto& p : batch.parts) {
    for (std::size_t i = p.begin; i < p.end; ++i, ++next) {
      p.job->rewards[i] = scores[next].reward;
      p.job->correct[i] = scores[next].correct;
      sum += scores[next].reward;
      sum_sq += scores[next].reward * scores[next].reward;
      n_correct += scores[next].correct ? 1 : 0;
    }
    p.job->scored += p.end - p.begin;
  }
  const double n = static_cast<double>(scores.size());
  const double mean = sum / n;
  images_scored.inc(n);
  correct.inc(static_cast<double>(n_correct));
  batch_images.observe(n);
  reward_mean.set(mean);
  reward_std.set(std::sqrt(std::max(0.0, sum_sq / n - mean * mean)));
}

void RewardService::Impl::on_call(rpc::RpcCall call) {
  requests.inc();
  auto job = std::make_shared<Job>();
  job->client = call.peer;
  job->rpc_id = call.id;
  job->bytes = call.payload.size();
  job->payload = std::move(call.payload);
  if (const auto rejection = prepare(*job)) {
    reject(*rejection);
    SPOTLIGHT_LOG(debug) << "rejected request " << call.id << ": " << rejection->message;
    server->reply(call.peer, call.id, error_reply(rejection->request_id, rejection->message));
    return;
  }
  if (job->units == 0) {  // nothing to score
    server->reply(call.peer, call.id, reply_body(*job, declared_range));
    return;
  }
  Admission admission;
  std::size_t held = 0;
  {
    std::lock_guard lock(mutex);
    const bool was_idle = !queue.has_work();
    admission = queue.admit(job);
    held = queue.bytes();
    if (admission == Admission::kAdmitted) {
      if (was_idle) first_waiting = Clock::now();
      queued_bytes.set(static_cast<double>(queue.bytes()));
      queued_requests.set(static_cast<double>(queue.jobs()));
    }
  }
  if (admission == Admission::kAdmitted) {
    work.notify_one();
    return;
  }
  count_rejected(kOverBudget);
  const bool client = admission == Admission::kClientOverBudget;
  const std::string message =
      "busy: reward_request '" + job->request.request_id + "' (" + std::to_string(job->bytes) +
      " bytes) does not fit in " +
      (client ? "this connection's budget of " + std::to_string(options.max_client_queued_bytes)
              : "the service's budget of " + std::to_string(options.max_queued_bytes)) +
      " bytes of queued requests (" + std::to_string(held) + " held); retry later";
  SPOTLIGHT_LOG(debug) << message;
  server->reply(call.peer, call.id, error_reply(job->request.request_id, message));
}

void RewardService::Impl::answer(std::shared_ptr<FairJob> job) {
  const Job& j = static_cast<const Job&>(*job);
  rpc::RpcReply reply(reply_body(j, declared_range));
  const std::string peer = j.client;
  const std::uint64_t id = j.rpc_id;
  // Unmapping a large request's frame takes milliseconds: once the reply is sent, the reclaimer
  // does it, so that neither the reading thread nor the scorer keeps small requests waiting.
  struct Release {
    Reclaimer* reclaimer = nullptr;
    std::shared_ptr<FairJob> job;
    ~Release() { reclaimer->release(std::move(job)); }
  };
  auto release = std::make_shared<Release>();
  release->reclaimer = &reclaimer;
  release->job = std::move(job);
  reply.release_after_send = std::move(release);
  server->reply(peer, id, std::move(reply));
}

void RewardService::Impl::score_loop(std::stop_token stop) {
  std::unique_lock lock(mutex);
  bool trim_due = false;  // large requests were answered and the queue emptied
  for (;;) {
    if (trim_due) {  // set again at the end of every pass
      if (!work.wait_for(lock, stop, kTrimAfterIdle, [&] { return queue.has_work(); })) {
        if (stop.stop_requested()) return;
        released_since_trim = 0;
        reclaimer.release(nullptr, /*then_trim=*/true);  // after the frames released before it
      }
    }
    work.wait(lock, stop, [&] { return queue.has_work(); });
    if (stop.stop_requested()) return;
    if (first_waiting) {
      // After an idle spell, give concurrent clients the batch window to join the batch.
      const auto until = *first_waiting + options.batch_window;
      first_waiting.reset();
      work.wait_until(lock, stop, until, [&] {
        return queue.unscheduled_units() >= options.max_batch_images ||
               queue.jobs() >= options.max_batch;
      });
      if (stop.stop_requested()) return;
    }
    auto slices = queue.take();
    lock.unlock();
    {
      std::lock_guard scoring(handle_mutex);
      score(slices);
    }
    std::vector<std::shared_ptr<FairJob>> finished;
    for (const auto& s : slices) {
      if (static_cast<const Job&>(*s.job).done() &&
          std::find(finished.begin(), finished.end(), s.job) == finished.end()) {
        finished.push_back(s.job);
      }
    }
    slices.clear();
    lock.lock();
    for (const auto& job : finished) {
      if (!static_cast<const Job&>(*job).error.empty()) queue.cancel(job);
      released_since_trim += job->bytes;
      queue.finish(job);
    }
    queued_bytes.set(static_cast<double>(queue.bytes()));
    queued_requests.set(static_cast<double>(queue.jobs()));
    trim_due = queue.jobs() == 0 && released_since_trim >= kTrimAfterBytes;
    lock.unlock();
    for (auto& job : finished)
      answer(std::move(job));
    finished.clear();  // the replies hold the jobs' last references now
    lock.lock();
  }
}

RewardService::RewardService(std::unique_ptr<RewardFunction> reward, RewardServiceOptions options,
                             std::shared_ptr<metrics::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(reward), std::move(options), std::move(registry))) {
  rpc::RpcServerOptions rpc_options;
  rpc_options.max_batch = impl_->options.max_batch;
  rpc_options.batch_window = impl_->options.batch_window;
  rpc_options.max_request_bytes = impl_->options.max_request_bytes;
  rpc_options.curve = impl_->options.curve;
  rpc_options.handshake_timeout = impl_->options.handshake_timeout;
  rpc_options.on_reject = [impl = impl_.get()](std::string_view reason) {
    impl->count_rejected(reason);
  };
  // Per frame: libzmq refuses a larger one as soon as its size arrives, so a hostile frame costs
  // at most this much memory however large it claims to be.
  rpc_options.max_message_size = std::max<std::int64_t>(
      zmqio::kMinMaxMessageSize,
      static_cast<std::int64_t>(impl_->options.max_request_bytes) + kFrameHeadroom);
  // Per message: a connection that sends more than this before its answer is closed, so one
  // client can make the service hold at most this much of a message however many frames it has.
  // One frame of the largest size libzmq accepts still fits (and gets its too_large answer).
  if (impl_->options.limit_message_bytes) {
    rpc_options.max_message_bytes =
        static_cast<std::size_t>(rpc_options.max_message_size + kMessageHeadroom);
  }
  impl_->server.emplace([impl = impl_.get()](rpc::RpcCall call) { impl->on_call(std::move(call)); },
                        rpc_options);
}

RewardService::~RewardService() = default;

std::string RewardService::bind() {
  return bind(impl_->options.bind);
}

std::string RewardService::bind(const std::string& endpoint) {
  return impl_->server->bind(endpoint);
}

void RewardService::run(std::stop_token stop) {
  Impl& s = *impl_;
  std::exception_ptr failure;
  std::thread scorer([&s, &failure] {
    try {
      s.score_loop(s.stopping.get_token());
    } catch (...) {
      failure = std::current_exception();
    }
    s.server->stop();  // after the last replies were posted: run() sends them, then returns
  });
  std::stop_callback on_stop(stop, [&s] { s.stopping.request_stop(); });
  try {
    s.server->run();
  } catch (...) {
    s.stopping.request_stop();
    scorer.join();
    throw;
  }
  s.stopping.request_stop();  // run() may have ended on its own
  scorer.join();
  if (failure) std::rethrow_exception(failure);
}

void RewardService::stop() {
  impl_->stopping.request_stop();
}

std::vector<rpc::RpcReply> RewardService::handle(std::vector<rpc::RpcRequest> batch) {
  Impl& s = *impl_;
  std::vector<rpc::RpcReply> replies(batch.size(), rpc::RpcReply(std::string()));
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<FairQueue::Slice> slices;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    s.requests.inc();
    auto job = std::make_shared<Job>();
    job->index = i;
    job->payload = rpc::RpcPayload(std::move(batch[i].payload));
    if (const auto rejection = s.prepare(*job)) {
      s.reject(*rejection);
      replies[i] = rpc::RpcReply(error_reply(rejection->request_id, rejection->message));
      continue;
    }
    slices.push_back(FairQueue::Slice{job, 0, job->units});
    jobs.push_back(std::move(job));
  }
  {
    std::lock_guard lock(s.handle_mutex);
    s.score(slices);
  }
  for (const auto& job : jobs)
    replies[job->index] = rpc::RpcReply(reply_body(*job, s.declared_range));
  return replies;
}

rpc::RpcServerCounters RewardService::rpc_counters() const {
  return impl_->server->counters();
}

const std::shared_ptr<metrics::Registry>& RewardService::registry() const {
  return impl_->registry;
}

}  // namespace spotlight::reward
