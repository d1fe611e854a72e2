#include "tools/cluster/log_follower.hpp"

#include <fstream>
#include <sstream>

namespace spotlight::cluster {

void LogFollower::poll() {
  if (!out_) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::stringstream chunk;
  chunk << in.rdbuf();
  const std::string text = chunk.str();
  offset_ += text.size();
  partial_ += text;
  const auto last = partial_.rfind('\n');
  if (last == std::string::npos) return;
  *out_ << partial_.substr(0, last + 1) << std::flush;
  partial_.erase(0, last + 1);
}

void LogFollower::finish() {
  poll();
  if (out_ && !partial_.empty()) *out_ << partial_ << std::endl;
  partial_.clear();
}

}  // namespace spotlight::cluster
