#include "tools/chaos/driver.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <signal.h>

#include "common/clock/unix_time.hpp"
#include "common/log/log.hpp"

namespace spotlight::chaos {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Waits `duration` unless `stop` is requested first.
void wait_for(std::stop_token stop, std::chrono::milliseconds duration) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  cv.wait_for(lock, stop, duration, [] { return false; });
}

}  // namespace

void DriverOptions::validate() const {
  if (command.empty()) throw std::invalid_argument("DriverOptions.command: must not be empty");
  if (!(time_scale > 0)) throw std::invalid_argument("DriverOptions.time_scale: must be > 0");
  if (grace.count() < 0) throw std::invalid_argument("DriverOptions.grace: must be >= 0");
  if (reap_interval.count() <= 0) {
    throw std::invalid_argument("DriverOptions.reap_interval: must be > 0");
  }
}

std::string DriverSummary::to_json() const {
  std::ostringstream o;
  o << "{\"ticks\":" << ticks << ",\"starts\":" << starts << ",\"terms\":" << terms
    << ",\"kills\":" << kills << ",\"preemptions\":" << terms + kills
    << ",\"escalated\":" << escalated << ",\"clean_exits\":" << clean_exits
    << ",\"failed_exits\":" << failed_exits << ",\"term_exit_nonzero\":" << term_exit_nonzero
    << ",\"max_burst\":" << max_burst << ",\"seconds\":" << seconds << "}";
  return o.str();
}

Driver::Driver(ChaosSchedule schedule, DriverOptions options)
    : schedule_(std::move(schedule)), options_((options.validate(), std::move(options))) {
  if (!options_.events.empty()) {
    events_.open(options_.events, std::ios::app);
    if (!events_) throw std::runtime_error("cannot write " + options_.events.string());
  }
  if (!options_.log_dir.empty()) std::filesystem::create_directories(options_.log_dir);
}

std::vector<std::int64_t> Driver::running() const {
  std::vector<std::int64_t> out;
  for (const auto& [serial, child] : children_) {
    if (!child.terminating) out.push_back(serial);
  }
  return out;
}

void Driver::event(const std::string& kind, std::size_t tick, const Child& child,
                   const std::string& extra) {
  if (!events_.is_open()) return;
  const double t = std::chrono::duration<double>(Clock::now() - started_).count();
  events_ << "{\"t\":" << t << ",\"unix_ms\":" << clock::unix_ms() << ",\"tick\":" << tick
          << ",\"event\":\"" << kind << "\",\"serial\":" << child.serial << ",\"pid\":" << child.pid
          << extra << "}\n";
  events_.flush();
}

void Driver::start(std::size_t tick) {
  Child child;
  child.serial = next_serial_++;
  process::ProcessOptions po;
  for (const auto& w : options_.command)
    po.argv.push_back(replace_all(w, "{n}", std::to_string(child.serial)));
  if (!options_.log_dir.empty()) {
    po.log = options_.log_dir / ("proc-" + std::to_string(child.serial) + ".log");
  }
  child.process.emplace(std::move(po));  // process::ProcessError when it cannot start
  child.pid = child.process->pid();
  ++summary_.starts;
  const std::int64_t serial = child.serial;
  event("start", tick, child);
  children_.emplace(serial, std::move(child));
}

void Driver::preempt(const Action& action, std::size_t tick, std::int64_t burst) {
  auto it = children_.find(action.victim);
  if (it == children_.end()) return;
  Child& child = it->second;
  child.signalled = true;
  const std::string extra = ",\"burst\":" + std::to_string(burst);
  if (action.kind == ActionKind::kKill) {
    child.process->signal(SIGKILL);
    child.terminating = true;
    ++summary_.kills;
    event("kill", tick, child, extra);
  } else {
    child.process->signal(SIGTERM);
    child.terminating = true;
    child.term_at = Clock::now();
    ++summary_.terms;
    event("term", tick, child, extra);
  }
}

bool Driver::reap(std::size_t tick) {
  bool clean_exit = false;
  for (auto it = children_.begin(); it != children_.end();) {
    Child& child = it->second;
    if (const auto status = child.process->wait_for(std::chrono::milliseconds(0))) {
      const int code = status->shell_code();
      if (!child.signalled) {
        if (code == 0) {
          ++summary_.clean_exits;
          clean_exit = clean_exit || options_.stop_on_clean_exit;
        } else {
          ++summary_.failed_exits;
          log::warn("process {} (pid {}) exited with {} on its own", child.serial, child.pid, code);
        }
      } else if (child.term_at != Clock::time_point{} && code != 0) {
        ++summary_.term_exit_nonzero;
      }
      event("exit", tick, child, ",\"status\":" + std::to_string(code));
      it = children_.erase(it);
      continue;
    }
    if (child.term_at != Clock::time_point{} &&
        Clock::now() - child.term_at > options_.grace + options_.escalation_slack) {
      child.process->signal(SIGKILL);
      child.term_at = Clock::time_point{};  // escalated once
      ++summary_.escalated;
      ++summary_.term_exit_nonzero;
      event("escalate", tick, child);
    }
    ++it;
  }
  return clean_exit;
}

void Driver::shutdown(std::size_t tick) {
  for (auto& [serial, child] : children_) {
    if (!child.terminating) {
      child.process->signal(SIGTERM);
      child.terminating = true;
      child.signalled = true;
      child.term_at = Clock::now();
      event("stop", tick, child);
    }
  }
  while (!children_.empty()) {
    reap(tick);
    if (!children_.empty()) wait_for({}, options_.reap_interval);
  }
}

DriverSummary Driver::run(std::stop_token stop) {
  started_ = Clock::now();
  const auto tick_length =
      std::chrono::duration<double>(schedule_.trace().gap_seconds / options_.time_scale);
  std::size_t tick = options_.start_tick;
  const auto first = Clock::now();
  bool done = false;
  for (std::int64_t n = 0; !done && !stop.stop_requested(); ++n, ++tick) {
    if (options_.max_ticks && static_cast<std::size_t>(n) >= *options_.max_ticks) break;
    if (!options_.loop && tick >= schedule_.ticks()) break;
    if (reap(tick)) break;
    const auto actions = schedule_.plan(tick, running());
    std::int64_t burst = 0;
    for (const auto& a : actions)
      burst += a.kind == ActionKind::kStart ? 0 : 1;
    summary_.max_burst = std::max(summary_.max_burst, burst);
    for (const auto& a : actions) {
      if (a.kind == ActionKind::kStart) {
        start(tick);
      } else {
        preempt(a, tick, burst);
      }
    }
    ++summary_.ticks;
    const auto next = first + std::chrono::duration_cast<Clock::duration>(tick_length * (n + 1));
    while (!stop.stop_requested() && Clock::now() < next) {
      if (reap(tick)) {
        log::info("a process exited cleanly on its own: the job is over");
        done = true;
        break;
      }
      wait_for(stop,
               std::min(options_.reap_interval,
                        std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()) +
                            std::chrono::milliseconds(1)));
    }
  }
  shutdown(tick);
  summary_.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  return summary_;
}

}  // namespace spotlight::chaos
