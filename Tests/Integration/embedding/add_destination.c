/* A C embedder built with `pkg-config --cflags --libs broadcastkit` (issue 39):
 *  - bk_config_add_destination() and its alias bk_config_add_rtmp() refuse the key "a/b" with the
 *    CLI's words;
 *  - the budget scope: BK_BUDGET_SESSION by default, BK_BUDGET_PROCESS on request, anything else
 *    refused;
 *  - one session with an rtmp:// and an srt:// destination added by bk_config_add_destination()
 *    streams SECONDS of 640x360@30 video, paced at real time.
 * Usage: add_destination RTMP_URL SRT_URL SECONDS (the key from $STREAM_KEY). Prints one JSON object. */
#define _POSIX_C_SOURCE 200809L
#include <broadcastkit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int contains(const char *text, const char *needle) { return text && strstr(text, needle) != NULL; }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s RTMP_URL SRT_URL SECONDS\n", argv[0]); return 2; }
    const char *key = getenv("STREAM_KEY");
    if (!key) { fprintf(stderr, "no $STREAM_KEY\n"); return 2; }
    int seconds = atoi(argv[3]);

    bk_config *bad = bk_config_new();
    int refused_destination = bk_config_add_destination(bad, argv[1], "a/b");
    char message_destination[512];
    snprintf(message_destination, sizeof message_destination, "%s", bk_config_last_error(bad));
    int refused_rtmp = bk_config_add_rtmp(bad, argv[1], "a/b");
    char message_rtmp[512];
    snprintf(message_rtmp, sizeof message_rtmp, "%s", bk_config_last_error(bad));
    int bad_scope = bk_config_set_memory_budget_scope(bad, 7);
    bk_config_free(bad);

    /* The scope as the plan states it: the default, then the process-wide opt-in. */
    int plan_scope_session = 0, plan_scope_process = 0, process_has_baseline = 0, session_has_baseline = 1;
    for (int scope = -1; scope <= BK_BUDGET_PROCESS; scope += 2) {
        bk_config *c = bk_config_new();
        bk_config_set_video(c, 640, 360, 30, 0);
        bk_config_add_destination(c, argv[1], key);
        if (scope == BK_BUDGET_PROCESS && bk_config_set_memory_budget_scope(c, BK_BUDGET_PROCESS) != BK_OK) return 1;
        bk_session *s = bk_session_new(c);
        bk_config_free(c);
        char *plan = bk_session_memory_plan(s);
        if (!plan) { fprintf(stderr, "plan: %s\n", bk_session_last_error(s)); return 1; }
        if (scope == BK_BUDGET_PROCESS) {
            plan_scope_process = contains(plan, "budget scope                       process: ");
            process_has_baseline = contains(plan, "runtime baseline (measured)");
        } else {
            plan_scope_session = contains(plan, "budget scope                       session: ");
            session_has_baseline = contains(plan, "runtime baseline (measured)");
        }
        bk_string_free(plan);
        bk_session_free(s);
    }

    bk_config *cfg = bk_config_new();
    if (bk_config_set_video(cfg, 640, 360, 30, 0) != BK_OK || bk_config_set_audio(cfg, BK_AUDIO_NONE, 0) != BK_OK) return 1;
    if (bk_config_add_destination(cfg, argv[1], key) != BK_OK) { fprintf(stderr, "rtmp: %s\n", bk_config_last_error(cfg)); return 1; }
    if (bk_config_add_destination(cfg, argv[2], "") != BK_OK) { fprintf(stderr, "srt: %s\n", bk_config_last_error(cfg)); return 1; }
    bk_session *s = bk_session_new(cfg);
    bk_config_free(cfg);
    if (bk_session_start(s) != BK_OK) { fprintf(stderr, "start: %s\n", bk_session_last_error(s)); return 3; }
    size_t size = 640 * 360 * 4;
    unsigned char *pixels = malloc(size);
    int frames = seconds * 30, accepted = 0;
    int64_t start = bk_now_ns();
    for (int i = 0; i < frames; i++) {
        int64_t due = start + (int64_t)i * 1000000000 / 30;
        for (int64_t now = bk_now_ns(); now < due; now = bk_now_ns()) {
            struct timespec ts = { 0, (long)(due - now) };
            nanosleep(&ts, NULL);
        }
        memset(pixels, (i * 5) & 0xff, size);
        bk_video_frame f = { .width = 640, .height = 360, .format = BK_PIXEL_BGRX, .planes = { pixels },
                             .strides = { 640 * 4 }, .plane_sizes = { (int64_t)size }, .pts_ns = bk_now_ns() };
        if (bk_session_process_video(s, &f) == BK_ACCEPTED) accepted++;
    }
    int finished = bk_session_finish(s);
    char *stats = bk_session_stats_json(s);
    printf("{\"refused_destination\":%d,\"message_destination\":\"%s\",\"refused_rtmp\":%d,\"message_rtmp\":\"%s\","
           "\"bad_scope\":%d,\"plan_scope_session\":%d,\"session_has_baseline\":%d,\"plan_scope_process\":%d,"
           "\"process_has_baseline\":%d,\"produced\":%d,\"accepted\":%d,\"finish\":%d,\"stats\":%s}\n",
           refused_destination, message_destination, refused_rtmp, message_rtmp, bad_scope, plan_scope_session,
           session_has_baseline, plan_scope_process, process_has_baseline, frames, accepted, finished, stats);
    bk_string_free(stats);
    bk_session_free(s);
    free(pixels);
    return 0;
}
