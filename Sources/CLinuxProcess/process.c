#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include "CLinuxProcess.h"

int bk_set_malloc_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

int bk_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

size_t bk_heap_in_use(void) { return mallinfo2().uordblks; }
size_t bk_heap_mmapped(void) { return mallinfo2().hblkhd; }

int bk_disable_transparent_huge_pages(void) { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }

void bk_set_thread_name(const char *name) {
    char buf[16];
    strncpy(buf, name, 15);
    buf[15] = 0;
    pthread_setname_np(pthread_self(), buf);
}
