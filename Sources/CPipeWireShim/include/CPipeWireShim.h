#ifndef BK_PW_SHIM_H
#define BK_PW_SHIM_H
/*
 * Plain-C glue over libpipewire-0.3 / SPA, whose POD builder and stream events are
 * macro- and callback-heavy. Swift sees only opaque handles, flat structs and C callbacks.
 */
#include <stddef.h>
#include <stdint.h>

/* Pixel layouts as SPA names them (byte order in memory). */
enum bk_pw_pixel_format {
    BK_PW_PIXEL_BGRX = 1, BK_PW_PIXEL_BGRA, BK_PW_PIXEL_RGBX, BK_PW_PIXEL_RGBA,
    BK_PW_PIXEL_NV12, BK_PW_PIXEL_I420,
};

enum bk_pw_sample_format { BK_PW_SAMPLE_S16 = 1, BK_PW_SAMPLE_F32 = 2 };

/* What a capture stream reads. */
enum bk_pw_capture_kind {
    BK_PW_CAPTURE_VIDEO = 0,
    BK_PW_CAPTURE_SINK_MONITOR = 1, /* app audio: a sink's monitor (stream.capture.sink=true) */
    BK_PW_CAPTURE_SOURCE = 2,       /* mic: an Audio/Source */
};

/* Stream life events reported to the owner (from the stream's thread). */
enum bk_pw_event {
    BK_PW_EVENT_STREAMING = 1,
    BK_PW_EVENT_ERROR = 2,     /* message says why; the stream is dead */
    BK_PW_EVENT_FORMAT = 3,    /* a (new) format was negotiated; message describes it */
    BK_PW_EVENT_NO_DEVICE = 4, /* audio on the default device: it went away, the stream waits for the next default */
};

/* One mapped video buffer, borrowed for the duration of the callback. */
typedef struct {
    int32_t format;            /* enum bk_pw_pixel_format */
    int32_t width, height;
    const void *planes[3];
    int32_t strides[3];
    int64_t plane_sizes[3];    /* readable bytes from planes[i] */
    int64_t pts_ns;            /* CLOCK_MONOTONIC */
    uint64_t sequence;         /* spa_meta_header seq, or a local counter */
    int32_t releasable;        /* 1: the planes are a shared memfd mapping whose pages the reader
                                  may drop (MADV_DONTNEED) once read; the data stays intact */
} bk_pw_video_frame;

/* One mapped audio buffer slice (interleaved), borrowed for the duration of the callback. */
typedef struct {
    int32_t format;            /* enum bk_pw_sample_format */
    int32_t channels;
    int32_t rate;
    int32_t frames;
    const void *data;
    int64_t bytes;
    int64_t pts_ns;            /* CLOCK_MONOTONIC, capture time of the first frame */
} bk_pw_audio_chunk;

typedef void (*bk_pw_video_cb)(void *ctx, const bk_pw_video_frame *frame);
typedef void (*bk_pw_audio_cb)(void *ctx, const bk_pw_audio_chunk *chunk);
typedef void (*bk_pw_event_cb)(void *ctx, int32_t event, const char *message);

typedef struct {
    int32_t kind;              /* enum bk_pw_capture_kind */
    const char *stream_name;   /* node.name of our capture stream */
    const char *target;        /* target.object (node name) or NULL for the default */
    uint32_t target_id;        /* node id (portal), or UINT32_MAX */
    int remote_fd;             /* an fd from OpenPipeWireRemote, or -1 for the default daemon */
    int32_t channels;          /* audio: 1 or 2 */
    int32_t rate;              /* audio: preferred rate, 48000 */
    int32_t buffers;           /* preferred buffer count (2); more are accepted if the producer insists */
    int32_t video_width;       /* video: the size to ask for when the producer can scale (the */
    int32_t video_height;      /* smallest that covers the output); 0: 1280x720 */
    bk_pw_video_cb on_video;
    bk_pw_audio_cb on_audio;
    bk_pw_event_cb on_event;
    void *ctx;
} bk_pw_capture_config;

typedef struct bk_pw_capture bk_pw_capture;

/* Creates the stream on its own pw_thread_loop and connects it. NULL on failure with err filled. */
bk_pw_capture *bk_pw_capture_open(const bk_pw_capture_config *config, char *err, size_t err_len);
/* Disconnects, stops the thread and frees everything. After return no callback runs. */
void bk_pw_capture_close(bk_pw_capture *capture);
/* Holds the stream's thread loop for `ms` from the caller's thread, so its next callbacks run
 * that late, as on a starved CPU (tests). */
void bk_pw_capture_hold_loop(bk_pw_capture *capture, int32_t ms);

/* One node of the graph, as listed by the registry. */
typedef struct {
    uint32_t id;
    uint64_t serial;
    const char *name;
    const char *media_class;
    const char *description;
} bk_pw_node_info;

typedef void (*bk_pw_node_cb)(void *ctx, const bk_pw_node_info *node);

/* Lists the nodes of the daemon (remote_fd = -1: default socket). 0, or -errno with err filled. */
int bk_pw_list_nodes(int remote_fd, bk_pw_node_cb cb, void *ctx, char *err, size_t err_len);


#endif
