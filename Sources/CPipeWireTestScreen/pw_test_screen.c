/*
 * pw-test-screen: a synthetic screen for tests. A libpipewire Video/Source *driver* node
 * (BGRx) that paces itself with a timer and burns its frame counter into the pixels:
 * 24 blocks of 16x16 px starting at (16,16), MSB first, white = 1, black = 0.
 * Each size phase has its own background colour, and a centred grey square (side = h/2)
 * lets a checker see whether scaling kept the aspect ratio.
 * It can change size on a schedule (--resize-at S:WxH,...), renegotiating the format.
 * --damage makes it damage-driven like mutter's ScreenCast: caps framerate=0/1 with
 * max-framerate=FPS/1, and a frame only when the picture changes (the first frame, then at the
 * given times), so a still screen sends one frame.
 */
#include "CPipeWireTestScreen.h"
#include <pipewire/pipewire.h>
#include <stdio.h>
#include <time.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>
#include <spa/pod/builder.h>

#define MAX_RESIZES 16
#define MAX_DAMAGES 64

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#define BLOCK 16
#define BLOCKS 24
#define ORIGIN 16

struct resize_step { double at; int w, h; };

struct screen {
    struct pw_main_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    struct spa_source *timer;
    struct spa_source *stats_timer;
    int fps;
    int req_w, req_h;        /* size we offer now */
    int w, h, stride;        /* size negotiated */
    int negotiated;
    uint64_t produced;
    uint64_t no_buffer;
    int64_t first_frame_ns;
    struct resize_step steps[MAX_RESIZES];
    int n_steps, next_step;
    int phase;
    double duration;
    const char *count_file;
    int buffers;             /* 0: a range (4, 2..8); N: exactly N buffers (--buffers) */
    int scalable;            /* --scalable: offer any size 16x16..req (default req), as a compositor that scales */
    int damage;              /* --damage: a frame only on change (framerate=0/1, max-framerate=fps) */
    double damages[MAX_DAMAGES]; /* seconds after the first frame at which the picture changes */
    int n_damages, next_damage;
    int repaint;             /* damage mode: a frame is due and not yet made (first frame, a change,
                                a consumer that started streaming); kept until on_process makes it,
                                since a trigger while the graph is still busy is ignored */
};

static const uint32_t phase_colors[] = { 0x00302060, 0x00206030, 0x00602030, 0x00404040 }; /* xRGB words */

static const struct spa_pod *build_format(struct screen *s, struct spa_pod_builder *b)
{
    if (s->scalable)
        return spa_pod_builder_add_object(b,
            SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
            SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
            SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
            SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
            SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&SPA_RECTANGLE(s->req_w, s->req_h),
                &SPA_RECTANGLE(16, 16), &SPA_RECTANGLE(s->req_w, s->req_h)),
            SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(s->fps, 1)));
    if (s->damage) /* as mutter: variable rate, frames on damage only */
        return spa_pod_builder_add_object(b,
            SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
            SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
            SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
            SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
            SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(s->req_w, s->req_h)),
            SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)),
            SPA_FORMAT_VIDEO_maxFramerate, SPA_POD_Fraction(&SPA_FRACTION(s->fps, 1)));
    return spa_pod_builder_add_object(b,
        SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(s->req_w, s->req_h)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(s->fps, 1)));
}

static void write_count(struct screen *s)
{
    if (s->count_file == NULL) return;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->count_file);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return;
    fprintf(f, "%llu %llu %dx%d\n", (unsigned long long)s->produced, (unsigned long long)s->no_buffer, s->w, s->h);
    fclose(f);
    rename(tmp, s->count_file);
}

