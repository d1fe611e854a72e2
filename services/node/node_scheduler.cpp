#include "services/node/node_scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <utility>

#include <nlohmann/json.hpp>
#include <poll.h>
#include <torch/torch.h>
#include <unistd.h>

#include "common/log/log.hpp"
#include "common/model/mmdit.hpp"
#include "common/parallel/rendezvous.hpp"
#include "common/parallel/shared_weights.hpp"
#include "services/node/rank_process.hpp"

namespace spotlight::node {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Member {
  std::unique_ptr<RankProcess> process;
  bool lost = false;
  std::int64_t weights_epoch = -1;  // the load this rank holds (-1: none)
  int slot = 0;                     // 0..ranks-1, unique among live members: its GPU on CUDA
};

}  // namespace

struct NodeScheduler::Impl {
  NodeOptions options;
  int heads = 0;
  c10::intrusive_ptr<c10d::Store> store;
  std::vector<std::unique_ptr<Member>> members;
  std::vector<Member*> group;  // the current generation's members, in rank order
  bool group_broken = false;   // a member was lost since the group formed
  std::int64_t generation = 0;
  std::int64_t regroups = 0;
  std::int64_t weights_epoch = 0;
  std::optional<WeightsLocation> store_location;  // of the current weights, if from the store
  // A shared-memory segment holding the current weights (written at load or by a peer's
  // export), kept until the next load so that replacements only map and verify it.
  std::optional<std::string> current_segment;
  std::optional<metrics::Histogram> regroup_seconds;
  std::optional<metrics::Counter> regroups_total;

  std::string segment(const std::string& what) const { return options.name + "-" + what; }

  // A bare "cuda" gives every rank its own GPU: cuda:<slot>. Other devices are used as given.
  std::string rank_device(int slot) const {
    return options.device == "cuda" ? "cuda:" + std::to_string(slot) : options.device;
  }

  int free_slot(const std::vector<std::unique_ptr<Member>>& fresh) const {
    for (int slot = 0;; ++slot) {
      auto taken = [slot](const std::unique_ptr<Member>& m) { return !m->lost && m->slot == slot; };
      if (std::none_of(members.begin(), members.end(), taken) &&
          std::none_of(fresh.begin(), fresh.end(), taken)) {
        return slot;
      }
    }
  }

  void spawn(int count) {
    std::vector<std::unique_ptr<Member>> fresh;
    for (int i = 0; i < count; ++i) {
      auto m = std::make_unique<Member>();
      m->slot = free_slot(fresh);
      m->process = std::make_unique<RankProcess>(
          options.rank_binary,
          std::vector<std::string>{"rank",
                                   "--store-port=" + std::to_string(parallel::store_port(store)),
                                   "--group=" + options.name, "--preset=" + options.preset,
                                   "--device=" + rank_device(m->slot),
                                   "--threads=" + std::to_string(options.threads_per_rank),
                                   "--op-timeout-ms=" + std::to_string(options.op_timeout.count())},
          options.rank_log);
      fresh.push_back(std::move(m));
    }
    for (auto& m : fresh) {  // processes start in parallel; wait for each
      auto line = m->process->receive(options.start_timeout);
      if (!line) throw NodeError("node: a rank did not start within start_timeout");
      auto ready = Json::parse(*line);
      if (!ready.value("ready", false)) {
        throw NodeError("node: a rank failed to start: " + ready.value("error", std::string()));
      }
      members.push_back(std::move(m));
    }
  }

