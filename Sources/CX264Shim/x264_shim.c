#include "CX264Shim.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

static int bk_name_in(const char *const *names, const char *name, size_t length) {
    for (; *names != NULL; names++) {
        if (strlen(*names) == length && strncmp(*names, name, length) == 0) return 1;
    }
    return 0;
}

int bk_x264_preset_is_known(const char *preset) {
    return bk_name_in(x264_preset_names, preset, strlen(preset));
}

int bk_x264_tune_is_known(const char *tune) {
    // x264 splits the tune string on the same delimiters.
    const char *delimiters = ",./-+";
    while (*tune != '\0') {
        size_t length = strcspn(tune, delimiters);
        if (length > 0 && !bk_name_in(x264_tune_names, tune, length)) return 0;
        tune += length;
        if (*tune != '\0') tune++;
    }
    return 1;
}
