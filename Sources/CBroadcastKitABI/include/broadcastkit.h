/*
 * broadcastkit.h — the C interface of BroadcastKit, a live-broadcasting engine for Linux.
 *
 * Video (BGRA/BGRx/RGBA/RGBx/NV12/I420) and PCM audio (S16/F32, an "app" and a "mic" lane) go in;
 * x264 + AAC/Opus in FLV come out over RTMP and/or into a file, inside a hard memory budget.
 * This header is self-contained (C99, <stdint.h>/<stddef.h> only). Link with
 * `pkg-config --cflags --libs broadcastkit`.
 *
 *     bk_config *cfg = bk_config_new();
 *     bk_config_set_video(cfg, 1280, 720, 30, 2500);
 *     bk_config_add_destination(cfg, "rtmp://127.0.0.1:1935/live", key);   // key copied; wipe yours
 *     bk_session *s = bk_session_new(cfg);
 *     bk_config_free(cfg);                                           // the session has its copy
 *     if (bk_session_start(s) != BK_OK) { fprintf(stderr, "%s\n", bk_session_last_error(s)); ... }
 *     bk_video_frame f = { .width = 1280, .height = 720, .format = BK_PIXEL_BGRX,
 *                          .planes = { pixels }, .strides = { 1280 * 4 },
 *                          .plane_sizes = { 1280 * 720 * 4 }, .pts_ns = now_ns };
 *     bk_session_process_video(s, &f);          // BK_ACCEPTED or a counted drop (see backpressure)
 *     ...
 *     bk_session_finish(s);
 *     bk_session_free(s);
 *
 * ERRORS. Functions that can fail return a bk_status (BK_OK = 0, errors negative). The message of
 * the last failure on an object is bk_config_last_error() / bk_session_last_error(): a string owned
 * by the object, valid until the next failing call on it or until it is freed; never free it.
 * Strings this library hands you to keep (stats JSON, memory plan) are freed with bk_string_free().
 * No message ever contains a stream key: destinations are shown with the key replaced by ****.
 *
 * THREADS.
 *  - A bk_config is not thread-safe: use it from one thread at a time.
 *  - bk_session_process_video() and bk_session_process_audio() may be called from any thread, and
 *    concurrently for DIFFERENT lanes (video, app audio, mic audio). Calls for the SAME lane must not
 *    overlap (each lane is serial: its timestamps must increase). They may run while another thread
 *    calls bk_session_get_stats(), bk_session_stats_json(), bk_session_state() or bk_session_status().
 *  - bk_session_get_stats(), bk_session_stats_json(), bk_session_state(), bk_session_status() are
 *    safe from any thread at any time between bk_session_new() and bk_session_free().
 *  - bk_session_set_event_callback(), bk_session_prepare(), bk_session_memory_plan(),
 *    bk_session_start(), bk_session_finish() are lifecycle calls: one thread at a time, never
 *    concurrently with each other. bk_session_finish() may run while process calls are in flight
 *    (they then return BK_NOT_RUNNING).
 *  - bk_session_free() must be the last call on a session: no other call may be running or follow.
 *  - The event callback runs on the session's own threads (sender, housekeeper) or on the thread
 *    calling start/finish. It must return quickly and must not call bk_session_finish() or
 *    bk_session_free() on its session.
 *
 * MEMORY. Frame and audio memory belongs to the caller and only has to stay valid during the
 * process call: video is converted straight into a pooled encoder frame, audio copied into the
 * lane's ring. In steady state the process calls make no heap allocation.
 *
 * SECRETS. bk_config_add_destination() copies the key; the config's copy is wiped (zeroed) when the
 * destinations are cleared or the config freed, so free the config right after bk_session_new().
 * The caller should wipe its own copy after bk_config_add_destination(). A session keeps the key while it
 * lives (it reconnects with it; the buffers that carried it to the socket are zeroed after each send) and
 * releases it in bk_session_free(). No message, event, stats field or log line contains it.
 */
