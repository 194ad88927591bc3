/* broadcastsink: a GStreamer sink element over libbroadcastkit's C ABI (broadcastkit.h).
 *
 *   gst-launch-1.0 videotestsrc is-live=true ! video/x-raw,format=BGRx,width=1280,height=720 ! \
 *       broadcastsink name=b location=rtmp://127.0.0.1:1935/live stream-key=$KEY \
 *       audiotestsrc is-live=true ! b.app_audio
 *
 * Pads: "video" (always; BGRx/BGRA/RGBA/RGBx/NV12/I420), "app_audio" and "mic_audio" (always;
 * interleaved S16LE/F32LE, 1-2 channels, 44.1/48 kHz); unlinked pads are simply unused.
 * The session starts when the video caps arrive (or the first audio caps when video is not linked):
 * output size = width/height properties, else the input size. Buffer timestamps are mapped to the
 * pipeline clock (running time + base time: CLOCK_MONOTONIC with the default system clock), so the
 * lanes share one timeline. EOS on the video pad (or on every linked pad when video is unlinked)
 * finishes the stream (flush, send, close) and then posts EOS. Failures are element errors whose
 * text never contains the key; stream-key is write-only, so no tool or log can read it back.
 * gst-launch's own parser logs its command line (GST_DEBUG=*:5 and up) and ps shows it, so a key
 * typed as stream-key=... is exposed there: give it as stream-key-file=PATH or in $STREAM_KEY. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <broadcastkit.h>
#include <gst/audio/audio.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <stdlib.h>
#include <string.h>

#define PACKAGE "broadcastkit"
#define PACKAGE_VERSION "0.1.0"
#define GST_LICENSE "GPL"
#define GST_PACKAGE_NAME "BroadcastKit"
#define GST_PACKAGE_ORIGIN "https://github.com/"

GST_DEBUG_CATEGORY_STATIC(bk_sink_debug);
#define GST_CAT_DEFAULT bk_sink_debug

#define GST_TYPE_BROADCAST_SINK (gst_broadcast_sink_get_type())
G_DECLARE_FINAL_TYPE(GstBroadcastSink, gst_broadcast_sink, GST, BROADCAST_SINK, GstElement)

enum { LANE_VIDEO = 0, LANE_APP = 1, LANE_MIC = 2, LANES = 3 };

struct _GstBroadcastSink {
    GstElement parent;
    GstPad *pads[LANES];
    GstSegment segments[LANES];
    GstVideoInfo vinfo;
    gboolean vinfo_set;
    GstAudioInfo ainfo[LANES];
    gboolean ainfo_set[LANES];
    gboolean eos[LANES];

    GMutex lock; /* session lifecycle, eos flags, clock ids */
    bk_session *session;
    gboolean finished, failed;
    GstClockID clock_ids[LANES];
    gboolean flushing;

    /* properties */
    gchar *location, *stream_key, *stream_key_file, *record, *memory_budget, *preset, *audio_codec;
    guint video_bitrate, audio_bitrate, width, height, fps, keyframe_interval;
    gboolean sync;
};

enum {
    PROP_0, PROP_LOCATION, PROP_STREAM_KEY, PROP_STREAM_KEY_FILE, PROP_RECORD, PROP_MEMORY_BUDGET, PROP_VIDEO_BITRATE, PROP_PRESET,
    PROP_WIDTH, PROP_HEIGHT, PROP_FPS, PROP_KEYFRAME_INTERVAL, PROP_AUDIO_CODEC, PROP_AUDIO_BITRATE, PROP_SYNC
};

#define VIDEO_CAPS GST_VIDEO_CAPS_MAKE("{ BGRx, BGRA, RGBA, RGBx, NV12, I420 }")
#define AUDIO_CAPS "audio/x-raw, format=(string){ S16LE, F32LE }, layout=(string)interleaved, " \
                   "rate=(int){ 48000, 44100 }, channels=(int)[ 1, 2 ]"

