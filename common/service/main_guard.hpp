#pragma once
// The top of every service's main(): no exception ends a process as std::terminate (SIGABRT and
// no message); each becomes one error line and a documented exit code (exit_codes.hpp).
//
//   int main(int argc, char** argv) {
//     return spotlight::service::guarded_main("planner", [&] { ... return exit code; });
//   }
//
// guarded_main(component, body) ==
//   log::set_component(component); install the terminate handler
//   try { return body(); }
//   catch (e) { log::error("<component> failed: <what>"); return exit_code_for(e); }
//
// The terminate handler covers exceptions escaping other threads: it logs one line (with the
// exception's message when there is one) and ends the process with kExitFailure.

#include <exception>
#include <functional>
#include <string>

namespace spotlight::service {

// config::ConfigError -> kExitConfig; Redis access denied (outage::Failure::kAccessDenied) ->
// kExitAccessDenied; outage::OutageLimitExceeded -> kExitOutageLimit; durable::WriteError ->
// kExitStorage; anything else -> kExitFailure.
int exit_code_for(const std::exception& error);

int guarded_main(const std::string& component, const std::function<int()>& body);

}  // namespace spotlight::service
