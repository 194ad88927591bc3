#ifndef BROADCAST_CSHIMS_H
#define BROADCAST_CSHIMS_H
#include <stdint.h>
#include <stddef.h>
#include "bk_thread.h"
#include "bk_process.h"
#include <x264.h>
#include <opus/opus.h>

/// Limits glibc malloc arenas; each idle arena otherwise holds up to 64 MB of address space and some RSS.
int bk_set_malloc_arena_max(int arenas);
/// Returns glibc's in-use heap bytes (mallinfo2.uordblks) for allocation accounting.
size_t bk_heap_in_use(void);

/// x264_encoder_open is a macro naming a build-versioned symbol; Swift cannot call it directly.
x264_t *bk_x264_encoder_open(x264_param_t *param);
/// Where x264's last log line at or above the chosen level is kept, instead of going to stderr.
typedef struct {
    char message[256];
} bk_x264_log_buffer;
/// Routes x264's log lines at or above `level` into `sink` (the last message wins).
/// The sink must outlive the encoder opened with these parameters.
void bk_x264_param_set_log(x264_param_t *param, int level, bk_x264_log_buffer *sink);

/// Whether x264 knows this preset name (x264_param_default_preset would otherwise complain on stderr).
int bk_x264_preset_is_known(const char *preset);
/// Whether every tune in a ",./-+"-separated list is known to x264 (empty is fine).
int bk_x264_tune_is_known(const char *tune);

/// opus_encoder_ctl is variadic; these wrap the requests the encoder needs.
int bk_opus_set_bitrate(OpusEncoder *encoder, int32_t bitsPerSecond);
int bk_opus_get_lookahead(OpusEncoder *encoder, int32_t *samples);
#endif
