#include "COpusShim.h"

int bk_opus_set_bitrate(OpusEncoder *encoder, int32_t bitsPerSecond) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitsPerSecond));
}

int bk_opus_get_lookahead(OpusEncoder *encoder, int32_t *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}
