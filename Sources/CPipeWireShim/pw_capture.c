/*
 * A PipeWire capture stream on its own pw_thread_loop: one thread per stream, so video,
 * app audio and mic never wait on each other. Buffers are mapped (SHM/MemFd) and handed to
 * the owner's callback without a copy; the owner converts once into its encoder input.
 */
#include "CPipeWireShim.h"
#include "pw_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>
#include <pipewire/impl-module.h>
#include "pw_dl.h" /* last: routes pw_* calls through the loaded library */

/* Audio slices handed out at most this long (AudioBuffer.maxFrames is 22050). */
#define BK_PW_MAX_AUDIO_FRAMES 4096
/* Buffers an audio capture stream asks for (see set_audio_buffer_params). */
#define BK_PW_AUDIO_BUFFERS 8
/* ... and at most this many (the range it offers the graph). */
#define BK_PW_AUDIO_MAX_BUFFERS 32

struct bk_pw_capture {
    bk_pw_capture_config config;
    char *target;
    char *stream_name;
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;
    struct pw_stream *stream;
    struct spa_hook stream_listener;
    int failed;
    /* Reached PW_STREAM_STATE_STREAMING once: a later error or disconnect means the node left. */
    int streamed;

    /* negotiated video format */
    int32_t pixel_format;
    int32_t width, height;
    uint64_t local_sequence;
    /* Offset added to producer header PTS to land on CLOCK_MONOTONIC; see map_video_pts. */
    int64_t pts_offset;
    int pts_offset_valid;

    /* negotiated audio format */
    int32_t sample_format;
    int32_t channels, rate;
};

static void emit_event(struct bk_pw_capture *c, int32_t event, const char *message)
{
    if (c->config.on_event) c->config.on_event(c->config.ctx, event, message);
}

static void fail(struct bk_pw_capture *c, const char *message)
{
    if (c->failed) return;
    c->failed = 1;
    emit_event(c, BK_PW_EVENT_ERROR, message);
}

static int32_t pixel_from_spa(uint32_t f)
{
    switch (f) {
    case SPA_VIDEO_FORMAT_BGRx: return BK_PW_PIXEL_BGRX;
    case SPA_VIDEO_FORMAT_BGRA: return BK_PW_PIXEL_BGRA;
    case SPA_VIDEO_FORMAT_RGBx: return BK_PW_PIXEL_RGBX;
    case SPA_VIDEO_FORMAT_RGBA: return BK_PW_PIXEL_RGBA;
    case SPA_VIDEO_FORMAT_NV12: return BK_PW_PIXEL_NV12;
    case SPA_VIDEO_FORMAT_I420: return BK_PW_PIXEL_I420;
    default: return 0;
    }
}

/*
 * Video PTS on CLOCK_MONOTONIC.
 * - With a spa_meta_header PTS: compositors (mutter, xdg-desktop-portal-wlr, our test producer)
 *   stamp CLOCK_MONOTONIC nanoseconds. When the first stamp lies within 1 s of our clock we use
 *   it as is (offset 0). Otherwise the producer uses some other clock: we keep its spacing and
 *   shift it onto ours by the offset seen at the first frame. If the mapped value ever drifts
 *   more than 1 s from now (producer clock jump), the offset is re-anchored.
 * - Without a header: the graph cycle time from pw_stream_get_time_n (CLOCK_MONOTONIC), or
 *   plain now when the stream has no time report yet.
 */
static int64_t map_video_pts(struct bk_pw_capture *c, struct spa_buffer *buf)
{
    int64_t now = bk_pw_monotonic_ns();
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
    if (h != NULL && h->pts > 0) {
        int64_t mapped = h->pts + c->pts_offset;
        if (!c->pts_offset_valid || mapped > now + 1000000000LL || mapped < now - 1000000000LL) {
            int64_t diff = now - h->pts;
            c->pts_offset = (diff >= 0 && diff < 1000000000LL) ? 0 : diff;
            c->pts_offset_valid = 1;
            mapped = h->pts + c->pts_offset;
        }
        return mapped;
    }
    struct pw_time t;
    if (pw_stream_get_time_n(c->stream, &t, sizeof(t)) == 0 && t.now > 0 && t.now <= now)
        return t.now;
    return now;
}

