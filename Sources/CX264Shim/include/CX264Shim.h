#ifndef BK_X264_SHIM_H
#define BK_X264_SHIM_H
/* x264 calls Swift cannot make directly: a macro-named open, a variadic log callback,
   and name checks that would otherwise print to stderr. */
#include <stdint.h>
#include <x264.h>

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
#endif
