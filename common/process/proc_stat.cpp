#include "common/process/proc_stat.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <sched.h>
#include <unistd.h>

namespace spotlight::process {

std::optional<CpuTimes> read_cpu_times(pid_t pid, bool include_children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so fields count from the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string word; fields >> word && f.size() < 15;)
    f.push_back(word);
  if (f.size() < 15) return std::nullopt;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const auto ticks = [&](int field) { return std::stod(f[static_cast<size_t>(field - 3)]) / tick; };
  CpuTimes t;
  t.user_seconds = ticks(14) + (include_children ? ticks(16) : 0.0);
  t.system_seconds = ticks(15) + (include_children ? ticks(17) : 0.0);
  return t;
}

std::vector<int> affinity_of(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(pid, sizeof(set), &set) != 0) return {};
  std::vector<int> out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("CPU list '" + std::string(text) + "': " + why +
                                 " (expected e.g. 0 or 0-3 or 0,2-3)");
  };
  const auto number = [&](std::string_view s) {
    int value = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < 0 ||
        value >= CPU_SETSIZE) {
      throw bad("'" + std::string(s) + "' is not a CPU number");
    }
    return value;
  };
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    if (item.empty()) throw bad("empty item");
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.push_back(number(item));
    } else {
      const int lo = number(item.substr(0, dash));
      const int hi = number(item.substr(dash + 1));
      if (hi < lo) throw bad("reversed range '" + std::string(item) + "'");
      for (int cpu = lo; cpu <= hi; ++cpu)
        out.push_back(cpu);
    }
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
      ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(sorted[i]);
    if (j > i) out += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace spotlight::process
