#include "services/reward/memory_trim.hpp"

#include <cstdlib>  // defines __GLIBC__ with glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace spotlight::reward {

void use_separate_mappings_for_large_allocations() {
#if defined(__GLIBC__)
  // Setting the threshold also stops glibc from raising it after large frees (its dynamic
  // threshold would otherwise move megabyte buffers back onto the heap, where they stay).
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

void return_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace spotlight::reward
