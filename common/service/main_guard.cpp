#include "common/service/main_guard.hpp"

#include <cstdlib>

#include "common/config/error.hpp"
#include "common/durable/durable_file.hpp"
#include "common/log/log.hpp"
#include "common/outage/failure.hpp"
#include "common/outage/retry.hpp"
#include "common/service/exit_codes.hpp"

namespace spotlight::service {
namespace {

[[noreturn]] void on_terminate() {
  std::string what = "no active exception";
  if (const auto current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
  }
  log::error("fatal: {} (terminate called; exiting with {})", what, kExitFailure);
  std::_Exit(kExitFailure);
}

}  // namespace

int exit_code_for(const std::exception& e) {
  if (dynamic_cast<const config::ConfigError*>(&e) != nullptr) return kExitConfig;
  if (outage::classify(e) == outage::Failure::kAccessDenied) return kExitAccessDenied;
  if (dynamic_cast<const outage::OutageLimitExceeded*>(&e) != nullptr) return kExitOutageLimit;
  if (dynamic_cast<const durable::WriteError*>(&e) != nullptr) return kExitStorage;
  return kExitFailure;
}

int guarded_main(const std::string& component, const std::function<int()>& body) {
  log::set_component(component);
  std::set_terminate(on_terminate);
  try {
    return body();
  } catch (const std::exception& e) {
    const int code = exit_code_for(e);
    log::error("{} failed: {} (exit code {})", component, e.what(), code);
    return code;
  } catch (...) {
    log::error("{} failed: an exception that is not a std::exception (exit code {})", component,
               kExitFailure);
    return kExitFailure;
  }
}

}  // namespace spotlight::service
