/* Pushes N 1280x720 BGRx frames (a moving bar) as fast as the library takes them, with the
 * back-pressure mode given, into a file; at frame N/3 sets the bitrate to 800 kbps and at 2N/3
 * asks for a keyframe. Prints one JSON line: how many frames were accepted and dropped and what
 * the runtime controls returned, then the session's stats JSON.
 *
 * usage: block_push drop|block N OUT.flv */
#include <broadcastkit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: block_push drop|block N OUT.flv\n"); return 2; }
    int block = strcmp(argv[1], "block") == 0, n = atoi(argv[2]);
    const int w = 1280, h = 720;
    bk_config *cfg = bk_config_new();
    if (bk_config_set_video(cfg, w, h, 30, 2500) != BK_OK || bk_config_set_keyframe_interval(cfg, 20) != BK_OK
        || bk_config_set_audio(cfg, BK_AUDIO_NONE, 0) != BK_OK
        || bk_config_set_backpressure(cfg, block ? BK_BACKPRESSURE_BLOCK : BK_BACKPRESSURE_DROP) != BK_OK
        || bk_config_add_file(cfg, argv[3]) != BK_OK) {
        fprintf(stderr, "config: %s\n", bk_config_last_error(cfg));
        return 2;
    }
    bk_session *s = bk_session_new(cfg);
    bk_config_free(cfg);
    if (bk_session_start(s) != BK_OK) { fprintf(stderr, "start: %s\n", bk_session_last_error(s)); return 3; }
    unsigned char *px = malloc((size_t)w * h * 4);
    int accepted = 0, dropped = 0, bitrate = -99, keyframe = -99, bad_bitrate = -99;
    int64_t t0 = bk_now_ns();
    for (int i = 0; i < n; i++) {
        memset(px, 0x20, (size_t)w * h * 4);
        for (int y = 0; y < h; y++) memset(px + ((size_t)y * w + (size_t)(i * 8) % (w - 64)) * 4, 0xff, 64 * 4);
        bk_video_frame f = { .width = w, .height = h, .format = BK_PIXEL_BGRX, .planes = { px },
                             .strides = { w * 4 }, .plane_sizes = { (int64_t)w * h * 4 },
                             .pts_ns = t0 + (int64_t)i * 33333333 };
        bk_process_result r = bk_session_process_video(s, &f);
        if (r == BK_ACCEPTED) accepted++; else dropped++;
        if (i == n / 3) { bitrate = bk_session_set_video_bitrate(s, 800); bad_bitrate = bk_session_set_video_bitrate(s, 0); }
        if (i == 2 * n / 3) keyframe = bk_session_request_keyframe(s);
    }
    char *json = bk_session_stats_json(s);
    bk_status fin = bk_session_finish(s);
    printf("{\"accepted\": %d, \"dropped\": %d, \"set_bitrate\": %d, \"set_bitrate_0\": %d, \"request_keyframe\": %d, "
           "\"finish\": %d, \"after_finish_keyframe\": %d}\n%s\n", accepted, dropped, bitrate, bad_bitrate, keyframe, fin,
           bk_session_request_keyframe(s), json);
    bk_string_free(json);
    bk_session_free(s);
    free(px);
    return 0;
}