#ifndef BROADCASTKIT_H
#define BROADCASTKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; compare with bk_abi_version() at run time. It changes
 *  only when a declaration here changes incompatibly (struct layouts, enum values, signatures). */
#define BK_ABI_VERSION 1

/* ---------------------------------------------------------------------------------------------- */
/* Status codes and enums                                                                         */

/** Result of a call that can fail. BK_OK is 0; every error is negative. */
typedef enum bk_status {
    BK_OK = 0,
    /** A NULL handle or pointer, an out-of-range value, an unknown name. */
    BK_ERR_INVALID_ARGUMENT = -1,
    /** The configuration cannot be used (e.g. no destination, an unusable RTMP URL). */
    BK_ERR_CONFIGURATION = -2,
    /** The memory plan does not fit the budget; the message is followed by the plan. */
    BK_ERR_MEMORY_BUDGET = -3,
    /** A destination could not connect or publish (unreachable, key/app rejected, TLS). */
    BK_ERR_CONNECT = -4,
    /** The stream failed while running (connection lost and not recovered). */
    BK_ERR_STREAMING = -5,
    /** The call is not valid in the session's current state (e.g. start twice). */
    BK_ERR_STATE = -6
} bk_status;

/** What happened to a buffer handed to a process call. Drops (>0) are also counted in bk_stats. */
typedef enum bk_process_result {
    BK_ACCEPTED = 0,                    /**< queued; or, from a live (drop-mode) source faster than the output frame rate, skipped between two output ticks (video_frames_skipped in the stats JSON), not a drop */
    BK_DROPPED_ENCODER_BUSY = 1,        /**< the video lane had 2 frames pending */
    BK_DROPPED_AUDIO_LANE_FULL = 2,     /**< an audio lane's ~1 s ring was full */
    BK_DROPPED_MALFORMED = 3,           /**< bad size, stride, plane size, format, channel count... */
    BK_DROPPED_BACKWARDS_TIMESTAMP = 4, /**< pts not after the previous one on this lane */
    BK_DROPPED_WRONG_LANE = 5,          /**< e.g. audio on a disabled lane */
    BK_DROPPED_CONGESTION_P_FRAME = 6,
    BK_DROPPED_CONGESTION_UNTIL_IDR = 7,
    BK_DROPPED_QUEUE_FULL = 8,
    BK_DROPPED_ENCODER_ERROR = 9,
    /** The session is not running (not started yet, finishing or finished). Not counted. */
    BK_NOT_RUNNING = -1,
    /** NULL session or buffer pointer, or an unknown format/lane value. Not counted. */
    BK_INVALID_BUFFER = -2
} bk_process_result;

/** Number of drop reasons: bk_stats.drops[i] counts bk_process_result value i + 1. */
#define BK_DROP_REASON_COUNT 9

/** Pixel layouts, named by byte order in memory (BGRA: byte 0 is blue), as GStreamer names them. */
typedef enum bk_pixel_format {
    BK_PIXEL_BGRA = 0,
    BK_PIXEL_BGRX = 1,
    BK_PIXEL_RGBA = 2,
    BK_PIXEL_RGBX = 3,
    BK_PIXEL_NV12 = 4, /**< plane 0 Y, plane 1 interleaved UV */
    BK_PIXEL_I420 = 5  /**< planes Y, U, V */
} bk_pixel_format;

/** Interleaved PCM sample formats. */
typedef enum bk_sample_format {
    BK_SAMPLE_S16 = 0, /**< signed 16-bit, native endianness (little on Linux/x86/arm) */
    BK_SAMPLE_F32 = 1  /**< 32-bit float in [-1, 1] */
} bk_sample_format;

/** The two audio lanes; they are mixed into the one audio track. */
typedef enum bk_audio_lane {
    BK_LANE_APP_AUDIO = 1,
    BK_LANE_MIC_AUDIO = 2
} bk_audio_lane;

