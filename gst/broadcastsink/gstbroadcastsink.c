/* broadcastsink: a GStreamer sink element over libbroadcastkit's C ABI (broadcastkit.h).
 *
 *   gst-launch-1.0 videotestsrc is-live=true ! video/x-raw,format=BGRx,width=1280,height=720 ! \
 *       broadcastsink name=b location=rtmp://127.0.0.1:1935/live stream-key-file=key.txt \
 *       audiotestsrc is-live=true ! b.app_audio
 *
 * A GstBaseSink: its "sink" pad takes video (BGRx/BGRA/RGBA/RGBx/NV12/I420) and gives the element
 * GStreamer's sink semantics: it prerolls (the state change to PAUSED completes on the first video
 * buffer, which is encoded only in PLAYING), consumes nothing in PAUSED, honours `sync`, `qos`,
 * `max-lateness` and posts EOS after the stream is finished. The audio pads "app_audio" and
 * "mic_audio" (on request, one per audio lane; interleaved S16LE/F32LE, 1-2 channels, 44.1/48 kHz)
 * are held back the same way: their buffers wait while the element is not PLAYING, and with
 * sync=true for their running time on the pipeline clock; with sync=false and non-live input, for
 * the video to reach their running time (pace_audio). No audio pad requested when the session
 * starts: a video-only stream, with no audio track.
 *
 * location is the publish URL without the key: rtmp(s)://host/app (the key appended as the last
 * path element), srt://host:port[?…] (the key fills streamid) or a WHIP endpoint http(s)://… (the
 * key is the bearer token). As a GstURIHandler (sink, rank none) the element takes those schemes
 * with the key inside the URI, and moves it to stream-key (see uri_set_uri).
 *
 * Back-pressure (`backpressure`, default auto): live input (a camera, a screen, is-live=true)
 * drops a frame the encoder has no room for, counted, with a QoS message and a rate-limited
 * WARNING; non-live input (a file, videotestsrc) is held back (the library's block mode), so every
 * buffer is encoded: the recordings and a network destination slower than the encoder hold the
 * streaming threads back too, as a GstBaseSink does, and no timestamp is moved. Liveness comes from
 * the upstream latency query when the session starts.
 *
 * The session starts when the video caps arrive (or the first audio caps when video is not
 * linked): output size = width/height properties, else the input size. Buffer timestamps are
 * mapped to the pipeline clock (running time + base time: CLOCK_MONOTONIC with the default system
 * clock), so the lanes share one timeline. EOS on the video pad (or on every linked audio pad when
 * video is unlinked) finishes the stream (flush, send, close) and then posts EOS. Failures are
 * element errors whose text never contains the key; stream-key is write-only, so no tool or log
 * can read it back. gst-launch's own parser logs its command line (GST_DEBUG=*:5 and up) and ps
 * shows it, so a key typed as stream-key=... is exposed there: give it as stream-key-file=PATH or
 * in $STREAM_KEY.
 *
 * While PLAYING: `video-bitrate` can be changed, `stats` reads the session's counters, the action
 * signals "save-replay" (with replay-seconds > 0) and "request-keyframe" act on the session, and a
 * force-key-unit event (downstream, through the video pad, or upstream, sent to the element)
 * makes the next picture a keyframe. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <broadcastkit.h>
#include <gst/audio/audio.h>
#include <gst/base/gstbasesink.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <stdlib.h>
#include <string.h>

#define PACKAGE "broadcastkit"
#define PACKAGE_VERSION "0.2.0"
/* GStreamer's name for GPL-2.0-or-later, the project's licence (LICENSE). */
#define GST_LICENSE "GPL"
#define GST_PACKAGE_NAME "broadcast (BroadcastKit)"
/* The project publishes no URL: the origin names the project instead of inventing one. */
#define GST_PACKAGE_ORIGIN "the broadcast project (BroadcastKit)"

GST_DEBUG_CATEGORY_STATIC(bk_sink_debug);
#define GST_CAT_DEFAULT bk_sink_debug

#define GST_TYPE_BROADCAST_SINK (gst_broadcast_sink_get_type())
G_DECLARE_FINAL_TYPE(GstBroadcastSink, gst_broadcast_sink, GST, BROADCAST_SINK, GstBaseSink)

enum { LANE_VIDEO = 0, LANE_APP = 1, LANE_MIC = 2, LANES = 3 };
typedef enum { BACKPRESSURE_AUTO = 0, BACKPRESSURE_DROP = 1, BACKPRESSURE_BLOCK = 2 } Backpressure;

/* How far unpaced (sync=false) non-live audio may run ahead of the video, and the longest it
 * waits for the video to catch up (a pipeline without queues that feeds both pads from one
 * thread then goes on instead of deadlocking). */
#define AUDIO_LEAD_NS (200 * GST_MSECOND)
#define AUDIO_PACE_TIMEOUT_US (2 * G_TIME_SPAN_SECOND)

/* Seconds between two WARNING messages about drops (each QoS message is posted). */
#define DROP_WARNING_INTERVAL_NS (5 * GST_SECOND)

struct _GstBroadcastSink {
    GstBaseSink parent;
    GstPad *pads[LANES]; /* pads[LANE_VIDEO] is the base sink's pad */
    GstSegment segments[LANES]; /* audio lanes; video uses the base sink's */
    GstVideoInfo vinfo;
    gboolean vinfo_set;
    GstAudioInfo ainfo[LANES];
    gboolean ainfo_set[LANES];
    gboolean eos[LANES];

    GMutex lock; /* session lifecycle, flags, clock ids */
    GCond cond;  /* playing / flushing / stopping changed */
    bk_session *session;
    gboolean finished, failed, playing, stopping, block;
    /* Running time of the last video buffer handed to the session (NONE before the first) and
     * whether video has ended: unpaced audio waits for the video to catch up (see pace_audio). */
    GstClockTime video_rt;
    gboolean video_done;
    gboolean flushing[LANES];
    GstClockID clock_ids[LANES];
    guint64 processed[LANES], dropped[LANES];
    gint64 last_warning_ns;

    /* properties */
    gchar *location, *stream_key, *stream_key_file, *record, *memory_budget, *preset, *audio_codec, *replay_dir;
    guint video_bitrate, audio_bitrate, width, height, fps, keyframe_interval, replay_seconds;
    gint reconnect_attempts;
    gdouble reconnect_delay;
    Backpressure backpressure;
};

enum {
    PROP_0, PROP_LOCATION, PROP_STREAM_KEY, PROP_STREAM_KEY_FILE, PROP_RECORD, PROP_MEMORY_BUDGET, PROP_VIDEO_BITRATE,
    PROP_PRESET, PROP_WIDTH, PROP_HEIGHT, PROP_FPS, PROP_KEYFRAME_INTERVAL, PROP_AUDIO_CODEC, PROP_AUDIO_BITRATE,
    PROP_BACKPRESSURE, PROP_REPLAY_SECONDS, PROP_REPLAY_DIR, PROP_STATS, PROP_RECONNECT_ATTEMPTS, PROP_RECONNECT_DELAY
};