static GstStaticPadTemplate video_template = GST_STATIC_PAD_TEMPLATE("video", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                                     GST_STATIC_CAPS(VIDEO_CAPS));
static GstStaticPadTemplate app_template = GST_STATIC_PAD_TEMPLATE("app_audio", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                                   GST_STATIC_CAPS(AUDIO_CAPS));
static GstStaticPadTemplate mic_template = GST_STATIC_PAD_TEMPLATE("mic_audio", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                                   GST_STATIC_CAPS(AUDIO_CAPS));

G_DEFINE_TYPE(GstBroadcastSink, gst_broadcast_sink, GST_TYPE_ELEMENT)

static int lane_of(GstBroadcastSink *self, GstPad *pad) {
    for (int i = 0; i < LANES; i++)
        if (self->pads[i] == pad) return i;
    return LANE_VIDEO;
}

static void wipe_key(GstBroadcastSink *self) {
    if (self->stream_key) {
        explicit_bzero(self->stream_key, strlen(self->stream_key));
        g_free(self->stream_key);
        self->stream_key = NULL;
    }
}

/* The key from stream-key, else the first line of stream-key-file, else $STREAM_KEY: a copy the
 * caller wipes and frees, or NULL with *error set (a message that never holds the key). */
static gchar *resolve_key(GstBroadcastSink *self, const gchar **error) {
    *error = NULL;
    if (self->stream_key && *self->stream_key) return g_strdup(self->stream_key);
    if (self->stream_key_file && *self->stream_key_file) {
        gchar *text = NULL;
        gsize len = 0;
        if (!g_file_get_contents(self->stream_key_file, &text, &len, NULL)) {
            *error = "stream-key-file cannot be read";
            return NULL;
        }
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) text[--len] = '\0';
        gboolean bad = len == 0;
        for (gsize i = 0; i < len; i++) bad |= (guchar)text[i] < 0x20;
        if (bad) {
            explicit_bzero(text, len);
            g_free(text);
            *error = len == 0 ? "stream-key-file is empty" : "stream-key-file holds more than one line";
            return NULL;
        }
        return text;
    }
    const char *env = getenv("STREAM_KEY");
    if (env && *env) return g_strdup(env);
    return NULL;
}

static void wipe_copy(gchar *key) {
    if (key) {
        explicit_bzero(key, strlen(key));
        g_free(key);
    }
}

/* "50M", "512K", "1G", plain bytes, or "auto". Returns FALSE when unreadable. */
static gboolean parse_size(const gchar *s, gint64 *out) {
    if (!s || !*s) return FALSE;
    if (g_ascii_strcasecmp(s, "auto") == 0) { *out = BK_MEMORY_BUDGET_AUTO; return TRUE; }
    gchar *end = NULL;
    gdouble v = g_ascii_strtod(s, &end);
    if (end == s || v < 0) return FALSE;
    gint64 mult = 1;
    if (*end == 'K' || *end == 'k') { mult = 1 << 10; end++; }
    else if (*end == 'M' || *end == 'm') { mult = 1 << 20; end++; }
    else if (*end == 'G' || *end == 'g') { mult = 1 << 30; end++; }
    if (*end == 'i') end++;
    if (*end == 'B') end++;
    if (*end) return FALSE;
    *out = (gint64)(v * mult);
    return TRUE;
}

static void on_event(const bk_event *e, void *user) {
    GstBroadcastSink *self = user;
    switch (e->type) {
    case BK_EVENT_FAILED:
        GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("%s", e->message), ("the stream failed"));
        break;
    case BK_EVENT_WARNING:
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("%s", e->message), (NULL));
        break;
    case BK_EVENT_RECONNECTING:
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("reconnecting (attempt %d, in %.1f s)", e->attempt, e->delay_seconds),
                            (NULL));
        break;
    case BK_EVENT_RECONNECTED:
        GST_ELEMENT_INFO(self, RESOURCE, WRITE, ("reconnected"), (NULL));
        break;
    case BK_EVENT_STARTED:
        GST_INFO_OBJECT(self, "live: %s", e->message);
        break;
    default:
        break;
    }
}