typedef enum bk_audio_codec {
    BK_AUDIO_NONE = -1, /**< no audio track */
    BK_AUDIO_AAC = 0,   /**< AAC-LC, legacy FLV: every ingest takes it (default) */
    BK_AUDIO_OPUS = 1   /**< Opus, Enhanced RTMP v2 */
} bk_audio_codec;

typedef enum bk_state {
    BK_STATE_IDLE = 0,
    BK_STATE_RUNNING = 1,
    BK_STATE_FINISHING = 2,
    BK_STATE_FINISHED = 3,
    BK_STATE_FAILED = 4
} bk_state;

/* ---------------------------------------------------------------------------------------------- */
/* Library                                                                                        */

/** "0.2.0 (BroadcastKit; x264, vo-aacenc, libopus, libyuv; native RTMP)"; static, never free it. */
const char *bk_version(void);

/** The library's BK_ABI_VERSION. */
int bk_abi_version(void);

/** Frees a string this library returned for you to keep. NULL is ignored. */
void bk_string_free(char *s);

/** Optional, once per process before the first session: limits glibc to two malloc arenas and turns
 *  transparent huge pages off for the process (what the `broadcast` CLI does; both lower RSS).
 *  Process-wide, hence not done for you. */
void bk_process_tuning_apply(void);

/** CLOCK_MONOTONIC now, in nanoseconds: the clock pts_ns values are expected on. */
int64_t bk_now_ns(void);

/* ---------------------------------------------------------------------------------------------- */
/* Limits                                                                                         */

/** An accepted range and the library's default. */
typedef struct bk_range {
    int32_t min;
    int32_t max;
    int32_t default_value;
} bk_range;

/** What a configuration accepts, and the defaults of bk_config_new(): the library's one set of
 *  rules (the CLI, this ABI, the Python binding and the GStreamer element all map to it). */
typedef struct bk_limit_table {
    bk_range width;                     /**< even */
    bk_range height;                    /**< even */
    bk_range fps;
    bk_range video_bitrate_kbps;        /**< also bk_session_set_video_bitrate's range */
    bk_range keyframe_interval_seconds;
    bk_range aac_bitrate_kbps;
    bk_range opus_bitrate_kbps;
    bk_range replay_seconds;            /**< 0 = off */
    const char *presets;                /**< the x264 presets, comma-separated, lightest first */
    const char *default_preset;
    int64_t default_memory_budget_bytes;
    bk_range reconnect_attempts;        /**< bk_config_set_reconnect's attempts: 0 = forever, -1 = never */
    double reconnect_delay_min_seconds; /**< bk_config_set_reconnect's first delay, in seconds */
    double reconnect_delay_max_seconds;
    double reconnect_delay_default_seconds;
} bk_limit_table;

/** The table (static; never free it). */
const bk_limit_table *bk_limits(void);

/* ---------------------------------------------------------------------------------------------- */
/* Configuration                                                                                  */

typedef struct bk_config bk_config;

/** A configuration with the defaults: 1280x720, 30 fps, 2500 kbps, veryfast, AAC 128 kbps, a 50 MB
 *  budget of the session's own memory (BK_BUDGET_SESSION), 20 reconnect attempts from 2 s, no destination. NULL only when out of memory. */
bk_config *bk_config_new(void);

/** Frees the config and wipes the stream keys it holds. NULL is ignored. */
void bk_config_free(bk_config *cfg);

/** The message of the last failed call on cfg, or "" (owned by cfg; never free it). */
const char *bk_config_last_error(const bk_config *cfg);

/** Output size (even; input of any size is scaled and letter/pillarboxed), frame rate and x264
 *  target bitrate in kbps (also the VBV max rate; 0: the library's default for this size and rate,
 *  800 up to 640x360, 1200 up to 854x480, 2500 up to 1280x720, else 4500, x1.5 above 30 fps); ranges
 *  in bk_limits(). Every setter checks its
 *  values against bk_limits() and fails with BK_ERR_INVALID_ARGUMENT, changing nothing. */