#define VIDEO_CAPS GST_VIDEO_CAPS_MAKE("{ BGRx, BGRA, RGBA, RGBx, NV12, I420 }")
#define AUDIO_CAPS "audio/x-raw, format=(string){ S16LE, F32LE }, layout=(string)interleaved, " \
                   "rate=(int){ 48000, 44100 }, channels=(int)[ 1, 2 ]"

static GstStaticPadTemplate video_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                                                                     GST_STATIC_CAPS(VIDEO_CAPS));
/* One request pad per audio lane of the library (app, mic): named, not app_audio_%u, because each
 * is one lane of the stream's three (video, app audio, mic audio); a second request for a lane is
 * refused. No audio pad requested when the session starts: a video-only stream (no audio track). */
static GstStaticPadTemplate app_template = GST_STATIC_PAD_TEMPLATE("app_audio", GST_PAD_SINK, GST_PAD_REQUEST,
                                                                   GST_STATIC_CAPS(AUDIO_CAPS));
static GstStaticPadTemplate mic_template = GST_STATIC_PAD_TEMPLATE("mic_audio", GST_PAD_SINK, GST_PAD_REQUEST,
                                                                   GST_STATIC_CAPS(AUDIO_CAPS));

static void uri_handler_init(gpointer iface, gpointer data);

G_DEFINE_TYPE_WITH_CODE(GstBroadcastSink, gst_broadcast_sink, GST_TYPE_BASE_SINK,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_URI_HANDLER, uri_handler_init))

static GType backpressure_get_type(void) {
    static GType type = 0;
    static const GEnumValue values[] = {
        { BACKPRESSURE_AUTO, "Drop for live input, block for non-live input", "auto" },
        { BACKPRESSURE_DROP, "Drop (and count) what the encoder has no room for", "drop" },
        { BACKPRESSURE_BLOCK, "Hold the stream back until the encoder has room", "block" },
        { 0, NULL, NULL },
    };
    if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstBroadcastSinkBackpressure", values));
    return type;
}

static gboolean block_mode(GstBroadcastSink *self, gboolean live) {
    return self->backpressure == BACKPRESSURE_BLOCK || (self->backpressure == BACKPRESSURE_AUTO && !live);
}

/* The lane a pad feeds: set on each audio pad when it is requested (a released pad's lane is
 * still known to a chain call that is finishing). */
static int lane_of(GstBroadcastSink *self, GstPad *pad) {
    return pad == self->pads[LANE_VIDEO] ? LANE_VIDEO : GPOINTER_TO_INT(gst_pad_get_element_private(pad));
}

/* Whether the audio pad of `lane` exists and is linked. Called with the lock held. */
static gboolean audio_linked(GstBroadcastSink *self, int lane) {
    return self->pads[lane] && gst_pad_is_linked(self->pads[lane]);
}

/* Whether the stream into `pad` is live (the upstream latency query). */
static gboolean upstream_is_live(GstPad *pad) {
    GstQuery *q = gst_query_new_latency();
    gboolean live = FALSE;
    if (gst_pad_peer_query(pad, q)) gst_query_parse_latency(q, &live, NULL, NULL);
    gst_query_unref(q);
    return live;
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
static gboolean start_session(GstBroadcastSink *self, int in_width, int in_height, int in_fps, gboolean live) {
    if (self->session || self->failed) return self->session != NULL;
    bk_config *cfg = bk_config_new();
    int w = self->width ? (int)self->width : (in_width > 0 ? in_width : bk_limits()->width.default_value);
    int h = self->height ? (int)self->height : (in_height > 0 ? in_height : bk_limits()->height.default_value);
    int fps = self->fps ? (int)self->fps : (in_fps > 0 ? MIN(in_fps, bk_limits()->fps.max) : bk_limits()->fps.default_value);
    gint64 budget = 0;
    const char *what = NULL;
    /* audio-bitrate 0: the library's default for the codec. */
    const bk_limit_table *limits = bk_limits();
    gboolean opus = g_strcmp0(self->audio_codec, "opus") == 0;
    int audio_kbps = self->audio_bitrate ? (int)self->audio_bitrate
                     : (opus ? limits->opus_bitrate_kbps : limits->aac_bitrate_kbps).default_value;
    /* The track layout is fixed here: no audio pad requested (or audio-codec=none) is a video-only
     * stream, with no audio track at all (not a silent one). */
    gboolean no_audio = g_strcmp0(self->audio_codec, "none") == 0 || (!self->pads[LANE_APP] && !self->pads[LANE_MIC]);
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
    else if (bk_config_set_audio(cfg, no_audio ? BK_AUDIO_NONE : opus ? BK_AUDIO_OPUS : BK_AUDIO_AAC, audio_kbps) != BK_OK)
        what = "audio";
    else if (!parse_size(self->memory_budget, &budget) || bk_config_set_memory_budget(cfg, budget) != BK_OK) {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("memory-budget '%s' unreadable (e.g. 50M, 512K, auto)",
                                                     self->memory_budget ? self->memory_budget : ""), (NULL));
        goto out;
    }
    else if (bk_config_set_replay(cfg, (int)self->replay_seconds, self->replay_dir) != BK_OK) what = "replay-seconds";
    else if (bk_config_set_reconnect(cfg, self->reconnect_attempts, self->reconnect_delay) != BK_OK) what = "reconnect";
    else if (bk_config_set_backpressure(cfg, block_mode(self, live) ? BK_BACKPRESSURE_BLOCK : BK_BACKPRESSURE_DROP) != BK_OK)
        what = "backpressure";
    else if (self->location && bk_config_add_destination(cfg, self->location, key ? key : "") != BK_OK) what = "location";
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
    self->block = block_mode(self, live);
    GST_INFO_OBJECT(self, "session started (%s input: back-pressure %s; %s)", live ? "live" : "non-live",
                    self->block ? "block" : "drop",
                    no_audio ? "video-only: no audio track" : self->pads[LANE_APP] && self->pads[LANE_MIC]
                    ? "audio: app_audio + mic_audio" : self->pads[LANE_APP] ? "audio: app_audio" : "audio: mic_audio");
    ok = TRUE;
out:
    wipe_copy(key);
    bk_config_free(cfg);
    if (!ok) self->failed = TRUE;
    return ok;
}


/* The session, started if needed; NULL when it cannot run (the error was posted). */
static bk_session *running_session(GstBroadcastSink *self, int lane, GstPad *pad) {
    g_mutex_lock(&self->lock);
    gboolean need = !self->session && !self->finished && !self->failed;
    g_mutex_unlock(&self->lock);
    gboolean live = need && upstream_is_live(pad);
    g_mutex_lock(&self->lock);
    bk_session *s = NULL;
    if (!self->finished && !self->failed) {
        if (!self->session) {
            gboolean video_linked = gst_pad_is_linked(self->pads[LANE_VIDEO]);
            if (lane == LANE_VIDEO && self->vinfo_set)
                start_session(self, GST_VIDEO_INFO_WIDTH(&self->vinfo), GST_VIDEO_INFO_HEIGHT(&self->vinfo),
                              GST_VIDEO_INFO_FPS_D(&self->vinfo) > 0
                                  ? (GST_VIDEO_INFO_FPS_N(&self->vinfo) + GST_VIDEO_INFO_FPS_D(&self->vinfo) / 2)
                                        / GST_VIDEO_INFO_FPS_D(&self->vinfo) : 0, live);
            else if (lane != LANE_VIDEO && !video_linked)
                start_session(self, 0, 0, 0, live);
        }
        s = self->session;
    }
    g_mutex_unlock(&self->lock);
    return s;
}

