#ifndef BK_SOXR_SHIM_H
#define BK_SOXR_SHIM_H
/*
 * The part of libsoxr the Resampler uses, with libsoxr.so.0 dlopen()ed when the first
 * resampler is created instead of linked: a run whose audio is all 48 kHz never maps libsoxr
 * nor the OpenMP runtime (libgomp) it pulls in.
 *
 * Interleaved Float32 in and out, soxr's medium quality (SOXR_MQ), default runtime spec.
 */
#include <stddef.h>

typedef struct bk_soxr bk_soxr;

/* Loads libsoxr.so.0 once (thread-safe). NULL when loaded, else a one-line reason. */
const char *bk_soxr_load(void);

/* A resampler from in_rate to out_rate; loads the library first. NULL with err filled. */
bk_soxr *bk_soxr_create(double in_rate, double out_rate, unsigned channels, char *err, size_t err_len);
/* soxr_process: 0, or -1 when soxr reports an error. Lengths are in frames. */
int bk_soxr_process(bk_soxr *s, const float *in, size_t in_frames, size_t *in_done,
                    float *out, size_t out_frames, size_t *out_done);
/* Output frames soxr currently holds back. */
double bk_soxr_delay(bk_soxr *s);
void bk_soxr_delete(bk_soxr *s);

#endif