static uint64_t video_sequence(struct bk_pw_capture *c, struct spa_buffer *buf)
{
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
    c->local_sequence++;
    return h != NULL ? h->seq : c->local_sequence;
}

static int buffer_is_corrupt(struct spa_buffer *buf)
{
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
    if (h != NULL && (h->flags & SPA_META_HEADER_FLAG_CORRUPTED)) return 1;
    return 0;
}

/* Fills the plane pointers of one video buffer; 0 when the buffer is unusable. */
static int describe_video(struct bk_pw_capture *c, struct spa_buffer *buf, bk_pw_video_frame *f)
{
    memset(f, 0, sizeof(*f));
    f->format = c->pixel_format;
    f->width = c->width;
    f->height = c->height;
    int planes = c->pixel_format == BK_PW_PIXEL_NV12 ? 2 : (c->pixel_format == BK_PW_PIXEL_I420 ? 3 : 1);
    struct spa_data *d0 = &buf->datas[0];
    if (d0->data == NULL || d0->chunk == NULL) return 0;
    if (d0->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) return 0;
    if (d0->chunk->size == 0) return 0;
    /* Every buffer of this stream comes from another process (we never allocate buffers and
     * host no producer node): MemFd data is our MAP_SHARED mapping of its fd, and MemPtr data
     * points into the MAP_SHARED mapping of the buffers' shared memblock (how the producer's
     * pool reaches a client). So its pages may be dropped once read: reading in stripes and
     * dropping each bounds what a frame keeps resident (see FrameConverter). */
    f->releasable = d0->type == SPA_DATA_MemFd || d0->type == SPA_DATA_MemPtr;

    if ((int)buf->n_datas >= planes) {
        /* One spa_data per plane. */
        for (int i = 0; i < planes; i++) {
            struct spa_data *d = &buf->datas[i];
            if (d->data == NULL || d->chunk == NULL) return 0;
            uint32_t off = d->chunk->offset % (d->maxsize ? d->maxsize : 1);
            f->planes[i] = (const uint8_t *)d->data + off;
            f->plane_sizes[i] = (int64_t)d->maxsize - off;
            f->strides[i] = d->chunk->stride;
        }
    } else {
        /* All planes in one block, each right after the previous. */
        uint32_t off = d0->chunk->offset % (d0->maxsize ? d0->maxsize : 1);
        const uint8_t *base = (const uint8_t *)d0->data + off;
        int64_t avail = (int64_t)d0->maxsize - off;
        int32_t s0 = d0->chunk->stride;
        if (s0 <= 0) s0 = c->pixel_format == BK_PW_PIXEL_NV12 || c->pixel_format == BK_PW_PIXEL_I420 ? c->width : c->width * 4;
        int64_t y_bytes = (int64_t)s0 * c->height;
        int32_t ch = (c->height + 1) / 2;
        f->planes[0] = base;
        f->strides[0] = s0;
        f->plane_sizes[0] = avail;
        if (planes == 2) {
            f->planes[1] = base + y_bytes;
            f->strides[1] = s0;
            f->plane_sizes[1] = avail - y_bytes;
        } else if (planes == 3) {
            int32_t s1 = s0 / 2;
            f->planes[1] = base + y_bytes;
            f->strides[1] = s1;
            f->plane_sizes[1] = avail - y_bytes;
            f->planes[2] = base + y_bytes + (int64_t)s1 * ch;
            f->strides[2] = s1;
            f->plane_sizes[2] = avail - y_bytes - (int64_t)s1 * ch;
        }
        for (int i = 0; i < planes; i++) if (f->plane_sizes[i] <= 0) return 0;
    }
    if (f->strides[0] <= 0) f->strides[0] = planes == 1 ? c->width * 4 : c->width;
    return 1;
}