/* A drop is counted by the library; GStreamer users also get a QoS message for each and a
 * WARNING at most every DROP_WARNING_INTERVAL_NS. */
static void note_result(GstBroadcastSink *self, int lane, bk_process_result r, GstBuffer *buf, GstClockTime rt) {
    g_mutex_lock(&self->lock);
    self->processed[lane]++;
    if (r <= 0) { g_mutex_unlock(&self->lock); return; }
    guint64 dropped = ++self->dropped[lane], processed = self->processed[lane];
    gint64 now = bk_now_ns();
    gboolean warn = self->last_warning_ns == 0 || now - self->last_warning_ns >= (gint64)DROP_WARNING_INTERVAL_NS;
    if (warn) self->last_warning_ns = now;
    gboolean block = self->block;
    g_mutex_unlock(&self->lock);
    const char *reason = bk_drop_reason_name(r);
    GST_DEBUG_OBJECT(self, "%s buffer dropped: %s", lane == LANE_VIDEO ? "video" : "audio", reason);
    GstMessage *m = gst_message_new_qos(GST_OBJECT_CAST(self), !block, rt, GST_CLOCK_TIME_NONE, GST_BUFFER_PTS(buf),
                                        GST_BUFFER_DURATION(buf));
    gst_message_set_qos_stats(m, GST_FORMAT_BUFFERS, processed - dropped, dropped);
    gst_element_post_message(GST_ELEMENT_CAST(self), m);
    if (warn)
        GST_ELEMENT_WARNING(self, STREAM, FAILED,
                            ("%s buffers dropped: %s (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " on this pad so far)",
                             lane == LANE_VIDEO ? "video" : "audio", reason, dropped, processed),
                            ("see the element's stats property for every drop counter"));
}

static GstClockTime running_time(const GstSegment *seg, GstBuffer *buf) {
    GstClockTime ts = GST_BUFFER_PTS(buf);
    return GST_CLOCK_TIME_IS_VALID(ts) ? gst_segment_to_running_time(seg, GST_FORMAT_TIME, ts) : GST_CLOCK_TIME_NONE;
}

static GstFlowReturn render(GstBaseSink *bs, GstBuffer *buf) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(bs);
    bk_session *s = running_session(self, LANE_VIDEO, GST_BASE_SINK_PAD(bs));
    if (!s) return self->failed ? GST_FLOW_ERROR : GST_FLOW_EOS;
    GstClockTime rt = running_time(&bs->segment, buf);
    gint64 pts = GST_CLOCK_TIME_IS_VALID(rt) ? (gint64)(rt + gst_element_get_base_time(GST_ELEMENT_CAST(self)))
                                              : bk_now_ns();
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &self->vinfo, buf, GST_MAP_READ)) {
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
    /* In block mode this waits for the encoder (the library's back-pressure), holding the stream back. */
    bk_process_result r = bk_session_process_video(s, &f);
    gst_video_frame_unmap(&frame);
    if (r == BK_NOT_RUNNING) return self->failed ? GST_FLOW_ERROR : GST_FLOW_EOS;
    g_mutex_lock(&self->lock);
    if (GST_CLOCK_TIME_IS_VALID(rt)) self->video_rt = rt;
    g_cond_broadcast(&self->cond);
    g_mutex_unlock(&self->lock);
    note_result(self, LANE_VIDEO, r, buf, rt);
    return GST_FLOW_OK;
}

static gboolean set_caps(GstBaseSink *bs, GstCaps *caps) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(bs);
    if (!gst_video_info_from_caps(&self->vinfo, caps)) return FALSE;
    self->vinfo_set = TRUE;
    running_session(self, LANE_VIDEO, GST_BASE_SINK_PAD(bs)); /* connect now, before the first buffer */
    return TRUE;
}

/* Audio pads hold their buffer while the element is not PLAYING (a sink consumes nothing in
 * PAUSED) and, with sync, until its running time on the clock. FALSE when flushing or stopping;
 * *pts_ns is the buffer's time on the pipeline clock. */
static gboolean audio_wait(GstBroadcastSink *self, int lane, GstBuffer *buf, gint64 *pts_ns, GstClockTime *rt_out) {
    GstClockTime rt = running_time(&self->segments[lane], buf);
    *rt_out = rt;
    gboolean sync = gst_base_sink_get_sync(GST_BASE_SINK_CAST(self));
    g_mutex_lock(&self->lock);
    for (;;) {
        while (!self->playing && !self->flushing[lane] && !self->stopping && !self->finished)
            g_cond_wait(&self->cond, &self->lock);
        if (self->flushing[lane] || self->stopping) { g_mutex_unlock(&self->lock); return FALSE; }
        GstClockTime base = gst_element_get_base_time(GST_ELEMENT_CAST(self));
        *pts_ns = GST_CLOCK_TIME_IS_VALID(rt) ? (gint64)(rt + base) : bk_now_ns();
        if (self->finished) break;
        GstClock *clock = sync && GST_CLOCK_TIME_IS_VALID(rt) ? gst_element_get_clock(GST_ELEMENT_CAST(self)) : NULL;
        if (!clock) break;
        GstClockID id = gst_clock_new_single_shot_id(clock, rt + base);
        gst_object_unref(clock);
        self->clock_ids[lane] = id;
        g_mutex_unlock(&self->lock);
        GstClockReturn r = gst_clock_id_wait(id, NULL);
        g_mutex_lock(&self->lock);
        self->clock_ids[lane] = NULL;
        gst_clock_id_unref(id);
        if (r != GST_CLOCK_UNSCHEDULED) break;
        /* Unscheduled by PLAYING->PAUSED (or a flush): wait for PLAYING again, with its new base time. */
    }
    g_mutex_unlock(&self->lock);
    return TRUE;
}

/* Called with the lock held. */
static void unschedule_audio(GstBroadcastSink *self) {
    for (int i = LANE_APP; i < LANES; i++)
        if (self->clock_ids[i]) gst_clock_id_unschedule(self->clock_ids[i]);
    g_cond_broadcast(&self->cond);
}

/* Non-live input encoded as fast as it comes (block mode, sync=false): audio is cheap and would
 * run seconds ahead of the video, and the session's mixer, which keeps audio flowing in real time
 * once a source goes quiet, would then pad the track with silence. Hold an audio buffer until the
 * video has reached its running time (less AUDIO_LEAD_NS), as a muxer's collect step does.
 * Returns FALSE when flushing or stopping. */
