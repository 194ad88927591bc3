/* dlopen()s libsrt on first use and wraps the calls we make (see CSRTShim.h). */
#include "CSRTShim.h"
#include "bk_dynamic_library.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <srt/srt.h>

#define BK_SRT_FUNCTIONS(X) \
    X(srt_startup)          \
    X(srt_create_socket)    \
    X(srt_setsockflag)      \
    X(srt_connect)          \
    X(srt_sendmsg2)         \
    X(srt_close)            \
    X(srt_getlasterror_str) \
    X(srt_getlasterror)     \
    X(srt_getrejectreason)  \
    X(srt_rejectreason_str) \
    X(srt_bstats)           \
    X(srt_getsndbuffer)     \
    X(srt_getsockstate)     \
    X(srt_epoll_create)     \
    X(srt_epoll_add_usock)  \
    X(srt_epoll_add_ssock)  \
    X(srt_epoll_wait)       \
    X(srt_epoll_release)    \
    X(srt_setloglevel)

/* __typeof__ only reads the declarations: no reference to the symbols reaches the linker. */
#define BK_POINTER(name) static __typeof__(name) *p_##name;
BK_SRT_FUNCTIONS(BK_POINTER)
#undef BK_POINTER

static int start(char *error, size_t error_cap) {
    /* libsrt logs to stderr by default; our own one-line errors say what matters. */
    p_srt_setloglevel(2 /* LOG_CRIT */);
    if (p_srt_startup() < 0) {
        snprintf(error, error_cap, "libsrt failed to start: %s", p_srt_getlasterror_str());
        return -1;
    }
    return 0;
}

static const bk_dl_symbol symbols[] = {BK_SRT_FUNCTIONS(BK_DL_REQUIRED_P)};
static const char *const sonames[] = {"libsrt.so.1.5", NULL};
static bk_dl_library library = BK_DL_LIBRARY("srt://", sonames, "libsrt1.5-openssl", symbols, start);

int bk_srt_load(void) { return bk_dl_load(&library) != NULL; }

const char *bk_srt_load_error(void) { return bk_dl_error(&library); }

static int set_int(SRTSOCKET s, SRT_SOCKOPT opt, int value) {
    return p_srt_setsockflag(s, opt, &value, sizeof value);
}

static int set_bool(SRTSOCKET s, SRT_SOCKOPT opt, int value) {
    bool b = value != 0;
    return p_srt_setsockflag(s, opt, &b, sizeof b);
}

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Milliseconds until `deadline_ns` (INT64_MAX: none), rounded up, clamped to [0, cap]. */
static int ms_until(int64_t deadline_ns, int cap) {
    if (deadline_ns == INT64_MAX) return cap;
    int64_t left = deadline_ns - monotonic_ns();
    if (left <= 0) return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms < cap ? (int)ms : cap;
}