  // Sends commands[i] to targets[i], then reads every answer. A rank that is gone (or does not
  // answer in time, then killed) is marked lost and gets nullopt.
  std::vector<std::optional<Json>> exchange(const std::vector<Member*>& targets,
                                            const std::vector<Json>& commands,
                                            const std::function<void()>& after_send = {}) {
    std::vector<std::optional<Json>> answers(targets.size());
    std::vector<bool> sent(targets.size(), false);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i]->lost) continue;
      try {
        targets[i]->process->send(commands[i].dump());
        sent[i] = true;
      } catch (const RankLost&) {
        targets[i]->lost = true;
      }
    }
    if (after_send) after_send();
    // Answers are read as they come. Once a member reports a failed collective (a peer is gone
    // or hangs), the others get 2 x op_timeout more: a member still silent then is hung (e.g.
    // stopped) and is killed, so a hung rank costs seconds, not reply_timeout.
    auto deadline = Clock::now() + options.reply_timeout;
    std::vector<bool> pending = sent;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<std::size_t> index;
      for (std::size_t i = 0; i < targets.size(); ++i) {
        if (!pending[i]) continue;
        try {  // a complete line may already be buffered
          auto line = targets[i]->process->receive(std::chrono::milliseconds(0));
          while (line && (line->empty() || line->front() != '{')) {  // a library's print
            log::debug("node: rank pid {} printed: {}", targets[i]->process->pid(), *line);
            line = targets[i]->process->receive(std::chrono::milliseconds(0));
          }
          if (line) {
            answers[i] = Json::parse(*line);
            pending[i] = false;
            if (!answers[i]->value("ok", false) && answers[i]->value("communicator", false)) {
              deadline = std::min(deadline, Clock::now() + 2 * options.op_timeout);
            }
            continue;
          }
        } catch (const RankLost&) {
          targets[i]->lost = true;
          pending[i] = false;
          continue;
        }
        fds.push_back(pollfd{targets[i]->process->stdout_fd(), POLLIN, 0});
        index.push_back(i);
      }
      if (fds.empty()) break;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        for (std::size_t i : index) {
          log::warn("node: rank pid {} did not answer in time; killing it",
                    targets[i]->process->pid());
          targets[i]->process->kill(SIGKILL);
          targets[i]->lost = true;
        }
        break;
      }
      poll(fds.data(), fds.size(), static_cast<int>(left));
    }
    return answers;
  }

  std::vector<Member*> live() {
    std::vector<Member*> out;
    for (auto& m : members) {
      if (!m->lost && !m->process->running()) m->lost = true;
      if (!m->lost) out.push_back(m.get());
    }
    return out;
  }

  void prune() {
    std::erase_if(members, [](const std::unique_ptr<Member>& m) { return m->lost; });
  }

  bool group_intact() {
    if (group.empty() || group_broken) return false;
    for (Member* m : group) {
      if (m->lost || !m->process->running()) return false;
    }
    return true;
  }

  LoadReport load(const std::vector<Member*>& targets, const Json& command,
                  const std::string& source) {
    const auto start = Clock::now();
    auto answers = exchange(targets, std::vector<Json>(targets.size(), command));
    int loaded = 0;
    std::string error;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (answers[i] && answers[i]->value("ok", false)) {
        targets[i]->weights_epoch = weights_epoch;
        ++loaded;
      } else if (answers[i]) {
        error = answers[i]->value("error", std::string());
      }
    }
    if (loaded == 0 && !targets.empty()) {
      throw NodeError("node: no rank loaded weights from " + source + ": " + error);
    }
    LoadReport report;
    report.seconds = since(start);
    report.source = source;
    report.ranks = loaded;
    return report;
  }

  Json store_command(const WeightsLocation& where) const {
    return Json{{"op", "load"},
                {"redis_host", where.redis_host},
                {"redis_port", where.redis_port},
                {"key_prefix", where.key_prefix},
                {"version", where.version}};
  }

  int best_size(int available) const {
    for (int s = std::min(options.sp_size, available); s >= 1; --s) {
      if (heads % s == 0) return s;
    }
    return 0;
  }

  RegroupReport regroup() {
    const auto start = Clock::now();
    for (int attempt = 0; attempt < options.max_attempts + 2; ++attempt) {
      std::vector<Member*> ready;
      for (Member* m : live()) {
        if (m->weights_epoch == weights_epoch) ready.push_back(m);
      }
      prune_group_pointers();
      const int size = best_size(static_cast<int>(ready.size()));
      if (size == 0) throw NodeError("node: no live rank holds the current weights");
      // Survivors of the old group first (they hold warm state), then spares.
      std::stable_partition(ready.begin(), ready.end(), [&](Member* m) {
        return std::find(group.begin(), group.end(), m) != group.end();
      });
      ready.resize(static_cast<std::size_t>(size));
      ++generation;
      std::vector<Json> commands;
      for (int r = 0; r < size; ++r) {
        commands.push_back(
            Json{{"op", "form"}, {"generation", generation}, {"rank", r}, {"size", size}});
      }
      auto answers = exchange(ready, commands);
      bool ok = true;
      for (auto& a : answers)
        ok = ok && a && a->value("ok", false);
      if (ok) {
        group = ready;
        group_broken = false;
        ++regroups;
        const double seconds = since(start);
        if (regroup_seconds) regroup_seconds->observe(seconds);
        if (regroups_total) regroups_total->inc();
        return RegroupReport{seconds, size, generation};
      }
      for (std::size_t i = 0; i < answers.size(); ++i) {
        if (answers[i] && !answers[i]->value("ok", false)) {
          log::warn("node: rank pid {} could not join generation {}: {}", ready[i]->process->pid(),
                    generation, answers[i]->value("error", ""));
        }
      }
    }
    throw NodeError("node: could not form a group");
  }

  void prune_group_pointers() {
    if (std::erase_if(group, [](Member* m) { return m->lost; }) > 0) group_broken = true;
    prune();
  }
};