static gboolean pace_audio(GstBroadcastSink *self, int lane, GstClockTime rt) {
    if (!GST_CLOCK_TIME_IS_VALID(rt) || gst_base_sink_get_sync(GST_BASE_SINK_CAST(self))
        || !gst_pad_is_linked(self->pads[LANE_VIDEO]))
        return TRUE;
    gint64 deadline = g_get_monotonic_time() + AUDIO_PACE_TIMEOUT_US;
    gboolean go = TRUE;
    g_mutex_lock(&self->lock);
    while (self->block && !self->video_done && !self->finished
           && (!GST_CLOCK_TIME_IS_VALID(self->video_rt) || self->video_rt + AUDIO_LEAD_NS < rt)) {
        if (self->flushing[lane] || self->stopping) { go = FALSE; break; }
        if (!g_cond_wait_until(&self->cond, &self->lock, deadline)) break;
    }
    if (self->flushing[lane] || self->stopping) go = FALSE;
    g_mutex_unlock(&self->lock);
    return go;
}

static GstFlowReturn chain_audio(GstPad *pad, GstObject *parent, GstBuffer *buf) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(parent);
    int lane = lane_of(self, pad);
    gint64 pts = 0;
    GstClockTime rt;
    if (!audio_wait(self, lane, buf, &pts, &rt)) { gst_buffer_unref(buf); return GST_FLOW_FLUSHING; }
    if (!pace_audio(self, lane, rt)) { gst_buffer_unref(buf); return GST_FLOW_FLUSHING; }
    bk_session *s = running_session(self, lane, pad);
    if (!s || !self->ainfo_set[lane]) {
        gst_buffer_unref(buf);
        if (self->failed) return GST_FLOW_ERROR;
        return self->finished ? GST_FLOW_EOS : GST_FLOW_OK; /* no video caps yet: not live */
    }
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_READ)) {
        gst_buffer_unref(buf);
        return GST_FLOW_ERROR;
    }
    GstAudioInfo *ai = &self->ainfo[lane];
    int bpf = GST_AUDIO_INFO_BPF(ai), rate = GST_AUDIO_INFO_RATE(ai);
    gsize frames = bpf > 0 ? map.size / (gsize)bpf : 0, done = 0;
    bk_process_result worst = BK_ACCEPTED;
    while (done < frames) { /* the library takes at most 22050 frames per call */
        gsize n = MIN(frames - done, (gsize)22050);
        bk_audio_buffer a = {
            .format = GST_AUDIO_INFO_FORMAT(ai) == GST_AUDIO_FORMAT_F32LE ? BK_SAMPLE_F32 : BK_SAMPLE_S16,
            .channels = GST_AUDIO_INFO_CHANNELS(ai), .sample_rate = rate, .frame_count = (int32_t)n,
            .data = map.data + done * (gsize)bpf, .data_size = (int64_t)(n * (gsize)bpf),
            .pts_ns = pts + (gint64)gst_util_uint64_scale_int(done, GST_SECOND, rate),
        };
        bk_process_result r = bk_session_process_audio(s, lane == LANE_MIC ? BK_LANE_MIC_AUDIO : BK_LANE_APP_AUDIO, &a);
        if (r > 0 && worst == BK_ACCEPTED) worst = r;
        done += n;
    }
    gst_buffer_unmap(buf, &map);
    note_result(self, lane, worst, buf, rt);
    gst_buffer_unref(buf);
    return GST_FLOW_OK;
}

static void finish_stream(GstBroadcastSink *self, gboolean post_eos) {
    g_mutex_lock(&self->lock);
    gboolean was = self->finished;
    self->finished = TRUE;
    g_cond_broadcast(&self->cond);
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

static gboolean request_keyframe(GstBroadcastSink *self) {
    g_mutex_lock(&self->lock);
    gboolean ok = self->session && !self->finished && bk_session_request_keyframe(self->session) == BK_OK;
    g_mutex_unlock(&self->lock);
    GST_DEBUG_OBJECT(self, "keyframe requested: %s", ok ? "yes" : "not running");
    return ok;
}

/* Events on the video pad, in stream order (the base sink has prerolled and synced them). */
static gboolean video_event(GstBaseSink *bs, GstEvent *event) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(bs);
    if (gst_video_event_is_force_key_unit(event)) {
        request_keyframe(self);
        gst_event_unref(event);
        return TRUE;
    }
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) { /* a seek: the video's running time restarts */
        g_mutex_lock(&self->lock);
        self->video_rt = GST_CLOCK_TIME_NONE;
        g_mutex_unlock(&self->lock);
    }
    /* The stream is finished (flushed, sent, closed) before the base sink posts EOS. */
    if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
        g_mutex_lock(&self->lock);
        self->video_done = TRUE;
        g_cond_broadcast(&self->cond);
        g_mutex_unlock(&self->lock);
        finish_stream(self, FALSE);
    }
    return GST_BASE_SINK_CLASS(gst_broadcast_sink_parent_class)->event(bs, event);
}

/* Events sent to the element: an upstream force-key-unit is ours (we are the encoder). */
static gboolean send_event(GstElement *element, GstEvent *event) {
    if (gst_video_event_is_force_key_unit(event)) {
        request_keyframe(GST_BROADCAST_SINK(element));
        gst_event_unref(event);
        return TRUE;
    }
    return GST_ELEMENT_CLASS(gst_broadcast_sink_parent_class)->send_event(element, event);
}