bk_status bk_config_set_video(bk_config *cfg, int width, int height, int fps, int bitrate_kbps);

/** x264 preset: one of bk_limits()->presets (ultrafast, superfast, veryfast (default), faster,
 *  fast, medium). */
bk_status bk_config_set_preset(bk_config *cfg, const char *preset);

/** Keyframe interval in seconds (default 2; ingests ask for 2). */
bk_status bk_config_set_keyframe_interval(bk_config *cfg, int seconds);

/** Audio codec and bitrate in kbps (bk_limits()->aac_bitrate_kbps / opus_bitrate_kbps); BK_AUDIO_NONE:
 *  no audio track (bitrate ignored). */
bk_status bk_config_set_audio(bk_config *cfg, bk_audio_codec codec, int bitrate_kbps);

/** Adds a network destination; the URL's scheme picks the transport:
 *   - rtmp://host[:port]/app, rtmps://...: RTMP(S). stream_key is the secret, appended as the last
 *     path element ("" when the key is already the URL's last path element);
 *   - srt://host:port[?streamid=...&latency=MS&passphrase=...]: MPEG-TS over SRT to a listener;
 *     stream_key fills the stream id when the URL has none ("" for none);
 *   - https://... (http:// for loopback and tests): a WHIP endpoint (WebRTC); stream_key is the
 *     bearer token ("" for none). Needs Opus audio (bk_config_set_audio).
 *  The URL and the key are checked at once by the library's one rule, the CLI's: a key holds no '/',
 *  '#', whitespace or control characters and at most 1024 bytes (a WHIP token: no control
 *  characters). A refusal is BK_ERR_CONFIGURATION with the CLI's words in bk_config_last_error(),
 *  e.g. "the stream key contains '/'; a key has no '/', '#', whitespace or control characters";
 *  never the key itself. The key is copied; the copy is wiped when the config is freed. The first
 *  network destination is the primary one (its failure fails the session). */
bk_status bk_config_add_destination(bk_config *cfg, const char *url, const char *stream_key);

/** The same call under its first name (from when RTMP was the only network destination): an
 *  alias of bk_config_add_destination(), every scheme included. Kept for existing callers. */
bk_status bk_config_add_rtmp(bk_config *cfg, const char *url, const char *stream_key);

/** Adds a file destination (created or truncated at start): fragmented MP4 when the path ends in
 *  .mp4, else FLV. */
bk_status bk_config_add_file(bk_config *cfg, const char *path);

/** Removes every destination (wiping keys). */
void bk_config_clear_destinations(bk_config *cfg);

/** Hard memory budget in bytes. 0 disables the check; BK_MEMORY_BUDGET_AUTO (the default is a fixed
 *  50 MB) resolves like the CLI: 50 MB, or the process's memory cgroup limit less headroom when
 *  that is smaller. When the plan does not fit, lighter x264 settings are tried, then start fails
 *  with BK_ERR_MEMORY_BUDGET and the plan. */
#define BK_MEMORY_BUDGET_AUTO (-1)
bk_status bk_config_set_memory_budget(bk_config *cfg, int64_t bytes);

/** What the memory budget counts. */
typedef enum bk_budget_scope {
    /** The session's own memory: its pools, encoders, queues and rings, the code and libraries it
     *  loads and the threads it starts, measured as growth from the moment it is prepared. What
     *  the host process held before (an interpreter, numpy, a GUI toolkit) is shown in the plan
     *  and not charged; sessions opened and closed one after another plan alike. The default of
     *  bk_config_new(): an embedded session can only promise what it adds. */
    BK_BUDGET_SESSION = 0,
    /** The whole process's resident memory (the plan's "runtime baseline (measured)" line is the
     *  process's RSS at prepare): what the broadcast CLI budgets. For a process that runs the
     *  session and little else and wants its whole footprint bounded. */
    BK_BUDGET_PROCESS = 1
} bk_budget_scope;

