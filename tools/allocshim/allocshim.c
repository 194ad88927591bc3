/* LD_PRELOAD shim counting heap allocation calls (malloc, calloc, realloc, aligned forms).
 *
 * In-process readers: the process under test reads the count through
 * dlsym(RTLD_DEFAULT, "bk_alloc_count"), or the calling thread's own count through
 * "bk_alloc_count_thread": tests running in parallel in one process allocate too, and only the
 * per-thread count is free of them.
 *
 * Whole-process window (for a process that knows nothing of the shim, e.g. the broadcast CLI):
 *   BK_ALLOC_WINDOW=FROM_MS:TO_MS   count every allocation, on any thread, made between FROM_MS
 *                                   and TO_MS after the shim loaded (CLOCK_MONOTONIC);
 *   BK_ALLOC_REPORT=PATH            at exit, write "window_allocations N\n" and
 *                                   "total_allocations N\n" to PATH;
 *   BK_ALLOC_BACKTRACES=N           print the backtraces of the first N allocations in the window
 *                                   to stderr (backtrace_symbols_fd: no allocation), to find them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long long count;
static _Atomic unsigned long long window_count;
/* initial-exec: a general-dynamic TLS access may itself call malloc. */
static _Thread_local unsigned long long thread_count __attribute__((tls_model("initial-exec")));
static _Thread_local int in_backtrace __attribute__((tls_model("initial-exec")));
static long long window_from_ns = -1, window_to_ns = -1, start_ns;
static _Atomic int backtraces_left;
static const char *report_path;

unsigned long long bk_alloc_count(void) { return atomic_load(&count); }
unsigned long long bk_alloc_count_thread(void) { return thread_count; }
unsigned long long bk_alloc_window_count(void) { return atomic_load(&window_count); }

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void count_one(void) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    thread_count++;
    if (window_from_ns < 0) return;
    long long t = now_ns() - start_ns;
    if (t < window_from_ns || t >= window_to_ns) return;
    atomic_fetch_add_explicit(&window_count, 1, memory_order_relaxed);
    if (!in_backtrace && atomic_fetch_sub(&backtraces_left, 1) > 0) {
        in_backtrace = 1;
        void *frames[24];
        int n = backtrace(frames, 24);
        char head[64];
        int len = snprintf(head, sizeof head, "allocshim: allocation at %lld ms:\n", t / 1000000);
        if (len > 0) write(2, head, (size_t)len);
        backtrace_symbols_fd(frames, n, 2);
        in_backtrace = 0;
    }
}

__attribute__((constructor)) static void shim_init(void) {
    start_ns = now_ns();
    const char *w = getenv("BK_ALLOC_WINDOW");
    long long from, to;
    if (w && sscanf(w, "%lld:%lld", &from, &to) == 2 && 0 <= from && from < to) {
        window_from_ns = from * 1000000LL;
        window_to_ns = to * 1000000LL;
    }
    report_path = getenv("BK_ALLOC_REPORT");
    const char *b = getenv("BK_ALLOC_BACKTRACES");
    if (b) {
        atomic_store(&backtraces_left, atoi(b));
        void *warm[2];
        backtrace(warm, 2);   /* loads libgcc_s now (it allocates), not inside the window */
    }
}

__attribute__((destructor)) static void shim_report(void) {
    if (!report_path) return;
    int fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[128];
    int len = snprintf(line, sizeof line, "window_allocations %llu\ntotal_allocations %llu\n",
                       atomic_load(&window_count), atomic_load(&count));
    if (len > 0) write(fd, line, (size_t)len);
    close(fd);
}

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) { count_one(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count_one(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count_one(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { count_one(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    count_one();
    void *p = __libc_memalign(a, n);
    if (!p) return 12;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t a, size_t n) { count_one(); return __libc_memalign(a, n); }
