/* libsoxr through function pointers resolved from libsoxr.so.0 when the first resampler is made. */
#include "CSoxrShim.h"
#include "bk_dynamic_library.h"

#include <stdio.h>
#include <soxr.h>

#define BK_SOXR_FUNCTIONS(X) \
    X(soxr_io_spec) X(soxr_quality_spec) X(soxr_create) X(soxr_process) X(soxr_delay) X(soxr_delete)

static struct {
#define BK_SOXR_MEMBER(name) __typeof__(name) *name;
    BK_SOXR_FUNCTIONS(BK_SOXR_MEMBER)
#undef BK_SOXR_MEMBER
} api;

#define BK_SOXR_ENTRY(name) BK_DL_REQUIRED(name, api.name),
static const bk_dl_symbol symbols[] = {BK_SOXR_FUNCTIONS(BK_SOXR_ENTRY)};
#undef BK_SOXR_ENTRY
static const char *const sonames[] = {"libsoxr.so.0", NULL};
static bk_dl_library library = BK_DL_LIBRARY("44.1 kHz audio", sonames, "libsoxr0", symbols, NULL);

const char *bk_soxr_load(void) { return bk_dl_load(&library) != NULL ? NULL : bk_dl_error(&library); }

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