static gboolean audio_event(GstPad *pad, GstObject *parent, GstEvent *event) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(parent);
    int lane = lane_of(self, pad);
    if (gst_video_event_is_force_key_unit(event)) {
        request_keyframe(self);
        gst_event_unref(event);
        return TRUE;
    }
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_CAPS: {
        GstCaps *caps;
        gst_event_parse_caps(event, &caps);
        gboolean ok = self->ainfo_set[lane] = gst_audio_info_from_caps(&self->ainfo[lane], caps);
        gst_event_unref(event);
        if (ok && !gst_pad_is_linked(self->pads[LANE_VIDEO])) running_session(self, lane, pad); /* connect now */
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
        self->flushing[lane] = TRUE;
        unschedule_audio(self);
        g_mutex_unlock(&self->lock);
        gst_event_unref(event);
        return TRUE;
    case GST_EVENT_FLUSH_STOP:
        g_mutex_lock(&self->lock);
        self->flushing[lane] = FALSE;
        g_mutex_unlock(&self->lock);
        gst_segment_init(&self->segments[lane], GST_FORMAT_TIME);
        gst_event_unref(event);
        return TRUE;
    case GST_EVENT_EOS: {
        gst_event_unref(event);
        g_mutex_lock(&self->lock);
        self->eos[lane] = TRUE;
        gboolean all = TRUE;
        for (int i = LANE_APP; i < LANES; i++)
            if (audio_linked(self, i) && !self->eos[i]) all = FALSE;
        g_mutex_unlock(&self->lock);
        /* Video sets the stream's length; without video, the last audio EOS ends it. */
        if (all && !gst_pad_is_linked(self->pads[LANE_VIDEO])) finish_stream(self, TRUE);
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
        self->finished = self->failed = self->stopping = self->playing = self->video_done = FALSE;
        self->video_rt = GST_CLOCK_TIME_NONE;
        self->last_warning_ns = 0;
        for (int i = 0; i < LANES; i++) {
            self->eos[i] = self->flushing[i] = FALSE;
            self->processed[i] = self->dropped[i] = 0;
            gst_segment_init(&self->segments[i], GST_FORMAT_TIME);
        }
        g_mutex_unlock(&self->lock);
        /* Audio-only: there is no video buffer to preroll on. */
        gst_base_sink_set_async_enabled(GST_BASE_SINK_CAST(self), gst_pad_is_linked(self->pads[LANE_VIDEO]));
        break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
        g_mutex_lock(&self->lock);
        self->playing = TRUE;
        g_cond_broadcast(&self->cond);
        g_mutex_unlock(&self->lock);
        break;
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
        g_mutex_lock(&self->lock);
        self->playing = FALSE;
        unschedule_audio(self);
        g_mutex_unlock(&self->lock);
        break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
        g_mutex_lock(&self->lock);
        self->stopping = TRUE;
        unschedule_audio(self);
        g_mutex_unlock(&self->lock);
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
    return ret;
}

/* The stats property: the session's counters as a GstStructure ("status" only before it starts). */
static GstStructure *stats_structure(GstBroadcastSink *self) {
    GstStructure *st = gst_structure_new_empty("broadcastsink-stats");
    g_mutex_lock(&self->lock);
    bk_stats b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    gboolean have = self->session && bk_session_get_stats(self->session, &b) == BK_OK;
    const char *status = self->session ? bk_session_status(self->session) : "idle";
    g_mutex_unlock(&self->lock);
    gst_structure_set(st, "status", G_TYPE_STRING, status, NULL);
    if (!have) return st;
    gst_structure_set(st, "video-frames-in", G_TYPE_INT64, b.video_frames_in,
                      "video-frames-encoded", G_TYPE_INT64, b.video_frames_encoded,
                      "video-frames-sent", G_TYPE_INT64, b.video_frames_sent,
                      "audio-frames-sent", G_TYPE_INT64, b.audio_frames_sent,
                      "bytes-sent", G_TYPE_INT64, b.bytes_sent,
                      "total-drops", G_TYPE_INT64, b.total_drops,
                      "queue-bytes", G_TYPE_INT64, b.queue_bytes,
                      "queue-ms", G_TYPE_INT64, b.queue_ms,
                      "target-video-kbps", G_TYPE_INT64, b.target_video_kbps,
                      "reconnects", G_TYPE_INT64, b.reconnects,
                      "rss-bytes", G_TYPE_INT64, b.rss_bytes,
                      "peak-rss-bytes", G_TYPE_INT64, b.peak_rss_bytes, NULL);
    for (int i = 0; i < BK_DROP_REASON_COUNT; i++) {
        gchar *name = g_strdup_printf("drops-%s", bk_drop_reason_name(i + 1));
        g_strdelimit(name, "_", '-');
        gst_structure_set(st, name, G_TYPE_INT64, b.drops[i], NULL);
        g_free(name);
    }
    return st;
}

/* The "save-replay" action signal: the clip's path, or NULL with a WARNING message saying why. */
static gchar *save_replay(GstBroadcastSink *self, const gchar *path, gdouble seconds) {
    g_mutex_lock(&self->lock);
    bk_session *s = self->finished ? NULL : self->session;
    g_mutex_unlock(&self->lock);
    if (!s) {
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("save-replay: the stream is not running"), (NULL));
        return NULL;
    }
    char *saved = NULL;
    /* Blocks this (the caller's) thread until the clip is written; the stream goes on. */
    if (bk_session_save_replay(s, path && *path ? path : NULL, seconds, &saved) != BK_OK) {
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("save-replay: %s", bk_session_last_error(s)), (NULL));
        return NULL;
    }
    gchar *out = g_strdup(saved);
    bk_string_free(saved);
    return out;
}

/* app_audio or mic_audio, each at most once, and only before the session starts (it fixes the
 * stream's tracks then, as a muxer fixes its header). */
static GstPad *request_new_pad(GstElement *element, GstPadTemplate *templ, const gchar *name, const GstCaps *caps) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(element);
    const gchar *tname = GST_PAD_TEMPLATE_NAME_TEMPLATE(templ);
    int lane = g_strcmp0(tname, app_template.name_template) == 0 ? LANE_APP
               : g_strcmp0(tname, mic_template.name_template) == 0 ? LANE_MIC : LANE_VIDEO;
    if (lane == LANE_VIDEO || (name && g_strcmp0(name, tname) != 0)) {
        GST_WARNING_OBJECT(self, "no request pad '%s' (the audio pads are app_audio and mic_audio)", name ? name : tname);
        return NULL;
    }
    g_mutex_lock(&self->lock);
    if (self->pads[lane] || self->session) {
        gboolean started = self->session != NULL;
        g_mutex_unlock(&self->lock);
        GST_WARNING_OBJECT(self, "%s cannot be requested: %s", tname,
                           started ? "the stream has started (its tracks are fixed when it starts)" : "it exists already");
        return NULL;
    }
    GstPad *pad = gst_pad_new_from_template(templ, tname);
    gst_pad_set_element_private(pad, GINT_TO_POINTER(lane));
    gst_pad_set_chain_function(pad, chain_audio);
    gst_pad_set_event_function(pad, audio_event);
    self->pads[lane] = pad;
    self->flushing[lane] = self->eos[lane] = self->ainfo_set[lane] = FALSE;
    self->processed[lane] = self->dropped[lane] = 0;
    gst_segment_init(&self->segments[lane], GST_FORMAT_TIME);
    g_mutex_unlock(&self->lock);
    /* Activated here when the element is already PAUSED or PLAYING. */
    gst_element_add_pad(element, pad);
    GST_DEBUG_OBJECT(self, "requested %s", tname);
    return pad;
}

/* A released pad's lane goes quiet: a buffer it still holds is let go (flushing), so removing the
 * pad, which waits for its streaming thread, cannot block. Before the session starts, releasing
 * every audio pad makes the stream video-only. */
