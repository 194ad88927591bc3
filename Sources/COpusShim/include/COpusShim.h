#ifndef BK_OPUS_SHIM_H
#define BK_OPUS_SHIM_H
/* opus_encoder_ctl is variadic; these wrap the requests the encoder needs. The libopus type
   is re-exported only through this module, so it does not collide with BroadcastKit.OpusEncoder
   in files that do not import it. */
#include <stdint.h>
#include <opus/opus.h>

int bk_opus_set_bitrate(OpusEncoder *encoder, int32_t bitsPerSecond);
int bk_opus_get_lookahead(OpusEncoder *encoder, int32_t *samples);
#endif
