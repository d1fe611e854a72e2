#pragma once
// Returning memory to the system after a burst of large requests (issue #13.4: the reward service
// kept 1.5 GB after a load had passed). glibc keeps freed heap memory for reuse; these two calls
// make it give it back. No-ops with other C libraries.

namespace spotlight::reward {

// Process-wide, once at start: allocations of at least 256 KiB (request frames, image batches)
// get their own mappings, unmapped as soon as they are freed, instead of growing the heap.
void use_separate_mappings_for_large_allocations();

// Gives the free memory of every malloc arena back to the system (glibc malloc_trim).
void return_free_memory();

}  // namespace spotlight::reward
