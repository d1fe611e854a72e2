#pragma once
// Spot availability traces (docs/contracts.md): {"metadata": {"gap_seconds": G}, "data": [n...]}
// where data[i] is how many instances were available during tick i (each tick G seconds long).

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

namespace spotlight::chaos {

struct AvailabilityTrace {
  double gap_seconds = 300;
  std::vector<int> counts;

  int peak() const;  // max(counts), 0 for an empty trace
  // Drops (count going down from one tick to the next) and instances lost in them.
  std::size_t drops() const;
  std::size_t lost_instances() const;
};

// Throws std::invalid_argument naming the bad field (not JSON, missing/negative gap_seconds,
// data not a list of non-negative integers, empty data).
AvailabilityTrace parse_trace(std::string_view json);
// Throws std::runtime_error when the file cannot be read, std::invalid_argument as parse_trace.
AvailabilityTrace load_trace(const std::filesystem::path& path);

}  // namespace spotlight::chaos