static void draw(struct screen *s, uint8_t *base, uint64_t counter, int full)
{
    uint32_t bg = phase_colors[s->phase % 4];
    int sq = s->h / 2, sx = (s->w - sq) / 2, sy = (s->h - sq) / 2;
    for (int y = 0; full && y < s->h; y++) {
        uint32_t *row = (uint32_t *)(base + (size_t)y * s->stride);
        int in_sq_row = y >= sy && y < sy + sq;
        for (int x = 0; x < s->w; x++) row[x] = bg;
        if (in_sq_row) for (int x = sx; x < sx + sq && x < s->w; x++) row[x] = 0x00a0a0a0;
    }
    for (int i = 0; i < BLOCKS; i++) {
        uint32_t v = ((counter >> (BLOCKS - 1 - i)) & 1) ? 0x00ffffff : 0x00000000;
        int x0 = ORIGIN + i * BLOCK;
        for (int y = ORIGIN; y < ORIGIN + BLOCK && y < s->h; y++) {
            uint32_t *row = (uint32_t *)(base + (size_t)y * s->stride);
            for (int x = x0; x < x0 + BLOCK && x < s->w; x++) row[x] = v;
        }
    }
}

static void maybe_resize(struct screen *s, int64_t now)
{
    if (s->next_step >= s->n_steps || s->first_frame_ns == 0) return;
    double t = (double)(now - s->first_frame_ns) / 1e9;
    if (t < s->steps[s->next_step].at) return;
    struct resize_step *st = &s->steps[s->next_step++];
    s->req_w = st->w;
    s->req_h = st->h;
    s->phase++;
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[1] = { build_format(s, &b) };
    fprintf(stderr, "pw-test-screen: resizing to %dx%d at %.2f s (frame %llu)\n", st->w, st->h, t,
            (unsigned long long)s->produced);
    pw_stream_update_params(s->stream, params, 1);
}

static void on_process(void *data)
{
    struct screen *s = data;
    struct pw_buffer *b = pw_stream_dequeue_buffer(s->stream);
    if (b == NULL) {
        s->no_buffer++;
        return;
    }
    struct spa_buffer *buf = b->buffer;
    struct spa_data *d = &buf->datas[0];
    int64_t now = monotonic_ns();
    /* Only draw when the buffer fits the negotiated size (buffers are re-made after a resize). */
    if (!s->negotiated || d->data == NULL || d->maxsize < (uint32_t)(s->stride * s->h) ||
        (!s->scalable && (s->w != s->req_w || s->h != s->req_h))) {
        if (d->chunk) d->chunk->size = 0;
        pw_stream_queue_buffer(s->stream, b);
        return;
    }
    if (s->first_frame_ns == 0) s->first_frame_ns = now;
    /* The background is painted once per buffer and phase (a 4K frame is 33 MB); after
     * that only the counter blocks change. Buffers are re-made after a resize. */
    intptr_t painted = (intptr_t)s->phase + 1;
    draw(s, d->data, s->produced, b->user_data != (void *)painted);
    b->user_data = (void *)painted;
    d->chunk->offset = 0;
    d->chunk->stride = s->stride;
    d->chunk->size = (uint32_t)(s->stride * s->h);
    d->chunk->flags = 0;
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
    if (h != NULL) {
        h->pts = now; /* CLOCK_MONOTONIC, as compositors do */
        h->flags = 0;
        h->seq = s->produced;
        h->dts_offset = 0;
    }
    s->produced++;
    s->repaint = 0;
    pw_stream_queue_buffer(s->stream, b);
}

static void on_timer(void *data, uint64_t expirations)
{
    struct screen *s = data;
    (void)expirations;
    int64_t now = monotonic_ns();
    maybe_resize(s, now);
    if (s->damage) {
        /* Damage-driven: the first frame once negotiated, then one per scheduled change. */
        double t = s->first_frame_ns ? (double)(now - s->first_frame_ns) / 1e9 : 0;
        if (s->produced == 0) s->repaint = 1;
        while (s->next_damage < s->n_damages && t >= s->damages[s->next_damage]) {
            s->next_damage++;
            s->repaint = 1;
        }
        if (!s->repaint) return;
    }
    if (pw_stream_is_driving(s->stream)) pw_stream_trigger_process(s->stream);
}