static void on_video_process(void *data)
{
    struct bk_pw_capture *c = data;
    struct pw_buffer *b = NULL, *next;
    /* Keep only the newest buffer: when we fall behind, older frames go back to the producer. */
    while ((next = pw_stream_dequeue_buffer(c->stream)) != NULL) {
        if (b != NULL) pw_stream_queue_buffer(c->stream, b);
        b = next;
    }
    if (b == NULL) return;
    bk_pw_video_frame f;
    if (c->pixel_format != 0 && !buffer_is_corrupt(b->buffer) && describe_video(c, b->buffer, &f)) {
        f.pts_ns = map_video_pts(c, b->buffer);
        f.sequence = video_sequence(c, b->buffer);
        c->config.on_video(c->config.ctx, &f);
    }
    pw_stream_queue_buffer(c->stream, b);
}

/*
 * Audio PTS on CLOCK_MONOTONIC: pw_time.now is the monotonic time of the current graph cycle;
 * the first sample of the newest buffer was captured `delay` (device/filter latency, in graph
 * rate ticks) plus `buffered` (resampler, in stream samples) before that. Without a time report
 * we fall back to now minus the buffer's duration. Called right after the first dequeue:
 * `*ready` gets that buffer plus the ones still waiting, and the report describes the newest.
 */
static int64_t audio_pts(struct bk_pw_capture *c, int32_t frames, uint32_t *ready)
{
    int64_t now = bk_pw_monotonic_ns();
    struct pw_time t;
    *ready = 1;
    if (pw_stream_get_time_n(c->stream, &t, sizeof(t)) == 0 && t.now > 0 && t.rate.denom > 0) {
        *ready = 1 + t.avail_buffers;
        int64_t delay_ns = t.delay * 1000000000LL * (int64_t)t.rate.num / (int64_t)t.rate.denom;
        int64_t buffered_ns = c->rate > 0 ? (int64_t)t.buffered * 1000000000LL / c->rate : 0;
        int64_t pts = t.now - delay_ns - buffered_ns;
        if (pts <= now) return pts;
    }
    return now - (c->rate > 0 ? (int64_t)frames * 1000000000LL / c->rate : 0);
}

/* Frames in an audio buffer, 0 when it carries nothing we can use. */
static int32_t audio_frames(struct bk_pw_capture *c, struct spa_buffer *buf, uint32_t *offset)
{
    struct spa_data *d = &buf->datas[0];
    int32_t bpf = c->channels * (c->sample_format == BK_PW_SAMPLE_F32 ? 4 : 2);
    if (c->sample_format == 0 || d->data == NULL || d->chunk == NULL || bpf <= 0 || c->rate <= 0) return 0;
    uint32_t off = SPA_MIN(d->chunk->offset, d->maxsize);
    uint32_t size = SPA_MIN(d->chunk->size, d->maxsize - off);
    *offset = off;
    return (int32_t)(size / (uint32_t)bpf);
}

static void deliver_audio(struct bk_pw_capture *c, struct spa_buffer *buf, uint32_t off, int32_t frames, int64_t pts)
{
    int32_t bpf = c->channels * (c->sample_format == BK_PW_SAMPLE_F32 ? 4 : 2);
    const uint8_t *p = (const uint8_t *)buf->datas[0].data + off;
    int32_t done = 0;
    while (done < frames) {
        int32_t n = SPA_MIN(frames - done, BK_PW_MAX_AUDIO_FRAMES);
        bk_pw_audio_chunk chunk = {
            .format = c->sample_format, .channels = c->channels, .rate = c->rate,
            .frames = n, .data = p + (int64_t)done * bpf, .bytes = (int64_t)n * bpf,
            .pts_ns = pts + (int64_t)done * 1000000000LL / c->rate,
        };
        c->config.on_audio(c->config.ctx, &chunk);
        done += n;
    }
}

/* How long `frames` samples last at the stream's rate, in ns. */
static int64_t frames_ns(const struct bk_pw_capture *c, int64_t frames)
{
    return c->rate > 0 ? frames * 1000000000LL / c->rate : 0;
}