static int stop_is_set(int stop_fd) {
    if (stop_fd < 0) return 0;
    struct pollfd p = {.fd = stop_fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static int fail(SRTSOCKET s, int eid, int rc) {
    if (eid >= 0) p_srt_epoll_release(eid);
    p_srt_close(s);
    return rc;
}

int bk_srt_connect(const void *address, int address_len, const bk_srt_options *o, int stop_fd, int64_t deadline_ns,
                   char *error, size_t error_size, int *refused) {
    *refused = 0;
    if (!bk_srt_load()) {
        snprintf(error, error_size, "%s", bk_srt_load_error());
        return -1;
    }
    if (stop_is_set(stop_fd)) {
        snprintf(error, error_size, "the run stopped before connecting");
        return -2;
    }
    int left = ms_until(deadline_ns, o->connect_timeout_ms);
    if (left <= 0) {
        snprintf(error, error_size, "not connected within the connect deadline");
        return -3;
    }
    SRTSOCKET s = p_srt_create_socket();
    if (s == SRT_INVALID_SOCK) {
        snprintf(error, error_size, "cannot create an SRT socket: %s", p_srt_getlasterror_str());
        return -1;
    }
    SRT_TRANSTYPE live = SRTT_LIVE;
    /* The connect is non-blocking (SRTO_RCVSYN off: the caller only sends, so nothing else
       receives) and waited for below beside the stop; sends stay blocking (SRTO_SNDSYN). */
    int ok = p_srt_setsockflag(s, SRTO_TRANSTYPE, &live, sizeof live) == 0
          && set_int(s, SRTO_PAYLOADSIZE, 1316) == 0
          && set_bool(s, SRTO_SENDER, 1) == 0
          && set_int(s, SRTO_LATENCY, o->latency_ms) == 0
          && set_int(s, SRTO_SNDBUF, o->send_buffer_bytes) == 0
          && set_int(s, SRTO_RCVBUF, o->receive_buffer_bytes) == 0
          && set_int(s, SRTO_UDP_SNDBUF, o->send_buffer_bytes) == 0
          && set_int(s, SRTO_UDP_RCVBUF, o->receive_buffer_bytes) == 0
          && set_int(s, SRTO_CONNTIMEO, left) == 0
          && set_int(s, SRTO_SNDTIMEO, o->send_timeout_ms) == 0
          && set_bool(s, SRTO_SNDSYN, 1) == 0
          && set_bool(s, SRTO_RCVSYN, 0) == 0;
    if (ok && o->stream_id != NULL)
        ok = p_srt_setsockflag(s, SRTO_STREAMID, o->stream_id, (int)strlen(o->stream_id)) == 0;
    if (ok && o->passphrase != NULL)
        ok = p_srt_setsockflag(s, SRTO_PASSPHRASE, o->passphrase, (int)strlen(o->passphrase)) == 0;
    if (!ok) {
        /* libsrt's message names the option, never its value. */
        snprintf(error, error_size, "an SRT option was refused: %s", p_srt_getlasterror_str());
        return fail(s, -1, -1);
    }
    int eid = p_srt_epoll_create();
    int out_events = SRT_EPOLL_OUT | SRT_EPOLL_ERR, in_events = SRT_EPOLL_IN;
    if (eid < 0 || p_srt_epoll_add_usock(eid, s, &out_events) != 0
        || (stop_fd >= 0 && p_srt_epoll_add_ssock(eid, stop_fd, &in_events) != 0)) {
        snprintf(error, error_size, "cannot wait for the SRT connection: %s", p_srt_getlasterror_str());
        return fail(s, eid, -1);
    }
    if (p_srt_connect(s, (const struct sockaddr *)address, address_len) == SRT_ERROR) {
        snprintf(error, error_size, "%s", p_srt_getlasterror_str());
        return fail(s, eid, -1);
    }
    for (;;) {
        SRT_SOCKSTATUS state = p_srt_getsockstate(s);
        if (state == SRTS_CONNECTED) break;
        if (state != SRTS_CONNECTING && state != SRTS_OPENED && state != SRTS_INIT) {
            int reason = p_srt_getrejectreason(s);
            /* A listener that answered and said no (bad passphrase, stream id refused by its
               access control) is a refusal; a timeout or an unreachable port is a network fault. */
            if (reason == SRT_REJ_BADSECRET || reason == SRT_REJ_UNSECURE || reason >= SRT_REJC_PREDEFINED
                || reason == SRT_REJ_PEER) {
                *refused = 1;
            }
            if (reason == SRT_REJ_TIMEOUT)
                snprintf(error, error_size, "Connection setup failure: connection timed out");
            else
                snprintf(error, error_size, "Connection setup failure: %s", p_srt_rejectreason_str(reason));
            return fail(s, eid, -1);
        }
        if (stop_is_set(stop_fd)) {
            snprintf(error, error_size, "the run stopped while connecting");
            return fail(s, eid, -2);
        }
        int wait_ms = ms_until(deadline_ns, 250);
        if (wait_ms <= 0) {
            /* The same line as libsrt's own timeout (SRTO_CONNTIMEO, set to the same bound). */
            snprintf(error, error_size, "Connection setup failure: connection timed out");
            return fail(s, eid, -3);
        }
        SRTSOCKET rd[2], wr[2];
        int rn = 2, wn = 2;
        SYSSOCKET lr[2];
        int lrn = 2;
        /* Wakes when the socket connects or fails, or the stop's pipe turns readable; a timeout
           (an error return) only loops back to the checks above. */
        (void)p_srt_epoll_wait(eid, rd, &rn, wr, &wn, wait_ms, lr, &lrn, NULL, NULL);
    }
    p_srt_epoll_release(eid);
    return s;
}

int bk_srt_send(int sock, const void *data, int length, char *error, size_t error_size) {
    int n = p_srt_sendmsg2(sock, data, length, NULL);
    if (n == SRT_ERROR) {
        snprintf(error, error_size, "%s", p_srt_getlasterror_str());
        return -1;
    }
    return n;
}

void bk_srt_close(int sock) {
    if (bk_dl_is_loaded(&library)) p_srt_close(sock);
}

int64_t bk_srt_unacknowledged_bytes(int sock) {
    size_t blocks = 0, bytes = 0;
    /* Returns the buffer's time span in ms (not 0) on success. */
    if (p_srt_getsndbuffer(sock, &blocks, &bytes) < 0) return -1;
    return (int64_t)bytes;
}

int bk_srt_stats_read(int sock, bk_srt_stats *out) {
    SRT_TRACEBSTATS s;
    if (p_srt_bstats(sock, &s, 0) != 0) return -1;
    out->rtt_ms = s.msRTT;
    out->bandwidth_mbps = s.mbpsBandwidth;
    out->send_rate_mbps = s.mbpsSendRate;
    out->packets_sent = s.pktSentTotal;
    out->packets_lost = s.pktSndLossTotal;
    out->packets_retransmitted = s.pktRetransTotal;
    out->packets_dropped = s.pktSndDropTotal;
    out->bytes_dropped = (int64_t)s.byteSndDropTotal;
    out->bytes_sent_unique = (int64_t)s.byteSentUniqueTotal;
    out->bytes_sent = (int64_t)s.byteSentTotal;
    out->bytes_retransmitted = (int64_t)s.byteRetransTotal;
    out->send_buffer_bytes = s.byteSndBuf;
    out->send_buffer_ms = s.msSndBuf;
    return 0;
}
