/* Prints, as one JSON object, the library's table (bk_limits()) and what the C ABI's setters do at
 * each range's edges: "accepts" [min, max] and "refuses" [min - 1, max + 1] (0 = BK_OK), every
 * preset, an unknown one; then the memory plan of a 1280x720 2500 kbps + AAC 128 kbps file session
 * (its send-queue line is compared with the CLI's). usage: limits_probe OUT.flv */
#include <broadcastkit.h>
#include <stdio.h>
#include <string.h>

static const bk_limit_table *L;

static void range(const char *name, bk_range r, int comma) {
    printf("\"%s\": {\"min\": %d, \"max\": %d, \"default\": %d}%s", name, r.min, r.max, r.default_value, comma ? ", " : "");
}

/* Calls set(cfg, v) for v in {min, max, min - step, max + step} on a fresh config. */
typedef bk_status (*setter)(bk_config *, int);
static void edges(const char *name, setter set, bk_range r, int step) {
    int values[4] = { r.min, r.max, r.min - step, r.max + step };
    printf("\"%s\": [", name);
    for (int i = 0; i < 4; i++) {
        bk_config *c = bk_config_new();
        printf("%d%s", (int)set(c, values[i]), i < 3 ? ", " : "]");
        bk_config_free(c);
    }
}

static bk_status set_width(bk_config *c, int v) { return bk_config_set_video(c, v, L->height.default_value, L->fps.default_value, L->video_bitrate_kbps.default_value); }
static bk_status set_height(bk_config *c, int v) { return bk_config_set_video(c, L->width.default_value, v, L->fps.default_value, L->video_bitrate_kbps.default_value); }
static bk_status set_fps(bk_config *c, int v) { return bk_config_set_video(c, L->width.default_value, L->height.default_value, v, L->video_bitrate_kbps.default_value); }
static bk_status set_kbps(bk_config *c, int v) { return bk_config_set_video(c, L->width.default_value, L->height.default_value, L->fps.default_value, v); }
static bk_status set_gop(bk_config *c, int v) { return bk_config_set_keyframe_interval(c, v); }
static bk_status set_aac(bk_config *c, int v) { return bk_config_set_audio(c, BK_AUDIO_AAC, v); }
static bk_status set_opus(bk_config *c, int v) { return bk_config_set_audio(c, BK_AUDIO_OPUS, v); }
static bk_status set_replay(bk_config *c, int v) { return bk_config_set_replay(c, v, NULL); }
static bk_status set_attempts(bk_config *c, int v) { return bk_config_set_reconnect(c, v, L->reconnect_delay_default_seconds); }

/* A JSON string of `s` (the library's messages hold no key, only ASCII words and numbers). */
static void json_string(const char *s) {
    putchar('"');
    for (; s && *s; s++) { if (*s == '"' || *s == '\\') putchar('\\'); putchar(*s); }
    putchar('"');
}

/* bk_config_set_reconnect's first delay at {min, max, min / 2, max + 0.5}: statuses, then the
 * refusal's words for min / 2 and the attempts' refusal for min - 1. */