/* Called with the lock held. Builds the configuration from the properties and starts. */
static gboolean start_session(GstBroadcastSink *self, int in_width, int in_height, int in_fps) {
    if (self->session || self->failed) return self->session != NULL;
    bk_config *cfg = bk_config_new();
    int w = self->width ? (int)self->width : (in_width > 0 ? in_width : 1280);
    int h = self->height ? (int)self->height : (in_height > 0 ? in_height : 720);
    int fps = self->fps ? (int)self->fps : (in_fps > 0 ? in_fps : 30);
    gint64 budget = 0;
    const char *what = NULL;
    gboolean ok = FALSE;
    const gchar *key_error = NULL;
    gchar *key = self->location ? resolve_key(self, &key_error) : NULL;
    if (key_error) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s: %s", key_error, self->stream_key_file), (NULL));
        goto out;
    }
    if (bk_config_set_video(cfg, (w + 1) & ~1, (h + 1) & ~1, fps, (int)self->video_bitrate) != BK_OK) what = "video";
    else if (self->preset && bk_config_set_preset(cfg, self->preset) != BK_OK) what = "preset";
    else if (bk_config_set_keyframe_interval(cfg, (int)self->keyframe_interval) != BK_OK) what = "keyframe-interval";
    else if (bk_config_set_audio(cfg, g_strcmp0(self->audio_codec, "opus") == 0 ? BK_AUDIO_OPUS
                                 : g_strcmp0(self->audio_codec, "none") == 0 ? BK_AUDIO_NONE : BK_AUDIO_AAC,
                                 (int)self->audio_bitrate) != BK_OK) what = "audio";
    else if (!parse_size(self->memory_budget, &budget) || bk_config_set_memory_budget(cfg, budget) != BK_OK) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memory-budget '%s' unreadable (e.g. 50M, 512K, auto)",
                                                     self->memory_budget ? self->memory_budget : ""), (NULL));
        goto out;
    } else if (self->location && bk_config_add_rtmp(cfg, self->location, key ? key : "") != BK_OK) what = "location";
    else if (self->record && bk_config_add_file(cfg, self->record) != BK_OK) what = "record";
    if (what) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s: %s", what, bk_config_last_error(cfg)), (NULL));
        goto out;
    }
    if (!self->location && !self->record) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("no destination: set location (and stream-key) or record"), (NULL));
        goto out;
    }
    if (self->location && !key) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                          ("location is set but no key: set stream-key-file, $STREAM_KEY or stream-key"), (NULL));
        goto out;
    }
    bk_session *s = bk_session_new(cfg);
    bk_session_set_event_callback(s, on_event, self);
    bk_status st = bk_session_start(s);
    if (st != BK_OK) {
        /* The message of a refused plan ends with the plan itself. */
        const char *msg = bk_session_last_error(s);
        const char *nl = strchr(msg, '\n');
        gchar *first = g_strndup(msg, nl ? (gsize)(nl - msg) : strlen(msg));
        if (nl && g_str_has_suffix(first, ":")) first[strlen(first) - 1] = '\0';
        if (st == BK_ERR_MEMORY_BUDGET)
            GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("%s (memory-budget=%s; the plan follows)", first,
                                                               self->memory_budget), ("memory plan:\n%s", nl ? nl + 1 : ""));
        else if (st == BK_ERR_CONNECT)
            GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("%s", first), (NULL));
        else
            GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", first), (NULL));
        g_free(first);
        bk_session_free(s);
        goto out;
    }
    self->session = s;
    ok = TRUE;
out:
    wipe_copy(key);
    bk_config_free(cfg);
    if (!ok) self->failed = TRUE;
    return ok;
}

/* The session, started if needed; NULL when it cannot run (the error was posted). */
static bk_session *running_session(GstBroadcastSink *self, int lane) {
    g_mutex_lock(&self->lock);
    bk_session *s = NULL;
    if (!self->finished && !self->failed) {
        if (!self->session) {
            gboolean video_linked = gst_pad_is_linked(self->pads[LANE_VIDEO]);
            if (lane == LANE_VIDEO && self->vinfo_set)
                start_session(self, GST_VIDEO_INFO_WIDTH(&self->vinfo), GST_VIDEO_INFO_HEIGHT(&self->vinfo),
                              GST_VIDEO_INFO_FPS_D(&self->vinfo) > 0
                                  ? (GST_VIDEO_INFO_FPS_N(&self->vinfo) + GST_VIDEO_INFO_FPS_D(&self->vinfo) / 2)
                                        / GST_VIDEO_INFO_FPS_D(&self->vinfo) : 0);
            else if (lane != LANE_VIDEO && !video_linked)
                start_session(self, 0, 0, 0);
        }
        s = self->session;
    }
    g_mutex_unlock(&self->lock);
    return s;
}

