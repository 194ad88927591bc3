#ifndef BK_LINUX_PROCESS_H
#define BK_LINUX_PROCESS_H
/* Process- and thread-level Linux knobs: malloc arenas, transparent huge pages, thread names. */
#include <stddef.h>

/// Limits glibc malloc arenas; each idle arena otherwise holds up to 64 MB of address space and some RSS.
int bk_set_malloc_arena_max(int arenas);
/// Fixes glibc's mmap threshold at `bytes` (mallopt M_MMAP_THRESHOLD), which also turns off its
/// dynamic raising: otherwise one freed large block lifts the threshold to its size and every later
/// allocation of that size stays in an arena, where freed pages linger resident.
int bk_set_mmap_threshold(int bytes);
/// Returns glibc's in-use heap bytes (mallinfo2.uordblks) for allocation accounting.
size_t bk_heap_in_use(void);
/// Returns the bytes glibc malloc holds in mmapped blocks (mallinfo2.hblkhd): large allocations,
/// which bk_heap_in_use does not count.
size_t bk_heap_mmapped(void);
/// Turns transparent huge pages off for this process (prctl PR_SET_THP_DISABLE). libx264
/// madvises its large frame buffers for huge pages, which rounds each up to 2 MB resident;
/// with THP off they cost only the pages really touched. Returns 0 on success.
int bk_disable_transparent_huge_pages(void);
/// Drops from this process's resident set the pages of private, read-only file mappings that
/// are clean copies of their file (code and read-only data of the binary and its libraries),
/// with madvise(MADV_DONTNEED): pages touched only while starting up stop counting, and the
/// ones still in use fault back in from the page cache. Mappings with written (COW) pages,
/// such as relocated RELRO data, are left alone. Returns the bytes released, or -1.
long bk_release_clean_file_pages(void);
/// Names the calling thread (visible in top -H and perf); names are cut to 15 bytes.
void bk_set_thread_name(const char *name);
#endif
