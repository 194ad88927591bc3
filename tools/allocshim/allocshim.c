/* LD_PRELOAD shim counting heap allocation calls (malloc, calloc, realloc, aligned forms).
 * The process under test reads the count through dlsym(RTLD_DEFAULT, "bk_alloc_count"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdatomic.h>

static _Atomic unsigned long long count;
unsigned long long bk_alloc_count(void) { return atomic_load(&count); }

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    void *p = __libc_memalign(a, n);
    if (!p) return 12;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t a, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_memalign(a, n); }