static void release_pad(GstElement *element, GstPad *pad) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(element);
    int lane = lane_of(self, pad);
    if (lane == LANE_VIDEO) return;
    g_mutex_lock(&self->lock);
    if (self->pads[lane] != pad) { g_mutex_unlock(&self->lock); return; }
    self->flushing[lane] = TRUE;
    if (self->clock_ids[lane]) gst_clock_id_unschedule(self->clock_ids[lane]);
    g_cond_broadcast(&self->cond);
    g_mutex_unlock(&self->lock);
    gst_element_remove_pad(element, pad);
    g_mutex_lock(&self->lock);
    self->pads[lane] = NULL;
    self->ainfo_set[lane] = FALSE;
    g_mutex_unlock(&self->lock);
    GST_DEBUG_OBJECT(self, "released %s", lane == LANE_APP ? "app_audio" : "mic_audio");
}

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(object);
    switch (id) {
    case PROP_LOCATION:
        GST_OBJECT_LOCK(self);
        g_free(self->location);
        self->location = g_value_dup_string(value);
        GST_OBJECT_UNLOCK(self);
        break;
    case PROP_STREAM_KEY: wipe_key(self); self->stream_key = g_value_dup_string(value); break;
    case PROP_STREAM_KEY_FILE: g_free(self->stream_key_file); self->stream_key_file = g_value_dup_string(value); break;
    case PROP_RECORD: g_free(self->record); self->record = g_value_dup_string(value); break;
    case PROP_MEMORY_BUDGET: g_free(self->memory_budget); self->memory_budget = g_value_dup_string(value); break;
    case PROP_PRESET: g_free(self->preset); self->preset = g_value_dup_string(value); break;
    case PROP_AUDIO_CODEC: g_free(self->audio_codec); self->audio_codec = g_value_dup_string(value); break;
    case PROP_REPLAY_DIR: g_free(self->replay_dir); self->replay_dir = g_value_dup_string(value); break;
    case PROP_VIDEO_BITRATE: {
        guint kbps = g_value_get_uint(value);
        g_mutex_lock(&self->lock);
        self->video_bitrate = kbps;
        bk_session *s = self->finished || kbps == 0 ? NULL : self->session;
        if (s && bk_session_set_video_bitrate(s, (int)kbps) != BK_OK)
            GST_WARNING_OBJECT(self, "video-bitrate %u: %s", kbps, bk_session_last_error(s));
        g_mutex_unlock(&self->lock);
        break;
    }
    case PROP_AUDIO_BITRATE: self->audio_bitrate = g_value_get_uint(value); break;
    case PROP_WIDTH: self->width = g_value_get_uint(value); break;
    case PROP_HEIGHT: self->height = g_value_get_uint(value); break;
    case PROP_FPS: self->fps = g_value_get_uint(value); break;
    case PROP_KEYFRAME_INTERVAL: self->keyframe_interval = g_value_get_uint(value); break;
    case PROP_REPLAY_SECONDS: self->replay_seconds = g_value_get_uint(value); break;
    case PROP_BACKPRESSURE: self->backpressure = (Backpressure)g_value_get_enum(value); break;
    case PROP_RECONNECT_ATTEMPTS: self->reconnect_attempts = g_value_get_int(value); break;
    case PROP_RECONNECT_DELAY: self->reconnect_delay = g_value_get_double(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
    }
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(object);
    switch (id) {
    case PROP_LOCATION:
        GST_OBJECT_LOCK(self);
        g_value_set_string(value, self->location);
        GST_OBJECT_UNLOCK(self);
        break;
    case PROP_STREAM_KEY_FILE: g_value_set_string(value, self->stream_key_file); break;
    case PROP_RECORD: g_value_set_string(value, self->record); break;
    case PROP_MEMORY_BUDGET: g_value_set_string(value, self->memory_budget); break;
    case PROP_PRESET: g_value_set_string(value, self->preset); break;
    case PROP_AUDIO_CODEC: g_value_set_string(value, self->audio_codec); break;
    case PROP_REPLAY_DIR: g_value_set_string(value, self->replay_dir); break;
    case PROP_VIDEO_BITRATE: g_value_set_uint(value, self->video_bitrate); break;
    case PROP_AUDIO_BITRATE: g_value_set_uint(value, self->audio_bitrate); break;
    case PROP_WIDTH: g_value_set_uint(value, self->width); break;
    case PROP_HEIGHT: g_value_set_uint(value, self->height); break;
    case PROP_FPS: g_value_set_uint(value, self->fps); break;
    case PROP_KEYFRAME_INTERVAL: g_value_set_uint(value, self->keyframe_interval); break;
    case PROP_REPLAY_SECONDS: g_value_set_uint(value, self->replay_seconds); break;
    case PROP_BACKPRESSURE: g_value_set_enum(value, self->backpressure); break;
    case PROP_RECONNECT_ATTEMPTS: g_value_set_int(value, self->reconnect_attempts); break;
    case PROP_RECONNECT_DELAY: g_value_set_double(value, self->reconnect_delay); break;
    case PROP_STATS: g_value_take_boxed(value, stats_structure(self)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break; /* stream-key is write-only */
    }
}

/* GstURIHandler (sink): rtmp, rtmps, srt, and http/https for WHIP endpoints. The URI is the
 * publish URL as a service hands it out, so it may carry the key: set_uri moves it to stream-key
 * (write-only) and keeps the rest as location, so get_uri and location never return the key.
 *   rtmp(s)://host[:port]/app/KEY   the last of two or more path elements is the key (the library
 *                                   appends the key as the last path element: the same split);
 *                                   rtmp://host/app alone is a location, the key from elsewhere.
 *   srt://host:port?streamid=KEY&…  the stream id (percent-decoded) is the key (the library fills
 *                                   the stream id from the key when the URL has none).
 *   http(s)://host/path             a WHIP endpoint; its bearer token is never part of the URL.
 * The rest is validated by the library (bk_config_add_destination with no key), whose message never holds
 * the key. */
static const gchar *const uri_protocols[] = { "rtmp", "rtmps", "srt", "http", "https", NULL };

static GstURIType uri_get_type(GType type) { return GST_URI_SINK; }

static const gchar *const *uri_get_protocols(GType type) { return uri_protocols; }

static gchar *uri_get_uri(GstURIHandler *handler) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(handler);
    GST_OBJECT_LOCK(self);
    gchar *uri = g_strdup(self->location);
    GST_OBJECT_UNLOCK(self);
    return uri;
}

/* Splits `uri` into the location and the key it carries (NULL when none); see above. */
static void split_key(const gchar *scheme, const gchar *uri, gchar **location, gchar **key) {
    *location = NULL;
    *key = NULL;
    const gchar *authority = strstr(uri, "://");
    authority = authority ? authority + 3 : uri;
    if (g_str_has_prefix(scheme, "rtmp")) {
        const gchar *path = strchr(authority, '/');
        gsize len = strlen(uri);
        if (!path) { *location = g_strdup(uri); return; }
        while (uri + len - 1 > path && uri[len - 1] == '/') len--; /* "…/live/" is "…/live" */
        const gchar *last = g_strrstr_len(path + 1, (gssize)(uri + len - path - 1), "/");
        if (last && last + 1 < uri + len) {
            *location = g_strndup(uri, (gsize)(last - uri));
            *key = g_strndup(last + 1, (gsize)(uri + len - last - 1));
            return;
        }
        *location = g_strndup(uri, len);
        return;
    }
    const gchar *query = g_str_equal(scheme, "srt") ? strchr(authority, '?') : NULL;
    if (!query) { *location = g_strdup(uri); return; }
    GString *out = g_string_new_len(uri, query - uri);
    gchar **params = g_strsplit(query + 1, "&", -1);
    gboolean first = TRUE;
    for (gchar **p = params; *p; p++) {
        if (g_ascii_strncasecmp(*p, "streamid=", 9) == 0 && !*key) {
            *key = g_uri_unescape_string(*p + 9, NULL);
            if (!*key) *key = g_strdup(*p + 9); /* not valid escapes: the library's check refuses it */
            continue;
        }
        if (!**p) continue;
        g_string_append_c(out, first ? '?' : '&');
        g_string_append(out, *p);
        first = FALSE;
    }
    for (gchar **p = params; *p; p++) explicit_bzero(*p, strlen(*p));
    g_strfreev(params);
    *location = g_string_free(out, FALSE);
}