static void on_stats_timer(void *data, uint64_t expirations)
{
    struct screen *s = data;
    (void)expirations;
    write_count(s);
    if (s->duration > 0 && s->first_frame_ns != 0 &&
        (double)(monotonic_ns() - s->first_frame_ns) / 1e9 >= s->duration)
        pw_main_loop_quit(s->loop);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
    struct screen *s = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    struct spa_video_info_raw raw;
    if (spa_format_video_raw_parse(param, &raw) < 0) return;
    s->w = (int)raw.size.width;
    s->h = (int)raw.size.height;
    s->stride = s->w * 4;
    s->negotiated = 1;
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[2];
    struct spa_pod_frame f;
    spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers);
    if (s->buffers > 0) /* --buffers N: exactly N, as some compositors insist */
        spa_pod_builder_add(&b, SPA_PARAM_BUFFERS_buffers, SPA_POD_Int(s->buffers), 0);
    else
        spa_pod_builder_add(&b, SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 8), 0);
    spa_pod_builder_add(&b,
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(s->stride * s->h),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int(s->stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)), 0);
    params[0] = spa_pod_builder_pop(&b, &f);
    params[1] = spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(s->stream, params, 2);
    fprintf(stderr, "pw-test-screen: format BGRx %dx%d, buffers %d\n", s->w, s->h, s->buffers);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error)
{
    struct screen *s = data;
    (void)old;
    fprintf(stderr, "pw-test-screen: %s%s%s\n", pw_stream_state_as_string(state), error ? ": " : "", error ? error : "");
    struct timespec interval = { 0, 1000000000L / s->fps };
    struct timespec off = { 0, 0 };
    struct pw_loop *l = pw_main_loop_get_loop(s->loop);
    /* Like mutter, a damage-driven screen sends the current picture to each new consumer. */
    if (state == PW_STREAM_STATE_STREAMING && s->produced > 0) s->repaint = 1;
    if (state == PW_STREAM_STATE_STREAMING) pw_loop_update_timer(l, s->timer, &interval, &interval, false);
    else pw_loop_update_timer(l, s->timer, &off, &off, false);
}

static const struct pw_stream_events screen_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_process,
};

static void on_signal(void *data, int sig)
{
    struct screen *s = data;
    (void)sig;
    pw_main_loop_quit(s->loop);
}

static int parse_size(const char *text, int *w, int *h)
{
    return sscanf(text, "%dx%d", w, h) == 2 && *w > 0 && *h > 0 && *w <= 8192 && *h <= 8192 ? 0 : -1;
}

static int parse_schedule(struct screen *s, const char *text)
{
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        struct resize_step st;
        char *colon = strchr(tok, ':');
        if (colon == NULL || s->n_steps >= MAX_RESIZES) { free(copy); return -1; }
        *colon = 0;
        st.at = atof(tok);
        if (parse_size(colon + 1, &st.w, &st.h) < 0) { free(copy); return -1; }
        s->steps[s->n_steps++] = st;
    }
    free(copy);
    return 0;
}

/* "never" or "" (one frame, then a still screen), or seconds "2.5,7,7.1". */
static int parse_damage(struct screen *s, const char *text)
{
    s->damage = 1;
    if (!strcmp(text, "never") || !*text) return 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        double at = strtod(tok, &end);
        if (end == tok || *end || at < 0 || s->n_damages >= MAX_DAMAGES ||
            (s->n_damages > 0 && at < s->damages[s->n_damages - 1])) { free(copy); return -1; }
        s->damages[s->n_damages++] = at;
    }
    free(copy);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: pw-test-screen [--name NODE] [--size WxH] [--fps N] [--resize-at S:WxH,...]\n"
        "                      [--count-file PATH] [--duration S] [--buffers N] [--scalable]\n"
        "                      [--damage never|S,S,...]\n"
        "A synthetic PipeWire screen (Video/Source, BGRx driver node) with a frame counter burned in:\n"
        "24 blocks of 16x16 px from (16,16), MSB first, white = 1. Defaults: pw-test-screen, 1280x720, 30 fps.\n"
        "--resize-at changes size S seconds after the first frame, e.g. 3:1920x1080,6:800x600.\n"
        "--size up to 8192x8192 (e.g. 2560x1440, 3840x2160).\n"
        "--scalable offers every size up to --size (a compositor that scales), default --size.\n"
        "--buffers N insists on exactly N buffers (default: 4, accepting 2..8).\n"
        "--damage sends frames only when the picture changes, as mutter does (caps framerate=0/1,\n"
        "  max-framerate=FPS/1): the first frame, then one at each time S (seconds after the first\n"
        "  frame, ascending); 'never' is a still screen (one frame).\n"
        "--count-file gets '<frames produced> <missed ticks> <WxH>' every second and at exit.\n");
}

