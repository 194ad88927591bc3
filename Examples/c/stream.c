/* Streams 720p BGRx frames and a 440 Hz S16 tone through libbroadcastkit, paced like a live source.
 *
 *   cc -O2 -o stream Examples/c/stream.c $(pkg-config --cflags --libs broadcastkit) -lm
 *   STREAM_KEY=... ./stream rtmp://127.0.0.1:1935/live [seconds] [record.flv]
 *
 * Prints the stats JSON on stdout at the end. Exit: 0 ok, 2 configuration/budget, 3 connect,
 * 4 failed while streaming. With the allocation shim of tools/allocshim preloaded, it also prints
 * "allocations_per_frame" over the steady state (frames after the first 2 s). */
#define _GNU_SOURCE
#include <broadcastkit.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { W = 1280, H = 720, FPS = 30, RATE = 48000, SPF = RATE / FPS /* samples per frame: 1600 */ };
enum { TONE_PERIOD = 48 /* samples: 1 kHz at 48 kHz */ };

/* sin(x) for x in [-pi, pi] by its Taylor series (no libm needed for one table). */
static double taylor_sin(double x) {
    double term = x, sum = x;
    for (int k = 1; k < 12; k++) {
        term *= -x * x / ((2 * k) * (2 * k + 1));
        sum += term;
    }
    return sum;
}

static void on_event(const bk_event *e, void *user) {
    (void)user;
    switch (e->type) {
    case BK_EVENT_RECONNECTING: fprintf(stderr, "stream: reconnecting (attempt %d)\n", e->attempt); break;
    case BK_EVENT_RECONNECTED: fprintf(stderr, "stream: reconnected\n"); break;
    case BK_EVENT_WARNING: fprintf(stderr, "stream: warning: %s\n", e->message); break;
    case BK_EVENT_FAILED: fprintf(stderr, "stream: failed: %s\n", e->message); break;
    default: break;
    }
}

static int exit_code(bk_status st) {
    switch (st) {
    case BK_ERR_CONNECT: return 3;
    case BK_ERR_STREAMING: return 4;
    default: return 2;
    }
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "rtmp://127.0.0.1:1935/live";
    int seconds = argc > 2 ? atoi(argv[2]) : 10;
    const char *record = argc > 3 ? argv[3] : NULL;
    char *key = getenv("STREAM_KEY");
    if (!key || !*key) { fprintf(stderr, "stream: set STREAM_KEY\n"); return 2; }
    if (bk_abi_version() != BK_ABI_VERSION) { fprintf(stderr, "stream: libbroadcastkit ABI mismatch\n"); return 2; }

    /* The allocation counter of tools/allocshim when it is preloaded, else NULL. */
    unsigned long long (*alloc_count)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "bk_alloc_count");

    bk_process_tuning_apply();
    bk_config *cfg = bk_config_new();
    bk_config_set_video(cfg, W, H, FPS, 2500);
    bk_config_set_audio(cfg, BK_AUDIO_AAC, 128);
    if (bk_config_add_destination(cfg, url, key) != BK_OK) {
        fprintf(stderr, "stream: %s\n", bk_config_last_error(cfg));
        return 2;
    }
    explicit_bzero(key, strlen(key)); /* the config holds its own copy now; wipe the environment's */
    if (record) bk_config_add_file(cfg, record);
    bk_session *s = bk_session_new(cfg);
    bk_config_free(cfg); /* wipes the config's copy of the key */
    bk_session_set_event_callback(s, on_event, NULL);

    bk_status st = bk_session_start(s);
    if (st != BK_OK) {
        fprintf(stderr, "stream: %s\n", bk_session_last_error(s));
        bk_session_free(s);
        return exit_code(st);
    }

    uint8_t *pixels = malloc((size_t)W * H * 4);
    int16_t *pcm = malloc(sizeof(int16_t) * SPF * 2);
    const int frames = seconds * FPS, warmup = 2 * FPS;
    unsigned long long a0 = 0;
    long produced = 0, accepted = 0;
    int16_t tone[TONE_PERIOD];
    for (int i = 0; i < TONE_PERIOD; i++)
        tone[i] = (int16_t)(8000 * taylor_sin(2 * 3.14159265358979 * i / TONE_PERIOD - 3.14159265358979));
    long sample = 0;
    const int64_t start = bk_now_ns();

    for (int n = 0; n < frames; n++) {
        if (n == warmup && alloc_count) a0 = alloc_count();
        int64_t pts = start + (int64_t)n * 1000000000 / FPS;
        /* A moving gradient with a noisy band, so x264 spends its bitrate. */
        for (int y = 0; y < H; y++) {
            uint8_t *row = pixels + (size_t)y * W * 4;
            for (int x = 0; x < W; x++) {
                row[4 * x + 0] = (uint8_t)(x + 4 * n);
                row[4 * x + 1] = (uint8_t)y;
                row[4 * x + 2] = (y / 40 == n % 18) ? (uint8_t)(x * 7919 ^ n * 104729) : 128;
                row[4 * x + 3] = 0;
            }
        }
        bk_video_frame f = {
            .width = W, .height = H, .format = BK_PIXEL_BGRX,
            .planes = { pixels, NULL, NULL }, .strides = { W * 4, 0, 0 },
            .plane_sizes = { (int64_t)W * H * 4, 0, 0 }, .pts_ns = pts,
        };
        produced++;
        if (bk_session_process_video(s, &f) == BK_ACCEPTED) accepted++;

        for (int i = 0; i < SPF; i++) {
            int16_t v = tone[sample++ % TONE_PERIOD];
            pcm[2 * i] = v;
            pcm[2 * i + 1] = v;
        }
        bk_audio_buffer a = {
            .format = BK_SAMPLE_S16, .channels = 2, .sample_rate = RATE, .frame_count = SPF,
            .data = pcm, .data_size = (int64_t)sizeof(int16_t) * SPF * 2, .pts_ns = pts,
        };
        bk_session_process_audio(s, BK_LANE_APP_AUDIO, &a);

        int64_t next = pts + 1000000000 / FPS;
        struct timespec wake = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
    }
    unsigned long long allocs = alloc_count ? alloc_count() - a0 : 0;
    long measured = frames - warmup;

    st = bk_session_finish(s);
    if (st != BK_OK) fprintf(stderr, "stream: %s\n", bk_session_last_error(s));
    char *json = bk_session_stats_json(s);
    printf("{\"produced\":%ld,\"accepted\":%ld,\"allocations\":", produced, accepted);
    if (alloc_count)
        printf("%llu,\"allocations_per_frame\":%.4f,\"startup_allocations\":%llu,", allocs,
               measured > 0 ? (double)allocs / measured : 0.0, a0);
    else printf("null,\"allocations_per_frame\":null,");
    printf("\"stats\":%s}\n", json);
    bk_string_free(json);
    bk_session_free(s);
    free(pixels);
    free(pcm);
    return st == BK_OK ? 0 : exit_code(st);
}