/* Buffer time on the pipeline clock (ns), so every lane shares one timeline; waits for it when
 * sync is on. Returns FALSE when flushing. */
static gboolean buffer_time(GstBroadcastSink *self, int lane, GstBuffer *buf, gint64 *pts_ns) {
    GstClockTime ts = GST_BUFFER_PTS(buf);
    if (!GST_CLOCK_TIME_IS_VALID(ts)) { *pts_ns = bk_now_ns(); return TRUE; }
    GstClockTime rt = gst_segment_to_running_time(&self->segments[lane], GST_FORMAT_TIME, ts);
    if (!GST_CLOCK_TIME_IS_VALID(rt)) { *pts_ns = bk_now_ns(); return TRUE; }
    GstClockTime base = GST_ELEMENT_CAST(self)->base_time;
    *pts_ns = (gint64)(rt + base);
    GstClock *clock = gst_element_get_clock(GST_ELEMENT_CAST(self));
    if (!clock) return TRUE;
    gboolean go = TRUE;
    if (self->sync) {
        g_mutex_lock(&self->lock);
        if (self->flushing) go = FALSE;
        GstClockID id = go ? gst_clock_new_single_shot_id(clock, rt + base) : NULL;
        self->clock_ids[lane] = id;
        g_mutex_unlock(&self->lock);
        if (id) {
            GstClockReturn r = gst_clock_id_wait(id, NULL);
            g_mutex_lock(&self->lock);
            self->clock_ids[lane] = NULL;
            if (r == GST_CLOCK_UNSCHEDULED || self->flushing) go = FALSE;
            g_mutex_unlock(&self->lock);
            gst_clock_id_unref(id);
        }
    }
    gst_object_unref(clock);
    return go;
}

static void unschedule_all(GstBroadcastSink *self) {
    g_mutex_lock(&self->lock);
    for (int i = 0; i < LANES; i++)
        if (self->clock_ids[i]) gst_clock_id_unschedule(self->clock_ids[i]);
    g_mutex_unlock(&self->lock);
}

static GstFlowReturn chain_video(GstPad *pad, GstObject *parent, GstBuffer *buf) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(parent);
    (void)pad;
    bk_session *s = running_session(self, LANE_VIDEO);
    if (!s) {
        gst_buffer_unref(buf);
        return self->failed ? GST_FLOW_ERROR : GST_FLOW_EOS;
    }
    gint64 pts;
    if (!buffer_time(self, LANE_VIDEO, buf, &pts)) { gst_buffer_unref(buf); return GST_FLOW_FLUSHING; }
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &self->vinfo, buf, GST_MAP_READ)) {
        gst_buffer_unref(buf);
        GST_ELEMENT_ERROR(self, STREAM, FAILED, ("could not map a video buffer"), (NULL));
        return GST_FLOW_ERROR;
    }
    bk_video_frame f;
    memset(&f, 0, sizeof f);
    f.width = GST_VIDEO_FRAME_WIDTH(&frame);
    f.height = GST_VIDEO_FRAME_HEIGHT(&frame);
    switch (GST_VIDEO_FRAME_FORMAT(&frame)) {
    case GST_VIDEO_FORMAT_BGRA: f.format = BK_PIXEL_BGRA; break;
    case GST_VIDEO_FORMAT_RGBA: f.format = BK_PIXEL_RGBA; break;
    case GST_VIDEO_FORMAT_RGBx: f.format = BK_PIXEL_RGBX; break;
    case GST_VIDEO_FORMAT_NV12: f.format = BK_PIXEL_NV12; break;
    case GST_VIDEO_FORMAT_I420: f.format = BK_PIXEL_I420; break;
    default: f.format = BK_PIXEL_BGRX; break;
    }
    const guint8 *end = (const guint8 *)frame.map[0].data + frame.map[0].size;
    for (guint i = 0; i < GST_VIDEO_FRAME_N_PLANES(&frame) && i < 3; i++) {
        const guint8 *p = GST_VIDEO_FRAME_PLANE_DATA(&frame, i);
        f.planes[i] = p;
        f.strides[i] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, i);
        /* A plane may live in another memory of the buffer; bound it by its own map when so. */
        f.plane_sizes[i] = (p >= (const guint8 *)frame.map[0].data && p < end) ? (gint64)(end - p)
                           : (gint64)frame.map[i].size;
    }
    f.pts_ns = pts;
    bk_process_result r = bk_session_process_video(s, &f);
    gst_video_frame_unmap(&frame);
    gst_buffer_unref(buf);
    if (r > 0) GST_LOG_OBJECT(self, "video buffer dropped: %s", bk_drop_reason_name(r));
    return GST_FLOW_OK;
}

