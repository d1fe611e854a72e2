#include "common/outage/retry.hpp"

#include <condition_variable>
#include <iomanip>
#include <mutex>
#include <sstream>

namespace spotlight::outage {
namespace {

std::string describe(const std::string& dependency, std::chrono::duration<double> lasted,
                     std::chrono::milliseconds limit, const std::string& last_error) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << dependency << " unavailable for " << lasted.count()
      << " s, longer than the limit of " << std::chrono::duration<double>(limit).count()
      << " s; last error: " << last_error;
  return out.str();
}

}  // namespace

OutageLimitExceeded::OutageLimitExceeded(const std::string& dependency,
                                         std::chrono::duration<double> lasted,
                                         std::chrono::milliseconds limit,
                                         const std::string& last_error)
    : std::runtime_error(describe(dependency, lasted, limit, last_error)), lasted_(lasted) {}

bool wait_or_stop(const std::stop_token& stop, std::chrono::milliseconds duration) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  return wake.wait_for(lock, stop, duration, [&] { return stop.stop_requested(); });
}

}  // namespace spotlight::outage
