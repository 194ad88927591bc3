/* dlopen()s libsrt on first use and wraps the calls we make (see CSRTShim.h). */
#include "CSRTShim.h"
#include "bk_dynamic_library.h"

#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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

int bk_srt_connect(const char *host, int port, const bk_srt_options *o, char *error, size_t error_size,
                   int *refused) {
    *refused = 0;
    if (!bk_srt_load()) {
        snprintf(error, error_size, "%s", bk_srt_load_error());
        return -1;
    }
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {0}, *list = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    int rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0 || list == NULL) {
        snprintf(error, error_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    SRTSOCKET s = p_srt_create_socket();
    if (s == SRT_INVALID_SOCK) {
        freeaddrinfo(list);
        snprintf(error, error_size, "cannot create an SRT socket: %s", p_srt_getlasterror_str());
        return -1;
    }
    SRT_TRANSTYPE live = SRTT_LIVE;
    int ok = p_srt_setsockflag(s, SRTO_TRANSTYPE, &live, sizeof live) == 0
          && set_int(s, SRTO_PAYLOADSIZE, 1316) == 0
          && set_bool(s, SRTO_SENDER, 1) == 0
          && set_int(s, SRTO_LATENCY, o->latency_ms) == 0
          && set_int(s, SRTO_SNDBUF, o->send_buffer_bytes) == 0
          && set_int(s, SRTO_RCVBUF, o->receive_buffer_bytes) == 0
          && set_int(s, SRTO_UDP_SNDBUF, o->send_buffer_bytes) == 0
          && set_int(s, SRTO_UDP_RCVBUF, o->receive_buffer_bytes) == 0
          && set_int(s, SRTO_CONNTIMEO, o->connect_timeout_ms) == 0
          && set_int(s, SRTO_SNDTIMEO, o->send_timeout_ms) == 0
          && set_bool(s, SRTO_SNDSYN, 1) == 0;
    if (ok && o->stream_id != NULL)
        ok = p_srt_setsockflag(s, SRTO_STREAMID, o->stream_id, (int)strlen(o->stream_id)) == 0;
    if (ok && o->passphrase != NULL)
        ok = p_srt_setsockflag(s, SRTO_PASSPHRASE, o->passphrase, (int)strlen(o->passphrase)) == 0;
    if (!ok) {
        /* libsrt's message names the option, never its value. */
        snprintf(error, error_size, "an SRT option was refused: %s", p_srt_getlasterror_str());
        freeaddrinfo(list);
        p_srt_close(s);
        return -1;
    }
    rc = p_srt_connect(s, list->ai_addr, (int)list->ai_addrlen);
    freeaddrinfo(list);
    if (rc == SRT_ERROR) {
        int reason = p_srt_getrejectreason(s);
        /* A listener that answered and said no (bad passphrase, stream id refused by its access
           control) is a refusal; a timeout or an unreachable port is a network fault. */
        if (reason == SRT_REJ_BADSECRET || reason == SRT_REJ_UNSECURE || reason >= SRT_REJC_PREDEFINED
            || reason == SRT_REJ_PEER) {
            *refused = 1;
        }
        snprintf(error, error_size, "%s (%s)", p_srt_getlasterror_str(), p_srt_rejectreason_str(reason));
        p_srt_close(s);
        return -1;
    }
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
