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
/// Makes sure a crash leaves no core file, which would hold the whole heap and with it the stream
/// key: RLIMIT_CORE 0 (soft and hard, so no child or later code raises it) and
/// /proc/self/coredump_filter 0 (a core_pattern pipe such as systemd-coredump gets a core whatever
/// the limit; with no filter bit set the kernel writes no mapping's memory into any core). The
/// process stays dumpable (no PR_SET_DUMPABLE 0), so its /proc files stay owned by its user:
/// xdg-desktop-portal identifies a caller by opening /proc/PID/root as that user. Returns 0 when
/// both took effect.
int bk_disable_core_dumps(void);
/// The process's /proc/self/coredump_filter bits, or -1 if unreadable.
int bk_coredump_filter(void);
/// madvise(MADV_DONTDUMP) on the pages that hold [start, start+length): no core writer that
/// honours the flag (the kernel, gdb's gcore) copies them. Returns 0 on success.
int bk_exclude_from_core(const void *start, size_t length);
/// PR_GET_DUMPABLE: 1 if this process could dump core / be ptraced by its user, 0 if not.
/// Test-only: faults for real. kind 1 writes through a null pointer (SIGSEGV); any other kind
/// calls abort() (SIGABRT). Used by the CLI's hidden BROADCAST_TEST_FAULT trigger.
void bk_test_fault(int kind);
#endif