static gboolean uri_set_uri(GstURIHandler *handler, const gchar *uri, GError **error) {
    GstBroadcastSink *self = GST_BROADCAST_SINK(handler);
    if (GST_STATE(self) > GST_STATE_READY) {
        g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_BAD_STATE,
                    "broadcastsink: the URI can only be set in the NULL or READY state");
        return FALSE;
    }
    gchar *scheme = uri ? gst_uri_get_protocol(uri) : NULL;
    if (!scheme || !g_strv_contains(uri_protocols, scheme)) {
        g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_UNSUPPORTED_PROTOCOL,
                    "broadcastsink: unsupported URI scheme (rtmp, rtmps, srt, http or https)");
        g_free(scheme);
        return FALSE;
    }
    gchar *location = NULL, *key = NULL;
    split_key(scheme, uri, &location, &key);
    g_free(scheme);
    bk_config *cfg = bk_config_new();
    gboolean ok = bk_config_add_destination(cfg, location, "") == BK_OK;
    if (!ok) g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI, "broadcastsink: %s", bk_config_last_error(cfg));
    bk_config_free(cfg);
    if (ok && key && !*key) ok = FALSE;
    if (!ok) {
        if (error && !*error) g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI, "broadcastsink: the key in the URI is empty");
        g_free(location);
        wipe_copy(key);
        return FALSE;
    }
    GST_OBJECT_LOCK(self);
    g_free(self->location);
    self->location = location;
    if (key) {
        wipe_key(self);
        self->stream_key = key;
    }
    GST_OBJECT_UNLOCK(self);
    /* Not the location itself: an SRT query may hold a passphrase. */
    GST_DEBUG_OBJECT(self, "URI set (the key %s)", key ? "taken from the URI" : "not in the URI");
    g_object_notify(G_OBJECT(self), "location");
    return TRUE;
}

static void uri_handler_init(gpointer iface, gpointer data) {
    GstURIHandlerInterface *i = iface;
    i->get_type = uri_get_type;
    i->get_protocols = uri_get_protocols;
    i->get_uri = uri_get_uri;
    i->set_uri = uri_set_uri;
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
    g_free(self->replay_dir);
    g_mutex_clear(&self->lock);
    g_cond_clear(&self->cond);
    G_OBJECT_CLASS(gst_broadcast_sink_parent_class)->finalize(object);
}

static void constructed(GObject *object);