static GstFlowReturn chain_audio(GstPad *pad, GstObject *parent, GstBuffer *buf) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(parent);
    int lane = lane_of(self, pad);
    bk_session *s = running_session(self, lane);
    if (!s || !self->ainfo_set[lane]) {
        gst_buffer_unref(buf);
        if (self->failed) return GST_FLOW_ERROR;
        return self->finished ? GST_FLOW_EOS : GST_FLOW_OK; /* before the video caps: not yet live */
    }
    gint64 pts;
    if (!buffer_time(self, lane, buf, &pts)) { gst_buffer_unref(buf); return GST_FLOW_FLUSHING; }
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_READ)) {
        gst_buffer_unref(buf);
        return GST_FLOW_ERROR;
    }
    GstAudioInfo *ai = &self->ainfo[lane];
    int bpf = GST_AUDIO_INFO_BPF(ai), rate = GST_AUDIO_INFO_RATE(ai);
    gsize frames = bpf > 0 ? map.size / (gsize)bpf : 0, done = 0;
    while (done < frames) { /* the library takes at most 22050 frames per call */
        gsize n = MIN(frames - done, (gsize)22050);
        bk_audio_buffer a = {
            .format = GST_AUDIO_INFO_FORMAT(ai) == GST_AUDIO_FORMAT_F32LE ? BK_SAMPLE_F32 : BK_SAMPLE_S16,
            .channels = GST_AUDIO_INFO_CHANNELS(ai), .sample_rate = rate, .frame_count = (int32_t)n,
            .data = map.data + done * (gsize)bpf, .data_size = (int64_t)(n * (gsize)bpf),
            .pts_ns = pts + (gint64)gst_util_uint64_scale_int(done, GST_SECOND, rate),
        };
        bk_process_result r = bk_session_process_audio(s, lane == LANE_MIC ? BK_LANE_MIC_AUDIO : BK_LANE_APP_AUDIO, &a);
        if (r > 0) GST_LOG_OBJECT(self, "audio buffer dropped: %s", bk_drop_reason_name(r));
        done += n;
    }
    gst_buffer_unmap(buf, &map);
    gst_buffer_unref(buf);
    return GST_FLOW_OK;
}

static void finish_stream(GstBroadcastSink *self, gboolean post_eos) {
    g_mutex_lock(&self->lock);
    gboolean was = self->finished;
    self->finished = TRUE;
    bk_session *s = self->session;
    g_mutex_unlock(&self->lock);
    if (was) return;
    if (s) {
        bk_status st = bk_session_finish(s);
        char *json = bk_session_stats_json(s);
        GST_INFO_OBJECT(self, "finished: %s", json);
        bk_string_free(json);
        if (st != BK_OK) {
            GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("%s", bk_session_last_error(s)), ("the stream failed"));
            return;
        }
    }
    if (post_eos) gst_element_post_message(GST_ELEMENT_CAST(self), gst_message_new_eos(GST_OBJECT_CAST(self)));
}

