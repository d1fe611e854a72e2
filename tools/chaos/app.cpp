#include "tools/chaos/app.hpp"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include "common/config/arguments.hpp"
#include "common/config/error.hpp"
#include "common/log/log.hpp"
#include "common/signals/stop_signals.hpp"

namespace spotlight::chaos {

using config::ArgumentParser;
using config::Arguments;

namespace {

ArgumentParser chaos_parser() {
  ArgumentParser p(
      "usage: spotlight-chaos --trace FILE [options] -- COMMAND [ARGS...]\n"
      "Replays a spot availability trace by starting COMMAND processes (\"{n}\" in an argument\n"
      "becomes the process serial) and preempting them with SIGTERM (+ grace) or SIGKILL.");
  p.option("trace", "FILE", "the availability trace (JSON; deploy/traces/)")
      .option("time-scale", "X", "trace seconds per real second", "1")
      .option("max-explorers", "N", "processes at the trace's peak", "4")
      .option("min-explorers", "N", "processes kept even when the trace has none", "0")
      .option("kill-ratio", "R", "share of preemptions that are SIGKILL", "0.5")
      .option("seed", "S", "draws of victims and signals", "0")
      .option("grace-seconds", "G", "a SIGTERM'd process is SIGKILL'd after G + 5 s", "30")
      .option("start-tick", "T", "first tick of the trace", "0")
      .option("ticks", "N", "stop after N ticks")
      .flag("loop", "wrap around at the end of the trace")
      .flag("keep-going", "a process exiting 0 by itself does not end the drive")
      .option("events", "FILE", "JSONL event log (start/term/kill/escalate/exit/stop)")
      .option("summary", "FILE", "summary JSON")
      .option("log-dir", "DIR", "each process's output in DIR/proc-<n>.log");
  return p;
}

}  // namespace

std::string chaos_usage() {
  return chaos_parser().help();
}

ChaosCommand parse_chaos_command(const std::vector<std::string>& words) {
  const Arguments a = chaos_parser().parse(words);
  if (!a.positional().empty()) {
    throw config::ConfigError(
        "", "unexpected argument '" + a.positional().front() + "' (the command goes after --)");
  }
  ChaosCommand c;
  c.help = a.help();
  if (c.help) return c;
  c.trace = a.text("trace");
  c.driver.time_scale = a.real("time-scale");
  c.schedule.max_explorers = static_cast<int>(a.integer("max-explorers"));
  c.schedule.min_explorers = static_cast<int>(a.integer("min-explorers"));
  c.schedule.kill_ratio = a.real("kill-ratio");
  c.schedule.seed = static_cast<std::uint64_t>(a.integer("seed"));
  c.driver.grace =
      std::chrono::milliseconds(static_cast<std::int64_t>(a.real("grace-seconds") * 1000.0));
  c.driver.start_tick = static_cast<std::size_t>(a.integer("start-tick"));
  if (a.given("ticks")) c.driver.max_ticks = static_cast<std::size_t>(a.integer("ticks"));
  c.driver.loop = a.flag("loop");
  c.driver.stop_on_clean_exit = !a.flag("keep-going");
  if (const auto events = a.value("events")) c.driver.events = *events;
  if (const auto summary = a.value("summary")) c.summary = *summary;
  if (const auto dir = a.value("log-dir")) c.driver.log_dir = *dir;
  c.driver.command = a.rest();
  if (c.driver.command.empty()) {
    throw config::ConfigError("", "a command to run is required after --");
  }
  c.schedule.validate();
  c.driver.validate();
  return c;
}

int run_chaos(const ChaosCommand& command) {
  try {
    signals::StopSignals signals;
    ChaosSchedule schedule(load_trace(command.trace), command.schedule);
    log::info("trace {}: {} ticks of {} s, peak {}, {} drops losing {} instances; time scale {}",
              command.trace, schedule.ticks(), schedule.trace().gap_seconds,
              schedule.trace().peak(), schedule.trace().drops(), schedule.trace().lost_instances(),
              command.driver.time_scale);
    Driver driver(std::move(schedule), command.driver);
    std::stop_source stop;
    std::stop_source finished;
    std::jthread waiter([&] {
      if (const auto signo = signals.wait(finished.get_token())) {
        log::info("received {}: stopping the processes", signals::signal_name(*signo));
        stop.request_stop();
      }
    });
    const DriverSummary summary = driver.run(stop.get_token());
    finished.request_stop();
    waiter.join();
    const std::string json = summary.to_json();
    std::cout << json << std::endl;
    if (!command.summary.empty()) {
      std::ofstream out(command.summary);
      out << json << "\n";
    }
    log::info("done: {} starts, {} SIGTERM, {} SIGKILL ({} escalated), largest burst {}",
              summary.starts, summary.terms, summary.kills, summary.escalated, summary.max_burst);
    return 0;
  } catch (const std::exception& e) {
    log::error("chaos failed: {}", e.what());
    return 1;
  }
}

}  // namespace spotlight::chaos
