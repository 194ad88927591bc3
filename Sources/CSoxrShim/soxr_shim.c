/* libsoxr through function pointers resolved from libsoxr.so.0 when the first resampler is made. */
#include "CSoxrShim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <soxr.h>

#define BK_SOXR_LIBRARY "libsoxr.so.0"

#define BK_SOXR_FUNCTIONS(X) \
    X(soxr_io_spec) X(soxr_quality_spec) X(soxr_create) X(soxr_process) X(soxr_delay) X(soxr_delete)

static struct {
#define BK_SOXR_MEMBER(name) __typeof__(name) *name;
    BK_SOXR_FUNCTIONS(BK_SOXR_MEMBER)
#undef BK_SOXR_MEMBER
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[300];

static void load(void)
{
    void *h = dlopen(BK_SOXR_LIBRARY, RTLD_NOW | RTLD_LOCAL); /* never closed */
    if (h == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof(load_error),
                 "cannot load %s (%s); 44.1 kHz audio needs it (Debian: apt install libsoxr0)",
                 BK_SOXR_LIBRARY, why ? why : "not found");
        return;
    }
#define BK_SOXR_RESOLVE(name) \
    if ((api.name = (__typeof__(api.name))dlsym(h, #name)) == NULL) { \
        snprintf(load_error, sizeof(load_error), "%s has no %s", BK_SOXR_LIBRARY, #name); \
        return; \
    }
    BK_SOXR_FUNCTIONS(BK_SOXR_RESOLVE)
#undef BK_SOXR_RESOLVE
    loaded = 1;
}

const char *bk_soxr_load(void)
{
    pthread_once(&load_once, load);
    return loaded ? NULL : load_error;
}

bk_soxr *bk_soxr_create(double in_rate, double out_rate, unsigned channels, char *err, size_t err_len)
{
    const char *why = bk_soxr_load();
    if (why != NULL) { snprintf(err, err_len, "%s", why); return NULL; }
    soxr_io_spec_t io = api.soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = api.soxr_quality_spec(SOXR_MQ, 0);
    soxr_error_t e = NULL;
    soxr_t s = api.soxr_create(in_rate, out_rate, channels, &e, &io, &q, NULL);
    if (s == NULL || e != NULL) {
        snprintf(err, err_len, "soxr: %s", e ? e : "cannot create a resampler");
        if (s != NULL) api.soxr_delete(s);
        return NULL;
    }
    return (bk_soxr *)(void *)s;
}

int bk_soxr_process(bk_soxr *s, const float *in, size_t in_frames, size_t *in_done,
                    float *out, size_t out_frames, size_t *out_done)
{
    soxr_error_t e = api.soxr_process((soxr_t)(void *)s, in, in_frames, in_done, out, out_frames, out_done);
    return e == NULL ? 0 : -1;
}

double bk_soxr_delay(bk_soxr *s) { return api.soxr_delay((soxr_t)(void *)s); }

void bk_soxr_delete(bk_soxr *s)
{
    if (s != NULL) api.soxr_delete((soxr_t)(void *)s);
}
