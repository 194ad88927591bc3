/* y4m_push: the CLI's `--source y4m:FILE --pcm FILE` job done through the C ABI, for the
 * benchmark that prices the boundary (scripts/bench, section "embedding").
 *
 *   cc -O2 -o y4m_push Benchmarks/c/y4m_push.c $(pkg-config --cflags --libs broadcastkit)
 *   STREAM_KEY=... ./y4m_push URL FILE.y4m FILE.pcm SECONDS [VIDEO_KBPS]
 *
 * Reads a 4:2:0 Y4M (frame size and rate from its header) and s16le 48 kHz stereo PCM, and hands
 * each frame (I420, in place from one reusable buffer) and 1/fps of audio to the session at the
 * file's frame rate on the monotonic clock, as the CLI's Y4M and PCM sources do. Prints the
 * final stats JSON. Exit: 0 ok, 2 bad input or configuration, 3 connect, 4 failed streaming. */
#define _GNU_SOURCE
#include <broadcastkit.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int header_int(const char *line, char tag) {
    for (const char *p = line; (p = strchr(p, ' ')) != NULL; p++)
        if (p[1] == tag) return atoi(p + 2);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: y4m_push URL FILE.y4m FILE.pcm SECONDS [VIDEO_KBPS]\n"); return 2; }
    const char *url = argv[1];
    FILE *vf = fopen(argv[2], "rb"), *af = fopen(argv[3], "rb");
    int seconds = atoi(argv[4]), kbps = argc > 5 ? atoi(argv[5]) : 2500;
    char *key = getenv("STREAM_KEY");
    if (!vf || !af || !key || !*key || seconds <= 0) { fprintf(stderr, "y4m_push: bad arguments or STREAM_KEY unset\n"); return 2; }

    char line[512];
    if (!fgets(line, sizeof line, vf) || strncmp(line, "YUV4MPEG2 ", 10) != 0) { fprintf(stderr, "y4m_push: not Y4M\n"); return 2; }
    int w = header_int(line, 'W'), h = header_int(line, 'H'), fps = header_int(line, 'F');
    if (w <= 0 || h <= 0 || fps <= 0) { fprintf(stderr, "y4m_push: bad Y4M header\n"); return 2; }
    const size_t ysize = (size_t)w * h, csize = (size_t)((w + 1) / 2) * ((h + 1) / 2);
    const int spf = 48000 / fps;

    bk_process_tuning_apply();
    bk_config *cfg = bk_config_new();
    bk_config_set_video(cfg, w, h, fps, kbps);
    bk_config_set_audio(cfg, BK_AUDIO_AAC, 128);
    if (bk_config_add_destination(cfg, url, key) != BK_OK) { fprintf(stderr, "y4m_push: %s\n", bk_config_last_error(cfg)); return 2; }
    explicit_bzero(key, strlen(key));
    bk_session *s = bk_session_new(cfg);
    bk_config_free(cfg);
    bk_status st = bk_session_start(s);
    if (st != BK_OK) {
        fprintf(stderr, "y4m_push: %s\n", bk_session_last_error(s));
        return st == BK_ERR_CONNECT ? 3 : 2;
    }

    uint8_t *frame = malloc(ysize + 2 * csize);
    int16_t *pcm = malloc(sizeof(int16_t) * 2 * (size_t)spf);
    const int64_t start = bk_now_ns();
    int code = 0;
    for (int n = 0; n < seconds * fps; n++) {
        if (!fgets(line, sizeof line, vf) || strncmp(line, "FRAME", 5) != 0 ||
            fread(frame, 1, ysize + 2 * csize, vf) != ysize + 2 * csize)
            break; /* end of input */
        int64_t pts = start + (int64_t)n * 1000000000 / fps;
        bk_video_frame f = {
            .width = w, .height = h, .format = BK_PIXEL_I420,
            .planes = { frame, frame + ysize, frame + ysize + csize },
            .strides = { w, (w + 1) / 2, (w + 1) / 2 },
            .plane_sizes = { (int64_t)ysize, (int64_t)csize, (int64_t)csize }, .pts_ns = pts,
        };
        bk_session_process_video(s, &f);
        size_t got = fread(pcm, sizeof(int16_t) * 2, (size_t)spf, af);
        if (got > 0) {
            bk_audio_buffer a = { .format = BK_SAMPLE_S16, .channels = 2, .sample_rate = 48000,
                                  .frame_count = (int32_t)got, .data = pcm,
                                  .data_size = (int64_t)(got * sizeof(int16_t) * 2), .pts_ns = pts };
            bk_session_process_audio(s, BK_LANE_APP_AUDIO, &a);
        }
        int64_t next = pts + 1000000000 / fps;
        struct timespec wake = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
    }
    st = bk_session_finish(s);
    if (st != BK_OK) { fprintf(stderr, "y4m_push: %s\n", bk_session_last_error(s)); code = st == BK_ERR_STREAMING ? 4 : 2; }
    char *json = bk_session_stats_json(s);
    printf("%s\n", json ? json : "{}");
    bk_string_free(json);
    bk_session_free(s);
    free(frame);
    free(pcm);
    fclose(vf);
    fclose(af);
    return code;
}