NodeScheduler::NodeScheduler(NodeOptions options, metrics::Registry* registry)
    : impl_(std::make_unique<Impl>()) {
  static std::atomic<int> schedulers{0};
  if (options.name.empty()) {
    options.name = "node" + std::to_string(getpid()) + "-" + std::to_string(schedulers++);
  }
  if (options.ranks < 1 || options.sp_size < 1) {
    throw std::invalid_argument("node: ranks and sp_size must be >= 1");
  }
  if (options.max_attempts < 1) throw std::invalid_argument("node: max_attempts must be >= 1");
  impl_->heads = static_cast<int>(model::mmdit_preset(options.preset).heads());
  if (impl_->heads % options.sp_size != 0) {
    throw std::invalid_argument("node: sp_size " + std::to_string(options.sp_size) +
                                " does not divide the " + std::to_string(impl_->heads) +
                                " attention heads of preset '" + options.preset + "'");
  }
  impl_->options = std::move(options);
  if (registry) {
    impl_->regroup_seconds =
        registry->histogram("spotlight_explorer_sp_regroup_seconds",
                            "Time to form a new SP group generation after a member was lost.",
                            metrics::exponential_buckets(0.005, 2.0, 12));
    impl_->regroups_total =
        registry->counter("spotlight_explorer_sp_regroups_total", "SP group generations formed.");
  }
}

NodeScheduler::~NodeScheduler() {
  for (auto& m : impl_->members) {
    try {
      if (!m->lost) m->process->send(Json{{"op", "quit"}}.dump());
    } catch (const std::exception&) {
    }
  }
  impl_->members.clear();  // SIGKILLs and reaps what did not quit
  parallel::remove_shared_weights(impl_->segment("w"));
  parallel::remove_shared_weights(impl_->segment("peer"));
}

void NodeScheduler::start() {
  parallel::StoreOptions store;
  store.is_server = true;
  impl_->store = parallel::open_store(store);
  impl_->spawn(impl_->options.ranks);
}

LoadReport NodeScheduler::load_weights(std::string_view bytes) {
  const auto start = Clock::now();
  ++impl_->weights_epoch;
  impl_->store_location.reset();
  parallel::publish_shared_weights(impl_->segment("w"), bytes);
  impl_->current_segment = impl_->segment("w");
  auto report =
      impl_->load(impl_->live(), Json{{"op", "load"}, {"shm", impl_->segment("w")}}, "shm");
  report.seconds = since(start);
  impl_->group.clear();  // a new group forms with the new weights
  return report;
}

LoadReport NodeScheduler::load_weights(const WeightsLocation& where) {
  ++impl_->weights_epoch;
  impl_->store_location = where;
  impl_->current_segment.reset();
  auto report = impl_->load(impl_->live(), impl_->store_command(where), "store");
  impl_->group.clear();
  return report;
}

RegroupReport NodeScheduler::regroup() {
  return impl_->regroup();
}

SampleResult NodeScheduler::sample(const SampleRequest& request) {
  if (request.prompts.size() != request.seeds.size() || request.prompts.empty()) {
    throw std::invalid_argument("node: sample needs one seed per prompt");
  }
  Json command{{"op", "sample"},
               {"prompts", request.prompts},
               {"seeds", request.seeds},
               {"steps", request.sampler.steps},
               {"sde", request.sampler.sde},
               {"noise_level", request.sampler.noise_level},
               {"shift", request.sampler.shift}};
  SampleResult result;
  std::string last_error;
  for (int attempt = 1; attempt <= impl_->options.max_attempts; ++attempt) {
    result.attempts = attempt;
    if (!impl_->group_intact()) {
      if (!impl_->group.empty()) ++result.regroups;
      impl_->regroup();
    }
    auto group = impl_->group;
    auto answers = impl_->exchange(group, std::vector<Json>(group.size(), command), after_dispatch);
    bool ok = true;
    for (auto& a : answers) {
      if (!a) {
        last_error = "a member was lost";
        ok = false;
      } else if (!a->value("ok", false)) {
        last_error = a->value("error", std::string());
        ok = false;
      }
    }
    if (ok) {
      const auto& rank0 = *answers[0];
      auto values = rank0.at("latents").get<std::vector<float>>();
      auto shape = rank0.at("shape").get<std::vector<int64_t>>();
      result.latents = torch::from_blob(values.data(), shape, torch::kFloat).clone();
      return result;
    }
    log::warn("node: sample attempt {} failed on generation {}: {}", attempt, impl_->generation,
              last_error);
    ++result.regroups;  // survivors dropped their group; form a new generation
    impl_->regroup();
  }
  throw NodeError("node: sample failed after " + std::to_string(impl_->options.max_attempts) +
                  " attempts: " + last_error);
}