static gboolean sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(parent);
    int lane = lane_of(self, pad);
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
        GstCaps *caps;
        gst_event_parse_caps(event, &caps);
        gboolean ok;
        if (lane == LANE_VIDEO) ok = self->vinfo_set = gst_video_info_from_caps(&self->vinfo, caps);
        else ok = self->ainfo_set[lane] = gst_audio_info_from_caps(&self->ainfo[lane], caps);
        gst_event_unref(event);
        if (ok && (lane == LANE_VIDEO || !gst_pad_is_linked(self->pads[LANE_VIDEO])))
            running_session(self, lane); /* connect now, before the first buffer */
        return ok;
    }
    case GST_EVENT_SEGMENT: {
        const GstSegment *seg;
        gst_event_parse_segment(event, &seg);
        gst_segment_copy_into(seg, &self->segments[lane]);
        gst_event_unref(event);
        return TRUE;
    }
    case GST_EVENT_FLUSH_START:
        g_mutex_lock(&self->lock);
        self->flushing = TRUE;
        g_mutex_unlock(&self->lock);
        unschedule_all(self);
        gst_event_unref(event);
        return TRUE;
    case GST_EVENT_FLUSH_STOP:
        g_mutex_lock(&self->lock);
        self->flushing = FALSE;
        g_mutex_unlock(&self->lock);
        gst_segment_init(&self->segments[lane], GST_FORMAT_TIME);
        gst_event_unref(event);
        return TRUE;
    case GST_EVENT_EOS: {
        gst_event_unref(event);
        g_mutex_lock(&self->lock);
        self->eos[lane] = TRUE;
        gboolean all = TRUE;
        for (int i = 0; i < LANES; i++)
            if (gst_pad_is_linked(self->pads[i]) && !self->eos[i]) all = FALSE;
        g_mutex_unlock(&self->lock);
        /* Video sets the stream's length: its EOS ends the stream even if audio would go on. */
        if (lane == LANE_VIDEO || all) finish_stream(self, TRUE);
        return TRUE;
    }
    default:
        return gst_pad_event_default(pad, parent, event);
    }
}

static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(element);
    switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
        g_mutex_lock(&self->lock);
        self->finished = self->failed = self->flushing = FALSE;
        for (int i = 0; i < LANES; i++) { self->eos[i] = FALSE; gst_segment_init(&self->segments[i], GST_FORMAT_TIME); }
        g_mutex_unlock(&self->lock);
        break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
        g_mutex_lock(&self->lock);
        self->flushing = TRUE;
        g_mutex_unlock(&self->lock);
        unschedule_all(self);
        break;
    default:
        break;
    }
    GstStateChangeReturn ret = GST_ELEMENT_CLASS(gst_broadcast_sink_parent_class)->change_state(element, transition);
    if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
        finish_stream(self, FALSE); /* streaming threads have stopped: pads are deactivated */
        g_mutex_lock(&self->lock);
        bk_session *s = self->session;
        self->session = NULL;
        self->vinfo_set = FALSE;
        for (int i = 0; i < LANES; i++) self->ainfo_set[i] = FALSE;
        g_mutex_unlock(&self->lock);
        bk_session_free(s);
    }
    /* A live sink has nothing to preroll. */
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_SUCCESS) ret = GST_STATE_CHANGE_NO_PREROLL;
    return ret;
}

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(object);
    switch (id) {
    case PROP_LOCATION: g_free(self->location); self->location = g_value_dup_string(value); break;
    case PROP_STREAM_KEY: wipe_key(self); self->stream_key = g_value_dup_string(value); break;
    case PROP_STREAM_KEY_FILE: g_free(self->stream_key_file); self->stream_key_file = g_value_dup_string(value); break;
    case PROP_RECORD: g_free(self->record); self->record = g_value_dup_string(value); break;
    case PROP_MEMORY_BUDGET: g_free(self->memory_budget); self->memory_budget = g_value_dup_string(value); break;
    case PROP_PRESET: g_free(self->preset); self->preset = g_value_dup_string(value); break;
    case PROP_AUDIO_CODEC: g_free(self->audio_codec); self->audio_codec = g_value_dup_string(value); break;
    case PROP_VIDEO_BITRATE: self->video_bitrate = g_value_get_uint(value); break;
    case PROP_AUDIO_BITRATE: self->audio_bitrate = g_value_get_uint(value); break;
    case PROP_WIDTH: self->width = g_value_get_uint(value); break;
    case PROP_HEIGHT: self->height = g_value_get_uint(value); break;
    case PROP_FPS: self->fps = g_value_get_uint(value); break;
    case PROP_KEYFRAME_INTERVAL: self->keyframe_interval = g_value_get_uint(value); break;
    case PROP_SYNC: self->sync = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
    }
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(object);
    switch (id) {
    case PROP_LOCATION: g_value_set_string(value, self->location); break;
    case PROP_STREAM_KEY_FILE: g_value_set_string(value, self->stream_key_file); break;
    case PROP_RECORD: g_value_set_string(value, self->record); break;
    case PROP_MEMORY_BUDGET: g_value_set_string(value, self->memory_budget); break;
    case PROP_PRESET: g_value_set_string(value, self->preset); break;
    case PROP_AUDIO_CODEC: g_value_set_string(value, self->audio_codec); break;
    case PROP_VIDEO_BITRATE: g_value_set_uint(value, self->video_bitrate); break;
    case PROP_AUDIO_BITRATE: g_value_set_uint(value, self->audio_bitrate); break;
    case PROP_WIDTH: g_value_set_uint(value, self->width); break;
    case PROP_HEIGHT: g_value_set_uint(value, self->height); break;
    case PROP_FPS: g_value_set_uint(value, self->fps); break;
    case PROP_KEYFRAME_INTERVAL: g_value_set_uint(value, self->keyframe_interval); break;
    case PROP_SYNC: g_value_set_boolean(value, self->sync); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break; /* stream-key is write-only */
    }
}