static void on_audio_process(void *data)
{
    struct bk_pw_capture *c = data;
    /* A callback that runs late (a starved CPU) finds several buffers ready, filled one cycle
     * apart, and the stream's time report describes the newest. So the newest starts at the
     * report's time and each older one a buffer's length before the next. (Stamping the oldest
     * with the report's time put it up to the lateness ahead of its samples, and the next
     * callback's stamp behind it: a PTS hole, then a backwards PTS the lane drops.) A stall
     * inside our own callback is the same case: the buffers that filled meanwhile are taken
     * with a fresh report. Within one callback a stamp never goes back (a stream without a
     * time report stamps each buffer by the clock). */
    int64_t end = INT64_MIN;
    for (;;) {
        struct pw_buffer *batch[BK_PW_AUDIO_MAX_BUFFERS];
        int32_t frames[BK_PW_AUDIO_MAX_BUFFERS];
        uint32_t offsets[BK_PW_AUDIO_MAX_BUFFERS];
        uint32_t ready = 1;
        int64_t newest = 0;
        int n = 0;
        struct pw_buffer *b;
        while (n < (int)(sizeof(batch) / sizeof(batch[0])) && (b = pw_stream_dequeue_buffer(c->stream)) != NULL) {
            offsets[n] = 0;
            frames[n] = audio_frames(c, b->buffer, &offsets[n]);
            if (n == 0) newest = audio_pts(c, frames[0], &ready);
            batch[n++] = b;
            if ((uint32_t)n >= ready) break;   /* the rest filled after the report: the next round */
        }
        if (n == 0) return;
        /* The report describes the newest ready buffer: batch[n-1], or one after it when the
         * stream holds more than the batch (each assumed as long as the last we took). */
        if (ready > (uint32_t)n)
            newest -= frames_ns(c, (int64_t)(ready - (uint32_t)n) * frames[n - 1]);
        int64_t start = newest;
        for (int i = n - 2; i >= 0; i--)
            start -= frames_ns(c, frames[i]);
        if (start < end) start = end;
        for (int i = 0; i < n; i++) {
            if (frames[i] > 0) deliver_audio(c, batch[i]->buffer, offsets[i], frames[i], start);
            start += frames_ns(c, frames[i]);
            pw_stream_queue_buffer(c->stream, batch[i]);
        }
        end = start;
    }
}

static void set_video_buffer_params(struct bk_pw_capture *c)
{
    uint8_t storage[512];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    int n = c->config.buffers > 0 ? c->config.buffers : 2;
    const struct spa_pod *params[2];
    /* Prefer few buffers, but accept up to 64 when the producer insists on a count: mapping
     * a buffer costs no RSS, and frames are read in released stripes, so what stays resident
     * does not depend on the count. Mappable memory only (SHM/MemFd), no DMA-BUF. */
    params[0] = spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(n, 1, 64),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd)));
    params[1] = spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(c->stream, params, 2);
}

/*
 * Audio: ask for 8 buffers (PipeWire's default for a stream is 2). This stream's process callback
 * runs on our thread loop, not in the graph's cycle: the graph can hand us a new buffer only
 * when we have given one back, so with 2 a callback more than one quantum late (21 ms at
 * 1024/48000: a starved CPU) leaves the producer no buffer for the next cycle and that cycle's
 * samples are lost upstream of us, which shows as a PTS hole of exactly one quantum. 8 rides out
 * about 150 ms of lateness; each buffer is one quantum of audio (a few KiB touched).
 */
