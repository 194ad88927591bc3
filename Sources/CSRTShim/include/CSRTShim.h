/* libsrt reached at run time: the library (and the OpenSSL it links for encryption) is dlopen()ed
   when the first srt:// destination opens, so a process without one never maps it (its resident
   pages count in VmHWM and the memory budget).

   Swift calls the bk_srt_* functions below, never srt_* directly: this target links nothing, so a
   direct call would fail to link instead of quietly bringing the library back. The wrappers also
   keep libsrt's types (sockaddr, SRT_TRACEBSTATS) out of Swift. */
#ifndef CSRT_SHIM_H
#define CSRT_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* Loads libsrt.so.1.5 and resolves what we use, once per process (thread-safe). Returns 1 when
   usable; 0 otherwise, with a one-line reason in bk_srt_load_error(). */
int bk_srt_load(void);
const char *bk_srt_load_error(void);

/* What a caller connection is opened with. Every buffer is set explicitly: libsrt's defaults
   (8192 packets each way, ~12 MB) would not fit the memory plan. */
typedef struct {
    int latency_ms;          /* SRTO_LATENCY: receiver and peer latency (TSBPD) */
    int send_buffer_bytes;   /* SRTO_SNDBUF */
    int receive_buffer_bytes;/* SRTO_RCVBUF: a caller that only sends still has one */
    int connect_timeout_ms;  /* SRTO_CONNTIMEO */
    int send_timeout_ms;     /* SRTO_SNDTIMEO: a blocking send fails after this (a stalled link) */
    const char *stream_id;   /* SRTO_STREAMID, or NULL */
    const char *passphrase;  /* SRTO_PASSPHRASE (10..79 characters), or NULL */
} bk_srt_options;

/* Connects in caller mode (live transmission type, 1316-byte payloads) to `address` (a
   struct sockaddr of `address_len` bytes, resolved by the caller). The connect is non-blocking
   and waited for beside `stop_fd` (a stop's self-pipe, readable once stopped; -1 for none),
   within `connect_timeout_ms` and `deadline_ns` (CLOCK_MONOTONIC ns; INT64_MAX for none).
   Returns the socket (>= 0); -1 with a one-line reason in `error` (which never holds the
   passphrase or the stream id); -2 when the stop came; -3 when the deadline passed. `refused`
   is set to 1 when the listener rejected the connection (a wrong passphrase or stream id), 0
   otherwise. */
int bk_srt_connect(const void *address, int address_len, const bk_srt_options *options, int stop_fd,
                   int64_t deadline_ns, char *error, size_t error_size, int *refused);
/* Sends one message of at most 1316 bytes, blocking up to the send timeout. Returns the bytes sent
   or -1 with the reason in `error`. */
int bk_srt_send(int sock, const void *data, int length, char *error, size_t error_size);
/* The bytes in the send buffer now (sent and not yet acknowledged, or not yet sent), or -1.
   srt_bstats reports a moving average of the same, which lags a sender that waits on it. */
int64_t bk_srt_unacknowledged_bytes(int sock);
/* Closes the socket (libsrt sends its shutdown to the peer). */
void bk_srt_close(int sock);

/* The sender's view of the link, from srt_bstats. */
typedef struct {
    double rtt_ms;
    double bandwidth_mbps;     /* libsrt's estimate of the link capacity */
    double send_rate_mbps;
    int64_t packets_sent;
    int64_t packets_lost;      /* reported lost by the receiver */
    int64_t packets_retransmitted;
    int64_t packets_dropped;   /* too late to send: dropped by the sender */
    int64_t bytes_dropped;     /* their bytes */
    int64_t bytes_sent_unique;   /* handed over by the application */
    int64_t bytes_sent;          /* on the wire, retransmissions included */
    int64_t bytes_retransmitted;
    int64_t send_buffer_bytes; /* unacknowledged bytes in the send buffer */
    int64_t send_buffer_ms;    /* their timespan */
} bk_srt_stats;
/* Returns 0 and fills `out`, or -1. */
int bk_srt_stats_read(int sock, bk_srt_stats *out);

#endif
