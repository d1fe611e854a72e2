#pragma once
// What /proc and the scheduler say about a process: its CPU seconds and the CPUs it may run on,
// and CPU lists in the kernel's text form ("0-2,5").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace spotlight::process {

struct CpuTimes {
  double user_seconds = 0.0;
  double system_seconds = 0.0;

  double total() const { return user_seconds + system_seconds; }
};

// utime + stime of `pid` (all its threads), plus cutime + cstime (its waited-for descendants)
// when `include_children`, from /proc/<pid>/stat. nullopt when the process does not exist.
std::optional<CpuTimes> read_cpu_times(pid_t pid, bool include_children = true);

// The CPUs `pid` (0: this thread) may run on, ascending; empty when it does not exist.
std::vector<int> affinity_of(pid_t pid);

// "0-2,5" -> {0, 1, 2, 5} (sorted, duplicates removed). Throws std::invalid_argument naming the
// text for anything else (negative numbers, reversed ranges, stray characters, empty items).
std::vector<int> parse_cpu_list(std::string_view text);
// {0, 1, 2, 5} -> "0-2,5"; {} -> "".
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace spotlight::process