static void set_audio_buffer_params(struct bk_pw_capture *c)
{
    uint8_t storage[256];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[1];
    params[0] = spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(BK_PW_AUDIO_BUFFERS, BK_PW_AUDIO_BUFFERS, BK_PW_AUDIO_MAX_BUFFERS));
    pw_stream_update_params(c->stream, params, 1);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
    struct bk_pw_capture *c = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    char msg[160];
    if (c->config.kind == BK_PW_CAPTURE_VIDEO) {
        struct spa_video_info_raw raw;
        uint32_t media_type, media_subtype;
        if (spa_format_parse(param, &media_type, &media_subtype) < 0 ||
            media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw ||
            spa_format_video_raw_parse(param, &raw) < 0) {
            fail(c, "PipeWire video: the node offers no raw video format we can read");
            return;
        }
        int32_t pf = pixel_from_spa(raw.format);
        if (pf == 0) {
            fail(c, "PipeWire video: unsupported pixel format (need BGRx, BGRA, RGBx, RGBA, NV12 or I420)");
            return;
        }
        c->pixel_format = pf;
        c->width = (int32_t)raw.size.width;
        c->height = (int32_t)raw.size.height;
        set_video_buffer_params(c);
        static const char *names[] = { "?", "BGRx", "BGRA", "RGBx", "RGBA", "NV12", "I420" };
        snprintf(msg, sizeof(msg), "video %s %dx%d", names[pf], c->width, c->height);
    } else {
        struct spa_audio_info_raw raw;
        if (spa_format_audio_raw_parse(param, &raw) < 0) {
            fail(c, "PipeWire audio: cannot parse the negotiated format");
            return;
        }
        c->sample_format = raw.format == SPA_AUDIO_FORMAT_F32 ? BK_PW_SAMPLE_F32
                         : raw.format == SPA_AUDIO_FORMAT_S16 ? BK_PW_SAMPLE_S16 : 0;
        c->channels = (int32_t)raw.channels;
        c->rate = (int32_t)raw.rate;
        if (c->sample_format == 0 || (c->channels != 1 && c->channels != 2) ||
            (c->rate != 48000 && c->rate != 44100)) {
            fail(c, "PipeWire audio: negotiated format is not F32/S16, 1-2 channels, 44.1/48 kHz");
            return;
        }
        set_audio_buffer_params(c);
        snprintf(msg, sizeof(msg), "audio %s %d ch %d Hz",
                 c->sample_format == BK_PW_SAMPLE_F32 ? "F32" : "S16", c->channels, c->rate);
    }
    emit_event(c, BK_PW_EVENT_FORMAT, msg);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error)
{
    struct bk_pw_capture *c = data;
    if (state == PW_STREAM_STATE_STREAMING) {
        c->streamed = 1;
        emit_event(c, BK_PW_EVENT_STREAMING, "streaming");
    } else if (state == PW_STREAM_STATE_PAUSED && old == PW_STREAM_STATE_STREAMING && c->streamed &&
               c->config.kind != BK_PW_CAPTURE_VIDEO && c->target == NULL && c->config.target_id == PW_ID_ANY) {
        /* Audio on the default device, unlinked: the device went away (unplugged). The session
         * manager links the stream to the next default (policy "follow"); until then the lane
         * is silent and the session's mixer fills it. Not an error. */
        emit_event(c, BK_PW_EVENT_NO_DEVICE, c->config.kind == BK_PW_CAPTURE_SINK_MONITOR
                   ? "the default sink went away" : "the default source went away");
    } else if (state == PW_STREAM_STATE_ERROR || (state == PW_STREAM_STATE_UNCONNECTED && c->streamed)) {
        /* Mid-stream, an error or a disconnect we did not ask for (bk_pw_capture_close stops the
         * loop first, so it sees no callback) means the node we captured is gone: the session
         * manager destroys our stream node once its target leaves, as node.dont-reconnect asks. */
        char msg[320], node[96];
        const char *what = c->config.kind == BK_PW_CAPTURE_VIDEO ? "screen" : "audio";
        if (c->target != NULL)
            snprintf(node, sizeof(node), "'%s'", c->target);
        else if (c->config.target_id != PW_ID_ANY)
            snprintf(node, sizeof(node), "%u", c->config.target_id);
        else
            snprintf(node, sizeof(node), "(default)");
        if (c->streamed)
            snprintf(msg, sizeof(msg), "PipeWire %s node %s went away mid-stream (%s)", what, node,
                     error ? error : "stream disconnected");
        else
            snprintf(msg, sizeof(msg), "PipeWire stream error: %s", error ? error : "unknown");
        fail(c, msg);
    }
}