/** Sets the budget's scope (a bk_budget_scope value); BK_ERR_INVALID_ARGUMENT for any other value.
 *  With either scope a memory cgroup limit (memory.max, memory.limit_in_bytes) still caps the
 *  session: with BK_BUDGET_SESSION the budget is lowered to what the limit leaves beside the host's
 *  memory at prepare. The plan's "budget scope" line says which scope applies and why. */
bk_status bk_config_set_memory_budget_scope(bk_config *cfg, int scope);

/** Reconnect policy after a lost connection: attempts (bk_limits()->reconnect_attempts: 0 = forever,
 *  -1 = never) and the first delay in seconds (reconnect_delay_min_seconds to _max_seconds; x1.5
 *  per attempt with jitter, capped at 30 s). Out of range: BK_ERR_INVALID_ARGUMENT with the words
 *  the CLI prints, e.g. "reconnect attempts -2 outside -1...1000000 (0 retries forever, -1 never
 *  reconnects)", and the configuration unchanged. */
bk_status bk_config_set_reconnect(bk_config *cfg, int attempts, double first_delay_seconds);

/** Keep the last `seconds` (bk_limits()->replay_seconds; 0 = off, the default) of encoded video and audio in a replay
 *  ring planned inside the memory budget (its own line in the plan). Clips saved without a path
 *  go to `directory` (NULL: the current directory) as replay-YYYYMMDD-HHMMSS.mp4 (UTC). */
bk_status bk_config_set_replay(bk_config *cfg, int seconds, const char *directory);

/** Adapt the x264 bitrate to the measured send rate when the queue backs up (default on). */
bk_status bk_config_set_adaptive_bitrate(bk_config *cfg, int enabled);

/** What a process call does when its lane is full (the video lane's 2 pending frames, an audio
 *  lane's ~1 s ring). */
typedef enum bk_backpressure {
    /** Return at once with a counted drop (BK_DROPPED_ENCODER_BUSY, BK_DROPPED_AUDIO_LANE_FULL):
     *  for live sources (a camera, a screen), whose late frame is worth less than the next. Default. */
    BK_BACKPRESSURE_DROP = 0,
    /** Wait for room (up to 5 s, then the same counted drop): for producers faster than real time
     *  (a transcoder, a file) that want every buffer encoded. The waiting thread is the caller's.
     *  The producer is then the stream's clock: every stage after the lanes waits too (recordings,
     *  custom sinks, a network destination slower than the encoder slows the producer), nothing
     *  follows the wall clock (a pause of the producer is a pause: no silence mixed in, no timestamp
     *  moved), and bk_session_finish() delivers what is queued while the destinations make
     *  progress. A stage that takes nothing for 2.5 s, or a destination that is down, drops (counted). */
    BK_BACKPRESSURE_BLOCK = 1
} bk_backpressure;

bk_status bk_config_set_backpressure(bk_config *cfg, bk_backpressure mode);

/** Memory held by the caller's capture buffers, reserved in the plan (default 0). */
bk_status bk_config_set_capture_reserve(bk_config *cfg, int64_t bytes);

/* ---------------------------------------------------------------------------------------------- */
/* Session                                                                                        */

typedef struct bk_session bk_session;

/** A session over a copy of cfg (cfg can be freed right after). Nothing is opened yet. NULL only
 *  when cfg is NULL or memory is exhausted. */
bk_session *bk_session_new(const bk_config *cfg);

/** Finishes the session if it is running, then frees it. NULL is ignored. */
void bk_session_free(bk_session *session);

/** The message of the last failed lifecycle call on the session, or "" (owned by the session,
 *  valid until the next failing call or bk_session_free; never free it). */
const char *bk_session_last_error(const bk_session *session);