static void finalize(GObject *object) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(object);
    bk_session_free(self->session);
    wipe_key(self);
    g_free(self->stream_key_file);
    g_free(self->location);
    g_free(self->record);
    g_free(self->memory_budget);
    g_free(self->preset);
    g_free(self->audio_codec);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(gst_broadcast_sink_parent_class)->finalize(object);
}

static void constructed(GObject *object);

static void gst_broadcast_sink_class_init(GstBroadcastSinkClass *klass) {
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    GstElementClass *ec = GST_ELEMENT_CLASS(klass);
    oc->set_property = set_property;
    oc->get_property = get_property;
    oc->finalize = finalize;
    oc->constructed = constructed;
    ec->change_state = change_state;
    const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
    g_object_class_install_property(oc, PROP_LOCATION, g_param_spec_string("location", "Location",
        "RTMP(S) ingest base URL without the key, e.g. rtmp://host/live", NULL, rw));
    g_object_class_install_property(oc, PROP_STREAM_KEY, g_param_spec_string("stream-key", "Stream key",
        "The stream key, appended to location (write-only: never shown, logged or readable back by the "
        "element; but gst-launch logs and ps show its own command line: prefer stream-key-file or $STREAM_KEY)", NULL,
        G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(oc, PROP_STREAM_KEY_FILE, g_param_spec_string("stream-key-file", "Stream key file",
        "Read the stream key from the first line of this file when stream-key is not set (else $STREAM_KEY)",
        NULL, rw));
    g_object_class_install_property(oc, PROP_RECORD, g_param_spec_string("record", "Record",
        "Also (or only) write the FLV to this file", NULL, rw));
    g_object_class_install_property(oc, PROP_MEMORY_BUDGET, g_param_spec_string("memory-budget", "Memory budget",
        "Hard memory budget of the process: bytes or 50M/512K/1G, 0 = no check, auto = 50M or the memory "
        "cgroup's limit less headroom; a plan that cannot fit is an error that prints the plan", "50M", rw));
    g_object_class_install_property(oc, PROP_VIDEO_BITRATE, g_param_spec_uint("video-bitrate", "Video bitrate",
        "x264 target bitrate in kbps", 1, 200000, 2500, rw));
    g_object_class_install_property(oc, PROP_PRESET, g_param_spec_string("preset", "x264 preset",
        "ultrafast, superfast, veryfast, faster, fast or medium", "veryfast", rw));
    g_object_class_install_property(oc, PROP_WIDTH, g_param_spec_uint("width", "Width",
        "Output width (0 = the input's); input of any size is scaled and letter/pillarboxed", 0, 8192, 0, rw));
    g_object_class_install_property(oc, PROP_HEIGHT, g_param_spec_uint("height", "Height",
        "Output height (0 = the input's)", 0, 8192, 0, rw));
    g_object_class_install_property(oc, PROP_FPS, g_param_spec_uint("fps", "Frame rate",
        "Output frame rate (0 = the input's, else 30)", 0, 240, 0, rw));
    g_object_class_install_property(oc, PROP_KEYFRAME_INTERVAL, g_param_spec_uint("keyframe-interval",
        "Keyframe interval", "Seconds between keyframes", 1, 20, 2, rw));
    g_object_class_install_property(oc, PROP_AUDIO_CODEC, g_param_spec_string("audio-codec", "Audio codec",
        "aac (legacy FLV, every ingest), opus (Enhanced RTMP v2) or none", "aac", rw));
    g_object_class_install_property(oc, PROP_AUDIO_BITRATE, g_param_spec_uint("audio-bitrate", "Audio bitrate",
        "Audio bitrate in kbps", 16, 510, 128, rw));
    g_object_class_install_property(oc, PROP_SYNC, g_param_spec_boolean("sync", "Sync",
        "Hand buffers over at their running time on the pipeline clock (off: as fast as they come)", TRUE, rw));
    gst_element_class_set_static_metadata(ec, "Live broadcast sink (RTMP/FLV)", "Sink/Network",
        "Encodes video (x264) and app/mic audio (AAC or Opus) and publishes FLV over RTMP and/or to a file, "
        "within a hard memory budget (libbroadcastkit)", "broadcast project");
    gst_element_class_add_static_pad_template(ec, &video_template);
    gst_element_class_add_static_pad_template(ec, &app_template);
    gst_element_class_add_static_pad_template(ec, &mic_template);
}

static void gst_broadcast_sink_init(GstBroadcastSink *self) {
    GstStaticPadTemplate *t[LANES] = { &video_template, &app_template, &mic_template };
    for (int i = 0; i < LANES; i++) {
        self->pads[i] = gst_pad_new_from_static_template(t[i], t[i]->name_template);
        gst_pad_set_chain_function(self->pads[i], i == LANE_VIDEO ? chain_video : chain_audio);
        gst_pad_set_event_function(self->pads[i], sink_event);
        gst_element_add_pad(GST_ELEMENT(self), self->pads[i]);
        gst_segment_init(&self->segments[i], GST_FORMAT_TIME);
    }
    g_mutex_init(&self->lock);
    self->memory_budget = g_strdup("50M");
    self->preset = g_strdup("veryfast");
    self->audio_codec = g_strdup("aac");
    self->video_bitrate = 2500;
    self->audio_bitrate = 128;
    self->keyframe_interval = 2;
    self->sync = TRUE;
    GST_OBJECT_FLAG_SET(self, GST_ELEMENT_FLAG_SINK);
}

/* The first instance in a process is named "broadcastsink" (not "broadcastsink0"), so that
 * gst-launch's `... ! broadcastsink.app_audio` finds it without name=; later ones get the usual
 * numbered names, and name= always wins (it is set after construction). */
static void constructed(GObject *object) {
    static gint instances;
    G_OBJECT_CLASS(gst_broadcast_sink_parent_class)->constructed(object);
    if (g_atomic_int_add(&instances, 1) == 0) gst_object_set_name(GST_OBJECT(object), "broadcastsink");
}

static gboolean plugin_init(GstPlugin *plugin) {
    GST_DEBUG_CATEGORY_INIT(bk_sink_debug, "broadcastsink", 0, "BroadcastKit sink");
    if (bk_abi_version() != BK_ABI_VERSION) {
        GST_ERROR("libbroadcastkit ABI %d, plugin built for %d", bk_abi_version(), BK_ABI_VERSION);
        return FALSE;
    }
    return gst_element_register(plugin, "broadcastsink", GST_RANK_NONE, GST_TYPE_BROADCAST_SINK);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, broadcastsink,
                  "Live broadcasting sink over libbroadcastkit", plugin_init, PACKAGE_VERSION, GST_LICENSE,
                  GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