static const struct pw_stream_events video_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_video_process,
};

static const struct pw_stream_events audio_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_audio_process,
};

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message)
{
    struct bk_pw_capture *c = data;
    (void)seq;
    if (id == PW_ID_CORE) {
        char msg[256];
        if (res == -EPIPE)
            snprintf(msg, sizeof(msg), "PipeWire daemon went away (%s)", message ? message : "broken pipe");
        else
            snprintf(msg, sizeof(msg), "PipeWire error: %s (%s)", message ? message : "unknown", spa_strerror(res));
        fail(c, msg);
    }
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_core_error,
};

static int connect_stream(struct bk_pw_capture *c, char *err, size_t err_len)
{
    const bk_pw_capture_config *cfg = &c->config;
    struct pw_properties *props;
    if (cfg->kind == BK_PW_CAPTURE_VIDEO) {
        props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture",
                                  PW_KEY_MEDIA_ROLE, "Screen", NULL);
    } else {
        props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Capture",
                                  PW_KEY_MEDIA_ROLE, cfg->kind == BK_PW_CAPTURE_SINK_MONITOR ? "Music" : "Communication",
                                  PW_KEY_NODE_LATENCY, "1024/48000", NULL);
        if (cfg->kind == BK_PW_CAPTURE_SINK_MONITOR)
            pw_properties_set(props, PW_KEY_STREAM_CAPTURE_SINK, "true");
    }
    if (c->target != NULL)
        pw_properties_set(props, PW_KEY_TARGET_OBJECT, c->target);
    /* The node asked for (by name, or by id as the portal grants it), or nothing: when it goes
     * away, the session manager must not move the stream to another node (a default mic in place
     * of the app audio, say) in silence, nor leave it waiting unlinked. */
    if (c->target != NULL || cfg->target_id != PW_ID_ANY)
        pw_properties_set(props, PW_KEY_NODE_DONT_RECONNECT, "true");
    if (c->stream_name != NULL) pw_properties_set(props, PW_KEY_NODE_NAME, c->stream_name);
    pw_properties_set(props, PW_KEY_APP_NAME, "broadcast");

    c->stream = pw_stream_new(c->core, c->stream_name ? c->stream_name : "broadcast-capture", props);
    if (c->stream == NULL) {
        snprintf(err, err_len, "PipeWire: cannot create a capture stream (%s)", strerror(errno));
        return -1;
    }
    pw_stream_add_listener(c->stream, &c->stream_listener,
                           cfg->kind == BK_PW_CAPTURE_VIDEO ? &video_events : &audio_events, c);

    uint8_t storage[2048];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[3];
    uint32_t n_params = 1;
    if (cfg->kind == BK_PW_CAPTURE_VIDEO) {
        /* In order of preference (PipeWire tries our formats first to last): exactly the output
         * size, for a producer that can scale (the smallest size that covers the output; a
         * larger one would only cost memory bandwidth); any size at least that large; any size. */
        uint32_t w = cfg->video_width > 0 ? (uint32_t)cfg->video_width : 1280;
        uint32_t h = cfg->video_height > 0 ? (uint32_t)cfg->video_height : 720;
        struct spa_rectangle sizes[3][3] = {
            { SPA_RECTANGLE(w, h), SPA_RECTANGLE(w, h), SPA_RECTANGLE(w, h) },
            { SPA_RECTANGLE(w, h), SPA_RECTANGLE(w, h), SPA_RECTANGLE(8192, 8192) },
            { SPA_RECTANGLE(w, h), SPA_RECTANGLE(1, 1), SPA_RECTANGLE(8192, 8192) },
        };
        n_params = 3;
        for (int i = 0; i < 3; i++) {
            struct spa_pod_frame f;
            spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
            spa_pod_builder_add(&b,
                SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
                SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
                SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(7,
                    SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA,
                    SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_RGBA, SPA_VIDEO_FORMAT_NV12, SPA_VIDEO_FORMAT_I420),
                SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(
                    &SPA_FRACTION(30, 1), &SPA_FRACTION(0, 1), &SPA_FRACTION(1000, 1)), 0);
            if (i == 0)
                spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&sizes[0][0]), 0);
            else
                spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_size,
                    SPA_POD_CHOICE_RANGE_Rectangle(&sizes[i][0], &sizes[i][1], &sizes[i][2]), 0);
            params[i] = spa_pod_builder_pop(&b, &f);
        }
    } else {
        int32_t ch = cfg->channels == 1 ? 1 : 2;
        uint32_t positions[2] = { SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR };
        if (ch == 1) positions[0] = SPA_AUDIO_CHANNEL_MONO;
        params[0] = spa_pod_builder_add_object(&b,
            SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
            SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_audio),
            SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
            SPA_FORMAT_AUDIO_format, SPA_POD_CHOICE_ENUM_Id(3,
                SPA_AUDIO_FORMAT_F32, SPA_AUDIO_FORMAT_F32, SPA_AUDIO_FORMAT_S16),
            SPA_FORMAT_AUDIO_rate, SPA_POD_Int(cfg->rate > 0 ? cfg->rate : 48000),
            SPA_FORMAT_AUDIO_channels, SPA_POD_Int(ch),
            SPA_FORMAT_AUDIO_position, SPA_POD_Array(sizeof(uint32_t), SPA_TYPE_Id, ch, positions));
        /* Stated at connect too: the adapter may negotiate the stream's buffers before the
         * format callback runs (see set_audio_buffer_params). */
        params[1] = spa_pod_builder_add_object(&b,
            SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
            SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(BK_PW_AUDIO_BUFFERS, BK_PW_AUDIO_BUFFERS, BK_PW_AUDIO_MAX_BUFFERS));
        n_params = 2;
    }
    int res = pw_stream_connect(c->stream, PW_DIRECTION_INPUT, cfg->target_id,
                                PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS, params, n_params);
    if (res < 0) {
        snprintf(err, err_len, "PipeWire: cannot connect the capture stream (%s)", spa_strerror(res));
        return -1;
    }
    return 0;
}