int bk_pw_test_screen_main(int argc, char **argv)
{
    struct screen s;
    memset(&s, 0, sizeof(s));
    s.fps = 30;
    s.req_w = 1280;
    s.req_h = 720;
    const char *name = "pw-test-screen";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--name") && v) { name = v; i++; }
        else if (!strcmp(a, "--size") && v) { if (parse_size(v, &s.req_w, &s.req_h) < 0) goto bad; i++; }
        else if (!strcmp(a, "--fps") && v) { s.fps = atoi(v); if (s.fps < 1 || s.fps > 240) goto bad; i++; }
        else if (!strcmp(a, "--resize-at") && v) { if (parse_schedule(&s, v) < 0) goto bad; i++; }
        else if (!strcmp(a, "--count-file") && v) { s.count_file = v; i++; }
        else if (!strcmp(a, "--duration") && v) { s.duration = atof(v); i++; }
        else if (!strcmp(a, "--scalable")) s.scalable = 1;
        else if (!strcmp(a, "--damage") && v) { if (parse_damage(&s, v) < 0) goto bad; i++; }
        else if (!strcmp(a, "--buffers") && v) { s.buffers = atoi(v); if (s.buffers < 1 || s.buffers > 64) goto bad; i++; }
        else goto bad;
    }

    pw_init(NULL, NULL);
    s.loop = pw_main_loop_new(NULL);
    struct pw_loop *l = pw_main_loop_get_loop(s.loop);
    pw_loop_add_signal(l, SIGINT, on_signal, &s);
    pw_loop_add_signal(l, SIGTERM, on_signal, &s);
    s.timer = pw_loop_add_timer(l, on_timer, &s);
    s.stats_timer = pw_loop_add_timer(l, on_stats_timer, &s);
    struct timespec sec = { 1, 0 };
    pw_loop_update_timer(l, s.stats_timer, &sec, &sec, false);

    struct pw_context *context = pw_context_new(l, NULL, 0);
    struct pw_core *core = pw_context_connect(context, NULL, 0);
    if (core == NULL) {
        fprintf(stderr, "pw-test-screen: cannot connect to the PipeWire daemon: %s (is scripts/pipewire-up running?)\n",
                strerror(errno));
        return 1;
    }
    s.stream = pw_stream_new(core, name, pw_properties_new(
        PW_KEY_MEDIA_CLASS, "Video/Source",
        PW_KEY_MEDIA_TYPE, "Video",
        PW_KEY_MEDIA_CATEGORY, "Source",
        PW_KEY_NODE_NAME, name,
        PW_KEY_NODE_DESCRIPTION, "Synthetic test screen with a frame counter",
        NULL));
    pw_stream_add_listener(s.stream, &s.listener, &screen_events, &s);
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[1] = { build_format(&s, &b) };
    if (pw_stream_connect(s.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
                          PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS, params, 1) < 0) {
        fprintf(stderr, "pw-test-screen: cannot connect the stream\n");
        return 1;
    }
    fprintf(stderr, "pw-test-screen: node '%s' %dx%d@%d BGRx%s\n", name, s.req_w, s.req_h, s.fps,
            s.damage ? " damage-driven (framerate 0/1)" : "");
    pw_main_loop_run(s.loop);
    write_count(&s);
    fprintf(stderr, "pw-test-screen: produced %llu frames (%llu ticks without a free buffer)\n",
            (unsigned long long)s.produced, (unsigned long long)s.no_buffer);
    pw_stream_destroy(s.stream);
    pw_core_disconnect(core);
    pw_context_destroy(context);
    pw_main_loop_destroy(s.loop);
    return 0;
bad:
    usage(stderr);
    return 2;
}