double NodeScheduler::forward_seconds(int batch, int iterations) {
  if (!impl_->group_intact()) impl_->regroup();
  auto group = impl_->group;
  auto answers = impl_->exchange(
      group, std::vector<Json>(
                 group.size(),
                 Json{{"op", "forward_bench"}, {"batch", batch}, {"iterations", iterations}}));
  double seconds = 0;
  for (auto& a : answers) {
    if (!a || !a->value("ok", false)) {
      throw NodeError("node: forward bench failed: " + (a ? a->value("error", "") : "lost"));
    }
    seconds = std::max(seconds, a->at("seconds").get<double>());
  }
  return seconds / iterations;
}

LoadReport NodeScheduler::replenish(WeightsSource prefer) {
  auto& s = *impl_;
  const int missing = s.options.ranks - static_cast<int>(s.live().size());
  s.prune_group_pointers();
  if (missing <= 0) return LoadReport{};
  const auto spawn_start = Clock::now();
  const auto before = s.members.size();
  s.spawn(missing);
  const double spawn_seconds = since(spawn_start);
  const auto start = Clock::now();
  std::vector<Member*> fresh;
  for (std::size_t i = before; i < s.members.size(); ++i)
    fresh.push_back(s.members[i].get());
  // A live peer with the current weights exports them once per load; new ranks map the segment.
  if (prefer == WeightsSource::kPeer || !s.store_location) {
    double export_seconds = 0;
    if (!s.current_segment) {
      for (Member* peer : s.live()) {
        if (peer->weights_epoch != s.weights_epoch) continue;
        auto answer = s.exchange({peer}, {Json{{"op", "export"}, {"shm", s.segment("peer")}}})[0];
        if (answer && answer->value("ok", false)) {
          s.current_segment = s.segment("peer");
          export_seconds = answer->value("seconds", 0.0);
          break;
        }
      }
    }
    if (s.current_segment) {
      try {
        auto report = s.load(fresh, Json{{"op", "load"}, {"shm", *s.current_segment}}, "shm");
        report.seconds = since(start);
        report.spawn_seconds = spawn_seconds;
        report.export_seconds = export_seconds;
        return report;
      } catch (const NodeError& e) {
        log::warn("node: peer copy failed ({}); falling back to the weight store", e.what());
        s.current_segment.reset();
      }
    }
  }
  if (!s.store_location) throw NodeError("node: no peer and no store location for weights");
  auto report = s.load(fresh, s.store_command(*s.store_location), "store");
  report.seconds = since(start);
  report.spawn_seconds = spawn_seconds;
  return report;
}

int NodeScheduler::await_loss(std::chrono::milliseconds timeout, int at_least) {
  auto& s = *impl_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int lost = 0;
    std::vector<pollfd> fds;
    std::vector<Member*> watched;
    for (Member* m : s.live()) {
      fds.push_back(pollfd{m->process->stdout_fd(), POLLIN, 0});
      watched.push_back(m);
    }
    for (auto& m : s.members)
      lost += m->lost ? 1 : 0;
    if (lost >= at_least) return lost;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return lost;
    if (poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLHUP | POLLERR)) watched[i]->lost = true;
      if (fds[i].revents & POLLIN) {
        try {  // an idle rank says nothing; anything readable here is its end of stream
          (void)watched[i]->process->receive(std::chrono::milliseconds(0));
        } catch (const RankLost&) {
          watched[i]->lost = true;
        }
      }
    }
  }
}

std::vector<pid_t> NodeScheduler::group_pids() const {
  std::vector<pid_t> out;
  for (Member* m : impl_->group)
    out.push_back(m->process->pid());
  return out;
}

std::vector<pid_t> NodeScheduler::all_pids() const {
  std::vector<pid_t> out;
  for (auto& m : impl_->members) {
    if (!m->lost) out.push_back(m->process->pid());
  }
  return out;
}

int NodeScheduler::group_size() const {
  return static_cast<int>(impl_->group.size());
}
std::int64_t NodeScheduler::generation() const {
  return impl_->generation;
}
std::int64_t NodeScheduler::regroups() const {
  return impl_->regroups;
}

}  // namespace spotlight::node
