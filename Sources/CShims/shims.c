#include "CShims.h"
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>

int bk_set_malloc_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

size_t bk_heap_in_use(void) { return mallinfo2().uordblks; }

x264_t *bk_x264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }

static void bk_x264_log(void *priv, int level, const char *format, va_list args) {
    (void)level;
    bk_x264_log_buffer *sink = (bk_x264_log_buffer *)priv;
    vsnprintf(sink->message, sizeof sink->message, format, args);
}

void bk_x264_param_set_log(x264_param_t *param, int level, bk_x264_log_buffer *sink) {
    param->i_log_level = level;
    sink->message[0] = '\0';
    param->pf_log = bk_x264_log;
    param->p_log_private = sink;
}

int bk_opus_set_bitrate(OpusEncoder *encoder, int32_t bitsPerSecond) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitsPerSecond));
}

int bk_opus_get_lookahead(OpusEncoder *encoder, int32_t *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}
