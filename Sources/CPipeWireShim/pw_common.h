#ifndef BK_PW_COMMON_H
#define BK_PW_COMMON_H
/* Internal helpers shared by the shim's C files. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <pipewire/pipewire.h>

/* Loads libpipewire (pw_dl.h) and calls pw_init, once per process, from any thread.
 * 0, or -1 with err filled ("no PipeWire library: ...") when the library cannot be loaded. */
int bk_pw_ensure_init(char *err, size_t err_len);

static inline int64_t bk_pw_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Explains a failed connection to the daemon: what is missing and how to fix it. */
void bk_pw_describe_connect_error(int err, char *out, size_t out_len);

#endif