/*
 * A client context with only what a capture stream needs: client.conf also loads
 * client-device, metadata and session-manager (about 0.5 MB of library pages and their
 * state, per stream), which a capture client never uses. So no config file ("null") and the
 * three modules a pw_stream needs, loaded by hand. support.dbus=false: the D-Bus support plugin
 * (libspa-dbus, libdbus-1) is only for modules such as rt/portal that we do not load.
 * mem.allow-mlock=false: by default libpipewire mlock()s every buffer it maps, which makes
 * all of them resident at once (2 x 14.7 MB for a 2560x1440 desktop, more when the producer
 * insists on more buffers) and makes MADV_DONTNEED fail with EINVAL. Unlocked, a mapping
 * costs nothing until read, and what was read can be released (see FrameConverter).
 */
static struct pw_context *new_capture_context(struct pw_thread_loop *loop)
{
    struct pw_context *ctx = pw_context_new(pw_thread_loop_get_loop(loop),
        pw_properties_new(PW_KEY_CONFIG_NAME, "null", "mem.allow-mlock", "false", "support.dbus", "false", NULL), 0);
    if (ctx == NULL) return NULL;
    pw_context_add_spa_lib(ctx, "audio.convert.*", "audioconvert/libspa-audioconvert");
    static const char *modules[] = {
        "libpipewire-module-protocol-native", "libpipewire-module-client-node", "libpipewire-module-adapter",
    };
    for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
        if (pw_context_load_module(ctx, modules[i], NULL, NULL) == NULL) {
            int e = errno;
            pw_context_destroy(ctx);
            errno = e;
            return NULL;
        }
    }
    return ctx;
}