typedef enum bk_event_type {
    BK_EVENT_STARTED = 0,      /**< message: the destinations, comma-separated, keys redacted */
    BK_EVENT_WARNING = 1,      /**< message: e.g. the recording's disk is full */
    BK_EVENT_RECONNECTING = 2, /**< attempt, delay_seconds */
    BK_EVENT_RECONNECTED = 3,  /**< reconnects: total so far */
    BK_EVENT_FAILED = 4,       /**< message: why; a primary failure ends the stream */
    BK_EVENT_FINISHED = 5,
    /** A client sent `stop` on the control socket (bk_session_open_control): finish when you see
     *  fit (not from the callback: see THREADS). */
    BK_EVENT_STOP_REQUESTED = 6
} bk_event_type;

typedef struct bk_event {
    bk_event_type type;
    /** Never NULL ("" when the event has no text); valid only during the callback. */
    const char *message;
    int32_t attempt;
    double delay_seconds;
    int32_t reconnects;
} bk_event;

/** Called on session threads; see THREADS above. */
typedef void (*bk_event_callback)(const bk_event *event, void *user_data);

/** Sets (or with NULL clears) the event callback. Only before bk_session_start(). */
bk_status bk_session_set_event_callback(bk_session *session, bk_event_callback callback, void *user_data);

/** Opens a control socket at `path` for this session: the protocol of `broadcast --control`
 *  (docs/control-protocol.md: stats, keyframe, set-bitrate, save-replay, version, subscribe; `stop`
 *  arrives as BK_EVENT_STOP_REQUESTED). Mode 0600, only this uid and root may connect; a stale
 *  socket (nobody listening) is taken over with a BK_EVENT_WARNING, a live one refused. Only before
 *  bk_session_start(); closed and removed by bk_session_finish() (after a `stopped` event) or
 *  bk_session_free(). BK_ERR_CONFIGURATION with the reason, BK_ERR_STATE. */
bk_status bk_session_open_control(bk_session *session, const char *path);

/** Opens the encoders and allocates every pool and queue; connects nothing. Optional: start
 *  prepares when needed. Fails with BK_ERR_CONFIGURATION. */
bk_status bk_session_prepare(bk_session *session);

/** The memory plan as text, one item per line, last lines naming the budget and whether it fits
 *  (prepares the session if needed). Free with bk_string_free. NULL on failure (see last error). */
char *bk_session_memory_plan(bk_session *session);

/** Prepares if needed, checks the plan against the budget, connects every destination and starts
 *  the lanes. BK_ERR_CONFIGURATION / BK_ERR_MEMORY_BUDGET / BK_ERR_CONNECT / BK_ERR_STATE. */
bk_status bk_session_start(bk_session *session);

typedef struct bk_video_frame {
    int32_t width;
    int32_t height;
    bk_pixel_format format;
    /** Base address of each plane; only the first 1 (packed), 2 (NV12) or 3 (I420) are read. */
    const void *planes[3];
    /** Bytes per row of each plane (at least width*4 packed, width for Y, ...). */
    int64_t strides[3];
    /** Readable bytes behind each plane: a short plane is a counted drop, never an over-read. */
    int64_t plane_sizes[3];
    /** Capture time in ns on one monotonic clock shared by all lanes (bk_now_ns()). */
    int64_t pts_ns;
} bk_video_frame;

typedef struct bk_audio_buffer {
    bk_sample_format format;
    int32_t channels;    /**< 1 or 2, interleaved */
    int32_t sample_rate; /**< 44100 or 48000 */
    int32_t frame_count; /**< samples per channel, 1..22050 */
    const void *data;
    int64_t data_size;   /**< readable bytes at data */
    int64_t pts_ns;      /**< capture time of the first sample */
} bk_audio_buffer;

/** Converts the frame into the encoder's pool (never blocks on the network). Malformed frames,
 *  backwards timestamps and a busy encoder are counted drops (> 0); with BK_BACKPRESSURE_BLOCK a
 *  busy encoder is waited for first. */
bk_process_result bk_session_process_video(bk_session *session, const bk_video_frame *frame);

