#pragma once
// Write-failure injection for tests (library `spotlight_test_fault_fs`, and the LD_PRELOAD shim
// `libspotlight_test_fault_fs_preload.so` for service binaries). It interposes
// open/open64/openat/write/fsync/fdatasync/close/rename/mkdir: calls on paths under an armed
// prefix are counted as *steps*, and the step numbered `fail_at` (1-based) fails with
// `error_number` instead of running (with `sticky`, every later step fails too: a full disk).
// Everything else passes through untouched.
//
// Counted steps (paths under the prefix, and descriptors opened on them):
//   open/openat for writing; write, fsync, fdatasync, close (the descriptor is really closed) of
//   such a descriptor or of a directory opened there; rename (either path); mkdir.
// Reads are never counted or failed.
//
// In a test executable linked with spotlight_test_fault_fs, call the functions below. In a
// service binary started with LD_PRELOAD=<libspotlight_test_fault_fs_preload.so>, set the
// environment:
//   SPOTLIGHT_FAULT_PREFIX=/abs/dir   SPOTLIGHT_FAULT_AT=N   SPOTLIGHT_FAULT_ERRNO=28 (default
//   ENOSPC)   SPOTLIGHT_FAULT_STICKY=1   SPOTLIGHT_FAULT_TRACE=1 (each counted step on stderr)
// Thread-safe counters; arm and disarm from one thread while no other thread writes there.

extern "C" {
void spotlight_fault_arm(const char* prefix, long fail_at, int error_number, int sticky);
void spotlight_fault_disarm(void);
long spotlight_fault_steps(void);   // steps counted since the last arm
long spotlight_fault_failed(void);  // steps failed since the last arm
}