bk_pw_capture *bk_pw_capture_open(const bk_pw_capture_config *config, char *err, size_t err_len)
{
    if (bk_pw_ensure_init(err, err_len) < 0) return NULL;
    struct bk_pw_capture *c = calloc(1, sizeof(*c));
    if (c == NULL) { snprintf(err, err_len, "out of memory"); return NULL; }
    c->config = *config;
    c->target = config->target ? strdup(config->target) : NULL;
    c->stream_name = config->stream_name ? strdup(config->stream_name) : NULL;
    c->config.target = NULL;
    c->config.stream_name = NULL;

    c->loop = pw_thread_loop_new(c->stream_name ? c->stream_name : "bk-pw-capture", NULL);
    if (c->loop == NULL) goto fail_errno;
    c->context = new_capture_context(c->loop);
    if (c->context == NULL) goto fail_errno;
    if (pw_thread_loop_start(c->loop) < 0) goto fail_errno;

    pw_thread_loop_lock(c->loop);
    c->core = config->remote_fd >= 0 ? pw_context_connect_fd(c->context, config->remote_fd, NULL, 0)
                                     : pw_context_connect(c->context, NULL, 0);
    if (c->core == NULL) {
        int e = errno;
        pw_thread_loop_unlock(c->loop);
        bk_pw_describe_connect_error(e, err, err_len);
        bk_pw_capture_close(c);
        return NULL;
    }
    pw_core_add_listener(c->core, &c->core_listener, &core_events, c);
    int res = connect_stream(c, err, err_len);
    pw_thread_loop_unlock(c->loop);
    if (res < 0) { bk_pw_capture_close(c); return NULL; }
    return c;

fail_errno:
    snprintf(err, err_len, "PipeWire: cannot set up a capture thread (%s)", strerror(errno));
    bk_pw_capture_close(c);
    return NULL;
}

/* Runs nothing; a blocking invoke of it returns once the loop has run everything queued before. */
static int run_nothing(struct spa_loop *loop, bool async, uint32_t seq, const void *data, size_t size, void *user_data)
{
    (void)loop; (void)async; (void)seq; (void)data; (void)size; (void)user_data;
    return 0;
}

void bk_pw_capture_hold_loop(bk_pw_capture *c, int32_t ms)
{
    if (c == NULL || c->loop == NULL || ms <= 0) return;
    pw_thread_loop_lock(c->loop);
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
    pw_thread_loop_unlock(c->loop);
}

void bk_pw_capture_close(bk_pw_capture *c)
{
    if (c == NULL) return;
    /* The stream goes while the thread loop still runs. Stopping the loop first is not "no more
     * callbacks": the context's data-loop thread keeps cycling, and once the thread loop has left
     * its loop, libpipewire (0.3.65: spa loop_invoke with no loop thread) runs a non-RT stream's
     * process callback inline on that data-loop thread, racing this teardown (TSan saw
     * on_video_process there, without the lock). With the loop running, each process call is
     * queued to the thread loop instead. So, under the lock: remove our listener and disconnect
     * (which takes the node off the data loop: nothing new is queued after it); let the thread
     * loop run what was queued before (it reaches no listener now, but still names the stream,
     * so the stream must outlive it: a blocking invoke releases the lock while it waits, through
     * the thread loop's before/after hooks, so it must be made holding it); then destroy. */
    if (c->loop != NULL) pw_thread_loop_lock(c->loop);
    if (c->stream != NULL) {
        spa_hook_remove(&c->stream_listener);
        pw_stream_disconnect(c->stream);
        if (c->loop != NULL)
            pw_loop_invoke(pw_thread_loop_get_loop(c->loop), run_nothing, 0, NULL, 0, true, NULL);
        pw_stream_destroy(c->stream);
        c->stream = NULL;
    }
    if (c->core != NULL) {
        spa_hook_remove(&c->core_listener);
        pw_core_disconnect(c->core);
        c->core = NULL;
    }
    if (c->loop != NULL) {
        pw_thread_loop_unlock(c->loop);
        pw_thread_loop_stop(c->loop);   /* joins the thread loop's thread */
    }
    if (c->context != NULL) pw_context_destroy(c->context);
    if (c->loop != NULL) pw_thread_loop_destroy(c->loop);
    free(c->target);
    free(c->stream_name);
    free(c);
}