static void gst_broadcast_sink_class_init(GstBroadcastSinkClass *klass) {
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    GstElementClass *ec = GST_ELEMENT_CLASS(klass);
    GstBaseSinkClass *bc = GST_BASE_SINK_CLASS(klass);
    oc->set_property = set_property;
    oc->get_property = get_property;
    oc->finalize = finalize;
    oc->constructed = constructed;
    ec->change_state = change_state;
    ec->send_event = send_event;
    bc->render = render;
    bc->set_caps = set_caps;
    bc->event = video_event;
    const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
    /* Ranges and defaults are the library's (bk_limits()): this element maps values, it restates no rule.
     * Blurbs that quote the table are built here, so they are not static strings. */
    const bk_limit_table *L = bk_limits();
    const GParamFlags rw_dyn = G_PARAM_READWRITE | G_PARAM_STATIC_NAME | G_PARAM_STATIC_NICK | GST_PARAM_MUTABLE_READY;
    g_object_class_install_property(oc, PROP_LOCATION, g_param_spec_string("location", "Location",
        "Where to publish, without the key. rtmp://host[:port]/app or rtmps://… (FLV over RTMP; the key is appended "
        "as the last path element); srt://host:port[?latency=MS&passphrase=…&pbkeylen=N] (MPEG-TS over SRT to a "
        "listener; the key fills ?streamid= when the URL has none); http(s)://host/path (a WHIP endpoint, WebRTC; the "
        "key is the bearer token; audio needs audio-codec=opus). As a URI (gst_element_make_from_uri, the uri "
        "handler) the full publish URL may carry the key (rtmp://host/app/KEY, srt://…?streamid=KEY): it is moved to "
        "stream-key, and location and the URI read back never hold it", NULL, rw));
    g_object_class_install_property(oc, PROP_STREAM_KEY, g_param_spec_string("stream-key", "Stream key",
        "The stream key, appended to location (write-only: never shown, logged or readable back by the "
        "element; but gst-launch logs and ps show its own command line: prefer stream-key-file or $STREAM_KEY)", NULL,
        G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(oc, PROP_STREAM_KEY_FILE, g_param_spec_string("stream-key-file", "Stream key file",
        "Read the stream key from the first line of this file when stream-key is not set (else $STREAM_KEY)",
        NULL, rw));
    g_object_class_install_property(oc, PROP_RECORD, g_param_spec_string("record", "Record",
        "Also (or only) record to this file: fragmented MP4 when the name ends in .mp4, else FLV", NULL, rw));
    gchar *default_budget = g_strdup_printf("%" G_GINT64_FORMAT "M", L->default_memory_budget_bytes >> 20);
    g_object_class_install_property(oc, PROP_MEMORY_BUDGET, g_param_spec_string("memory-budget", "Memory budget",
        "Hard memory budget of the process: bytes or 50M/512K/1G, 0 = no check, auto = 50M or the memory "
        "cgroup's limit less headroom; a plan that cannot fit is an error that prints the plan", default_budget, rw));
    g_object_class_install_property(oc, PROP_VIDEO_BITRATE, g_param_spec_uint("video-bitrate", "Video bitrate",
        "x264 target bitrate in kbps (0 = the library's default for the output size and rate); changeable while "
        "PLAYING (the adaptive bitrate may still lower it)", 0, (guint)L->video_bitrate_kbps.max, 0,
        G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
    g_free(default_budget);
    gchar *presets = g_strdup_printf("x264 preset, lightest first: %s", L->presets);
    g_strdelimit(presets, ",", '/');
    g_object_class_install_property(oc, PROP_PRESET, g_param_spec_string("preset", "x264 preset", presets,
        L->default_preset, rw_dyn));
    g_free(presets);
    g_object_class_install_property(oc, PROP_WIDTH, g_param_spec_uint("width", "Width",
        "Output width (0 = the input's); input of any size is scaled and letter/pillarboxed", 0, (guint)L->width.max, 0, rw));
    g_object_class_install_property(oc, PROP_HEIGHT, g_param_spec_uint("height", "Height",
        "Output height (0 = the input's)", 0, (guint)L->height.max, 0, rw));
    g_object_class_install_property(oc, PROP_FPS, g_param_spec_uint("fps", "Frame rate",
        "Output frame rate (0 = the input's, else the library's default)", 0, (guint)L->fps.max, 0, rw));
    g_object_class_install_property(oc, PROP_KEYFRAME_INTERVAL, g_param_spec_uint("keyframe-interval",
        "Keyframe interval", "Seconds between keyframes", (guint)L->keyframe_interval_seconds.min,
        (guint)L->keyframe_interval_seconds.max, (guint)L->keyframe_interval_seconds.default_value, rw));
    g_object_class_install_property(oc, PROP_AUDIO_CODEC, g_param_spec_string("audio-codec", "Audio codec",
        "aac (legacy FLV, every ingest), opus (Enhanced RTMP v2, WHIP) or none; none, or no audio pad "
        "requested when the stream starts, makes a video-only stream (no audio track)", "aac", rw));
    gchar *audio = g_strdup_printf("Audio bitrate in kbps: AAC %d..%d (default %d), Opus %d..%d (default %d); "
                                   "0 = the codec's default", L->aac_bitrate_kbps.min, L->aac_bitrate_kbps.max,
                                   L->aac_bitrate_kbps.default_value, L->opus_bitrate_kbps.min, L->opus_bitrate_kbps.max,
                                   L->opus_bitrate_kbps.default_value);
    g_object_class_install_property(oc, PROP_AUDIO_BITRATE, g_param_spec_uint("audio-bitrate", "Audio bitrate", audio,
        0, (guint)MAX(L->aac_bitrate_kbps.max, L->opus_bitrate_kbps.max), 0, rw_dyn));
    g_free(audio);
    g_object_class_install_property(oc, PROP_BACKPRESSURE, g_param_spec_enum("backpressure", "Back-pressure",
        "When the encoder has no room: drop the buffer (counted, QoS message, WARNING) or block the stream "
        "until it has; auto drops for live input and blocks for non-live input, so every buffer of a file is encoded",
        backpressure_get_type(), BACKPRESSURE_AUTO, rw));
    g_object_class_install_property(oc, PROP_REPLAY_SECONDS, g_param_spec_uint("replay-seconds", "Replay seconds",
        "Keep the last N seconds of the encoded stream for the save-replay signal (0 = off), inside the memory budget",
        (guint)L->replay_seconds.min, (guint)L->replay_seconds.max, (guint)L->replay_seconds.default_value, rw));
    g_object_class_install_property(oc, PROP_RECONNECT_ATTEMPTS, g_param_spec_int("reconnect-attempts",
        "Reconnect attempts", "Retries after a lost connection: 0 = forever, -1 = never",
        L->reconnect_attempts.min, L->reconnect_attempts.max, L->reconnect_attempts.default_value, rw));
    g_object_class_install_property(oc, PROP_RECONNECT_DELAY, g_param_spec_double("reconnect-delay",
        "Reconnect delay", "Seconds before the first retry, then x1.5 with jitter, capped at 30 s",
        L->reconnect_delay_min_seconds, L->reconnect_delay_max_seconds, L->reconnect_delay_default_seconds, rw));
    g_object_class_install_property(oc, PROP_REPLAY_DIR, g_param_spec_string("replay-dir", "Replay directory",
        "Where save-replay writes clips given no path (NULL: the current directory)", NULL, rw));
    g_object_class_install_property(oc, PROP_STATS, g_param_spec_boxed("stats", "Statistics",
        "The session's counters: frames in/encoded/sent, bytes sent, drops by reason, queue, bitrate, RSS",
        GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
    /* save-replay (path, seconds) -> the clip's path, or NULL (a WARNING message says why): the last
     * `seconds` (<= 0: all the replay buffer holds) as MP4 at `path` (NULL or "": a timestamped
     * name in replay-dir). Blocks the emitting thread until written; the stream goes on. */
    g_signal_new_class_handler("save-replay", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
                               G_CALLBACK(save_replay), NULL, NULL, NULL, G_TYPE_STRING, 2, G_TYPE_STRING, G_TYPE_DOUBLE);
    /* request-keyframe () -> FALSE when not running: the next picture is a keyframe. */
    g_signal_new_class_handler("request-keyframe", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
                               G_CALLBACK(request_keyframe), NULL, NULL, NULL, G_TYPE_BOOLEAN, 0);
    gst_element_class_set_static_metadata(ec, "Live broadcast sink (RTMP/SRT/WHIP, FLV/MP4)", "Sink/Network",
        "Encodes video (x264) and app/mic audio (AAC or Opus) and publishes over RTMP(S), SRT or WHIP and/or records "
        "FLV or MP4, within a hard memory budget (libbroadcastkit)", "The broadcast project");
    gst_element_class_add_static_pad_template(ec, &video_template);
    gst_element_class_add_static_pad_template(ec, &app_template);
    gst_element_class_add_static_pad_template(ec, &mic_template);
    ec->request_new_pad = request_new_pad;
    ec->release_pad = release_pad;
}

static void gst_broadcast_sink_init(GstBroadcastSink *self) {
    self->pads[LANE_VIDEO] = GST_BASE_SINK_PAD(self); /* the audio pads are requested */
    for (int i = 0; i < LANES; i++) gst_segment_init(&self->segments[i], GST_FORMAT_TIME);
    g_mutex_init(&self->lock);
    g_cond_init(&self->cond);
    const bk_limit_table *L = bk_limits();
    self->memory_budget = g_strdup_printf("%" G_GINT64_FORMAT "M", L->default_memory_budget_bytes >> 20);
    self->preset = g_strdup(L->default_preset);
    self->audio_codec = g_strdup("aac");
    self->video_bitrate = 0; /* the library's default for the output size and rate */
    self->audio_bitrate = 0; /* the codec's default */
    self->keyframe_interval = (guint)L->keyframe_interval_seconds.default_value;
    self->replay_seconds = (guint)L->replay_seconds.default_value;
    self->reconnect_attempts = L->reconnect_attempts.default_value;
    self->reconnect_delay = L->reconnect_delay_default_seconds;
    self->backpressure = BACKPRESSURE_AUTO;
}

/* Whether `name` is GStreamer's default for an unnamed element ("broadcastsink" + a number). */
static gboolean is_default_name(const gchar *name) {
    const gchar *prefix = "broadcastsink";
    if (!name || !g_str_has_prefix(name, prefix) || !name[strlen(prefix)]) return !name;
    for (const gchar *c = name + strlen(prefix); *c; c++)
        if (!g_ascii_isdigit(*c)) return FALSE;
    return TRUE;
}

/* The first instance in a process that is given no name is named "broadcastsink" (not
 * "broadcastsink0"), so that gst-launch's `... ! broadcastsink.app_audio` finds it without name=.
 * A name given at construction (gst-launch's parser sets name= as a construct property, before
 * this runs) is kept. */
static void constructed(GObject *object) {
    static gint unnamed;
    G_OBJECT_CLASS(gst_broadcast_sink_parent_class)->constructed(object);
    if (is_default_name(GST_OBJECT_NAME(object)) && g_atomic_int_add(&unnamed, 1) == 0)
        gst_object_set_name(GST_OBJECT(object), "broadcastsink");
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