/** Copies the samples into the lane's ring (with BK_BACKPRESSURE_BLOCK, waiting for room). */
bk_process_result bk_session_process_audio(bk_session *session, bk_audio_lane lane, const bk_audio_buffer *audio);

/** Stops accepting buffers, encodes what is pending, sends what is queued (up to 1.5 s) and closes
 *  every destination (RTMP: FCUnpublish + deleteStream). Returns BK_ERR_STREAMING (with the
 *  reason as last error) when the primary destination failed during the stream, else BK_OK.
 *  A second call does nothing and returns the same. */
bk_status bk_session_finish(bk_session *session);

/** Saves the replay ring's last `seconds` (<= 0: all it keeps) as an MP4 clip at `path` (NULL: a
 *  timestamped name in the configured directory). Blocks the calling thread until the clip is
 *  written, on the session's replay thread; the stream goes on. Any thread, while running. When
 *  `saved_path` is not NULL it receives the clip's path (free with bk_string_free). Errors:
 *  BK_ERR_CONFIGURATION (no replay ring, not running, nothing buffered, a save in progress),
 *  BK_ERR_STREAMING (the write failed: the partial file is removed, the stream is unaffected). */
bk_status bk_session_save_replay(bk_session *session, const char *path, double seconds, char **saved_path);

/** Sets the x264 target bitrate (and VBV maximum) while running; the adaptive bitrate may still
 *  lower it when the link backs up. Any thread. BK_ERR_INVALID_ARGUMENT outside the library's
 *  video bitrate range, BK_ERR_STATE when not running or without video. */
bk_status bk_session_set_video_bitrate(bk_session *session, int kbps);

/** Makes the next encoded picture a keyframe (IDR). Any thread. BK_ERR_STATE when not running. */
bk_status bk_session_request_keyframe(bk_session *session);

bk_state bk_session_state(const bk_session *session);

/** "connecting", "live", "reconnecting", "failed" or "finished" (static; never free it). */
const char *bk_session_status(const bk_session *session);

typedef struct bk_stats {
    /** Set by the caller to sizeof(bk_stats) before bk_session_get_stats (future fields). */
    uint32_t struct_size;
    uint32_t reserved;
    int64_t monotonic_ns;
    int64_t video_frames_in;
    int64_t video_frames_encoded;
    int64_t video_frames_sent;
    int64_t audio_frames_sent;
    int64_t video_bytes_sent;
    int64_t audio_bytes_sent;
    int64_t bytes_sent;
    /** drops[i] counts bk_process_result i + 1 (encoder_busy, audio_lane_full, malformed, ...). */
    int64_t drops[BK_DROP_REASON_COUNT];
    int64_t total_drops;
    int64_t queue_bytes;
    int64_t queue_ms;
    int64_t target_video_kbps;
    int64_t reconnects;
    int64_t late_tags_clamped;
    int64_t rss_bytes;
    int64_t peak_rss_bytes;
    /** Capture-to-socket video latency on the primary destination; -1 when not known yet. */
    double latency_p50_ms;
    double latency_p99_ms;
} bk_stats;

/** Fills *out (out->struct_size must be set; smaller sizes get a prefix). Safe from any thread. */
bk_status bk_session_get_stats(const bk_session *session, bk_stats *out);

/** The stats as one JSON object, the same object as each line of the CLI's --stats-json
 *  ("time_s", "state", "fps", "kbps", "video_frames_sent", "drops": {"encoder_busy": n, ...},
 *  "queue_ms", "rss_bytes", ...). Rates (fps, kbps) are over the interval since the previous call
 *  on this session, or since bk_session_new for the first. Free with bk_string_free. */
char *bk_session_stats_json(const bk_session *session);

/** The name of a drop reason as in the JSON ("encoder_busy"...), or "" (static). */
const char *bk_drop_reason_name(int reason);

#ifdef __cplusplus
}
#endif

#endif /* BROADCASTKIT_H */
