#include "tools/chaos/app.hpp"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include "common/log/log.hpp"
#include "common/signals/stop_signals.hpp"

namespace spotlight::chaos {
namespace {

double to_double(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + ": '" + v + "' is not a number");
}

long long to_int(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const long long i = std::stoll(v, &used);
    if (used == v.size()) return i;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + ": '" + v + "' is not an integer");
}

}  // namespace

std::string chaos_usage() {
  return "usage: spotlight-chaos --trace FILE [options] -- COMMAND [ARGS...]\n"
         "Replays a spot availability trace by starting COMMAND processes (\"{n}\" in an argument\n"
         "becomes the process serial) and preempting them with SIGTERM (+ grace) or SIGKILL.\n"
         "  --time-scale X      trace seconds per real second (default 1)\n"
         "  --max-explorers N   processes at the trace's peak (default 4)\n"
         "  --min-explorers N   processes kept even when the trace has none (default 0)\n"
         "  --kill-ratio R      share of preemptions that are SIGKILL (default 0.5)\n"
         "  --seed S            draws of victims and signals (default 0)\n"
         "  --grace-seconds G   a SIGTERM'd process is SIGKILL'd after G + 5 s (default 30)\n"
         "  --start-tick T      first tick of the trace (default 0)\n"
         "  --ticks N           stop after N ticks\n"
         "  --loop              wrap around at the end of the trace\n"
         "  --keep-going        a process exiting 0 by itself does not end the drive\n"
         "  --events FILE       JSONL event log (start/term/kill/escalate/exit/stop)\n"
         "  --summary FILE      summary JSON\n"
         "  --log-dir DIR       each process's output in DIR/proc-<n>.log\n";
}

ChaosCommand parse_chaos_command(const std::vector<std::string>& args) {
  ChaosCommand c;
  std::size_t i = 0;
  const auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= args.size()) throw std::invalid_argument(flag + ": needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      c.driver.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (a == "--trace") {
      c.trace = value(a);
    } else if (a == "--time-scale") {
      c.driver.time_scale = to_double(a, value(a));
    } else if (a == "--max-explorers") {
      c.schedule.max_explorers = static_cast<int>(to_int(a, value(a)));
    } else if (a == "--min-explorers") {
      c.schedule.min_explorers = static_cast<int>(to_int(a, value(a)));
    } else if (a == "--kill-ratio") {
      c.schedule.kill_ratio = to_double(a, value(a));
    } else if (a == "--seed") {
      c.schedule.seed = static_cast<std::uint64_t>(to_int(a, value(a)));
    } else if (a == "--grace-seconds") {
      c.driver.grace =
          std::chrono::milliseconds(static_cast<std::int64_t>(to_double(a, value(a)) * 1000.0));
    } else if (a == "--start-tick") {
      c.driver.start_tick = static_cast<std::size_t>(to_int(a, value(a)));
    } else if (a == "--ticks") {
      c.driver.max_ticks = static_cast<std::size_t>(to_int(a, value(a)));
    } else if (a == "--loop") {
      c.driver.loop = true;
    } else if (a == "--keep-going") {
      c.driver.stop_on_clean_exit = false;
    } else if (a == "--events") {
      c.driver.events = value(a);
    } else if (a == "--summary") {
      c.summary = value(a);
    } else if (a == "--log-dir") {
      c.driver.log_dir = value(a);
    } else {
      throw std::invalid_argument("unknown argument '" + a + "'");
    }
  }
  if (c.trace.empty()) throw std::invalid_argument("--trace: required");
  if (c.driver.command.empty()) throw std::invalid_argument("--: a command to run is required");
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
