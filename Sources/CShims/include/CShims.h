#ifndef BROADCAST_CSHIMS_H
#define BROADCAST_CSHIMS_H
#include <stdint.h>
#include <stddef.h>

/// Limits glibc malloc arenas; each idle arena otherwise holds up to 64 MB of address space and some RSS.
int bk_set_malloc_arena_max(int arenas);
/// Returns glibc's in-use heap bytes (mallinfo2.uordblks) for allocation accounting.
size_t bk_heap_in_use(void);
#endif
