#pragma once
// A spot availability trace (docs/contracts.md): {"metadata": {"gap_seconds": G}, "data":
// [instances available per tick]}. The simulator scales it to a cluster size:
//   available(t) = round(data[(t / gap_seconds) mod len] * cluster_size / max(data))
// (it wraps around at its end).

#include <string>
#include <vector>

namespace spotlight::simulator {

struct Trace {
  std::string name;  // file name without directory
  double gap_seconds = 300;
  std::vector<int> data;

  // Throws std::runtime_error naming the file and the problem.
  static Trace load(const std::string& path);
  int peak() const;
  int available(double seconds, int cluster_size) const;
};

}  // namespace spotlight::simulator
