#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include "CLinuxProcess.h"

int bk_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    int rc = setrlimit(RLIMIT_CORE, &none);
    /* A core_pattern pipe gets a core whatever RLIMIT_CORE says; with every filter bit off the
       kernel writes no memory of any mapping into it (nor into a file core). The process stays
       dumpable, so its /proc files stay its user's: the desktop portal must read /proc/PID/root. */
    int fd = open("/proc/self/coredump_filter", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) rc = -1;
    if (fd >= 0) close(fd);
    return rc;
}

int bk_coredump_filter(void) {
    int fd = open("/proc/self/coredump_filter", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[32];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = 0;
    return (int)strtol(text, NULL, 16);
}

int bk_exclude_from_core(const void *start, size_t length) {
    if (length == 0) return 0;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)start & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)start + length + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    return madvise((void *)first, end - first, MADV_DONTDUMP);
}


void bk_test_fault(int kind) {
    if (kind == 1) {
        /* volatile: the compiler may not prove the store dead or replace it with a trap. */
        volatile int *volatile nothing = NULL;
        *nothing = 1;
    }
    abort();
}
