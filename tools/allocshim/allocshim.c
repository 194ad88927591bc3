/* LD_PRELOAD shim counting heap allocation calls (malloc, calloc, realloc, aligned forms).
 * The process under test reads the count through dlsym(RTLD_DEFAULT, "bk_alloc_count"), or the
 * calling thread's own count through "bk_alloc_count_thread": tests running in parallel in one
 * process allocate too, and only the per-thread count is free of them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdatomic.h>

static _Atomic unsigned long long count;
/* initial-exec: a general-dynamic TLS access may itself call malloc. */
static _Thread_local unsigned long long thread_count __attribute__((tls_model("initial-exec")));
unsigned long long bk_alloc_count(void) { return atomic_load(&count); }
unsigned long long bk_alloc_count_thread(void) { return thread_count; }

#define COUNT() (atomic_fetch_add_explicit(&count, 1, memory_order_relaxed), thread_count++)

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) { COUNT(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { COUNT(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { COUNT(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { COUNT(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    COUNT();
    void *p = __libc_memalign(a, n);
    if (!p) return 12;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t a, size_t n) { COUNT(); return __libc_memalign(a, n); }