static void reconnect(void) {
    double values[4] = { L->reconnect_delay_min_seconds, L->reconnect_delay_max_seconds,
                         L->reconnect_delay_min_seconds / 2, L->reconnect_delay_max_seconds + 0.5 };
    printf("\"reconnect_delay\": [");
    for (int i = 0; i < 4; i++) {
        bk_config *c = bk_config_new();
        printf("%d%s", (int)bk_config_set_reconnect(c, L->reconnect_attempts.default_value, values[i]), i < 3 ? ", " : "]");
        bk_config_free(c);
    }
    bk_config *c = bk_config_new();
    bk_config_set_reconnect(c, L->reconnect_attempts.default_value, values[2]);
    printf(", \"reconnect_delay_words\": ");
    json_string(bk_config_last_error(c));
    bk_config_set_reconnect(c, L->reconnect_attempts.min - 1, L->reconnect_delay_default_seconds);
    printf(", \"reconnect_attempts_words\": ");
    json_string(bk_config_last_error(c));
    bk_config_free(c);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    L = bk_limits();
    printf("{\"table\": {");
    range("width", L->width, 1); range("height", L->height, 1); range("fps", L->fps, 1);
    range("video_bitrate_kbps", L->video_bitrate_kbps, 1); range("keyframe_interval_seconds", L->keyframe_interval_seconds, 1);
    range("aac_bitrate_kbps", L->aac_bitrate_kbps, 1); range("opus_bitrate_kbps", L->opus_bitrate_kbps, 1);
    range("replay_seconds", L->replay_seconds, 1);
    range("reconnect_attempts", L->reconnect_attempts, 1);
    printf("\"reconnect_delay\": {\"min\": %g, \"max\": %g, \"default\": %g}, ", L->reconnect_delay_min_seconds,
           L->reconnect_delay_max_seconds, L->reconnect_delay_default_seconds);
    printf("\"presets\": \"%s\", \"default_preset\": \"%s\", \"default_memory_budget_bytes\": %lld}, \"c\": {",
           L->presets, L->default_preset, (long long)L->default_memory_budget_bytes);
    edges("width", set_width, L->width, 2); printf(", ");
    edges("height", set_height, L->height, 2); printf(", ");
    edges("fps", set_fps, L->fps, 1); printf(", ");
    edges("video_bitrate_kbps", set_kbps, L->video_bitrate_kbps, 1); printf(", ");
    edges("keyframe_interval_seconds", set_gop, L->keyframe_interval_seconds, 1); printf(", ");
    edges("aac_bitrate_kbps", set_aac, L->aac_bitrate_kbps, 1); printf(", ");
    edges("opus_bitrate_kbps", set_opus, L->opus_bitrate_kbps, 1); printf(", ");
    edges("replay_seconds", set_replay, L->replay_seconds, 1); printf(", ");
    edges("reconnect_attempts", set_attempts, L->reconnect_attempts, 1); printf(", ");
    reconnect(); printf(", ");
    char presets[256];
    snprintf(presets, sizeof presets, "%s,placebo", L->presets);
    printf("\"presets\": {");
    int first = 1;
    for (char *p = strtok(presets, ","); p; p = strtok(NULL, ",")) {
        bk_config *c = bk_config_new();
        printf("%s\"%s\": %d", first ? "" : ", ", p, (int)bk_config_set_preset(c, p));
        first = 0;
        bk_config_free(c);
    }
    printf("}}, \"plan\": ");
    bk_config *c = bk_config_new();
    bk_config_set_video(c, 1280, 720, 30, 2500);
    bk_config_set_audio(c, BK_AUDIO_AAC, 128);
    bk_config_add_file(c, argv[1]);
    bk_session *s = bk_session_new(c);
    bk_config_free(c);
    char *plan = bk_session_memory_plan(s);
    printf("\"");
    for (const char *q = plan ? plan : ""; *q; q++) {
        if (*q == '\n') printf("\\n"); else if (*q == '"' || *q == '\\') printf("\\%c", *q); else putchar(*q);
    }
    printf("\"");
    bk_string_free(plan);
    bk_session_free(s);
    /* A bitrate of 0 is the library's default for the size: what target does a 1080p30 session get? */
    c = bk_config_new();
    bk_config_set_video(c, 1920, 1080, 30, 0);
    bk_config_set_memory_budget(c, 0);
    bk_config_add_file(c, argv[1]);
    s = bk_session_new(c);
    bk_config_free(c);
    bk_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    long long target = -1;
    if (bk_session_start(s) == BK_OK && bk_session_get_stats(s, &st) == BK_OK) target = (long long)st.target_video_kbps;
    bk_session_finish(s);
    bk_session_free(s);
    printf(", \"default_kbps_1080p30\": %lld}\n", target);
    return 0;
}
