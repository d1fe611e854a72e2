#pragma once
// The exit codes of every Spotlight service (docs/operations.md, "Exit codes"). Orchestrators may
// restart on any non-zero code; 2 and 4 need a person (the configuration is wrong), 5 and 6 usually
// clear up (the dependency or the disk comes back), 1 is a bug or an unexpected failure.

namespace spotlight::service {

inline constexpr int kExitOk = 0;             // done, or stopped on request (SIGTERM, SIGINT)
inline constexpr int kExitFailure = 1;        // an unexpected error; the log's last line says it
inline constexpr int kExitConfig = 2;         // bad command line or configuration, at start
inline constexpr int kExitGraceExceeded = 3;  // did not stop within its grace period
inline constexpr int kExitAccessDenied = 4;   // Redis refused the credentials or permissions
inline constexpr int kExitOutageLimit = 5;    // Redis unavailable for longer than the limit
inline constexpr int kExitStorage = 6;        // a checkpoint or result file could not be written

}  // namespace spotlight::service
