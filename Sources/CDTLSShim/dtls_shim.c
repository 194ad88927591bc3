/* dlopen()s GnuTLS for DTLS-SRTP (see CDTLSShim.h). */
#include "CDTLSShim.h"
#include "bk_dynamic_library.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/dtls.h>
#include <gnutls/x509.h>

#define BK_DTLS_FUNCTIONS(X)                         \
    X(gnutls_x509_privkey_init)                      \
    X(gnutls_x509_privkey_deinit)                    \
    X(gnutls_x509_privkey_generate)                  \
    X(gnutls_x509_crt_init)                          \
    X(gnutls_x509_crt_deinit)                        \
    X(gnutls_x509_crt_set_version)                   \
    X(gnutls_x509_crt_set_serial)                    \
    X(gnutls_x509_crt_set_activation_time)           \
    X(gnutls_x509_crt_set_expiration_time)           \
    X(gnutls_x509_crt_set_dn)                        \
    X(gnutls_x509_crt_set_issuer_dn)                 \
    X(gnutls_x509_crt_set_key)                       \
    X(gnutls_x509_crt_sign2)                         \
    X(gnutls_x509_crt_export2)                       \
    X(gnutls_free)                                   \
    X(gnutls_fingerprint)                            \
    X(gnutls_certificate_allocate_credentials)       \
    X(gnutls_certificate_free_credentials)           \
    X(gnutls_certificate_set_x509_key)               \
    X(gnutls_certificate_server_set_request)         \
    X(gnutls_certificate_get_peers)                  \
    X(gnutls_init)                                   \
    X(gnutls_deinit)                                 \
    X(gnutls_set_default_priority)                   \
    X(gnutls_credentials_set)                        \
    X(gnutls_srtp_set_profile)                       \
    X(gnutls_srtp_get_keys)                          \
    X(gnutls_transport_set_ptr)                      \
    X(gnutls_transport_set_push_function)            \
    X(gnutls_transport_set_pull_function)            \
    X(gnutls_transport_set_pull_timeout_function)    \
    X(gnutls_dtls_set_mtu)                           \
    X(gnutls_dtls_set_timeouts)                      \
    X(gnutls_handshake)                              \
    X(gnutls_error_is_fatal)                         \
    X(gnutls_strerror)                               \
    X(gnutls_bye)                                    \
    X(gnutls_record_recv)                            \
    X(gnutls_hmac_fast)

#define BK_POINTER(name) static __typeof__(name) *p_##name;
BK_DTLS_FUNCTIONS(BK_POINTER)
#undef BK_POINTER

static const bk_dl_symbol symbols[] = {BK_DTLS_FUNCTIONS(BK_DL_REQUIRED_P)};
static const char *const sonames[] = {"libgnutls.so.30", NULL};
static bk_dl_library library = BK_DL_LIBRARY("WHIP", sonames, "libgnutls30", symbols, NULL);

int bk_dtls_load(void) { return bk_dl_load(&library) != NULL; }

const char *bk_dtls_load_error(void) { return bk_dl_error(&library); }

struct bk_dtls {
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    gnutls_certificate_credentials_t cred;
    gnutls_session_t session;
    int fd;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    bk_dtls_other_fn other;
    void *ctx;
    /* The DTLS datagram read by the pull-timeout function, handed over by the pull function. */
    uint8_t pending[2048];
    int pending_len;
    /* After the handshake: the pull functions only hand over what bk_dtls_feed was given. */
    int feeding;
    /* While handshaking: the stop's self-pipe (-1: none), polled beside `fd`, and the operation's
       deadline (CLOCK_MONOTONIC ns; INT64_MAX: none). Either ends the handshake at once. */
    int stop_fd;
    int64_t deadline_ns;
    int stopped;
    int expired;
};

static void fingerprint_text(const uint8_t *digest, size_t n, char out[BK_DTLS_FINGERPRINT_LEN]) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 3 < BK_DTLS_FINGERPRINT_LEN; i++) {
        if (i > 0) out[o++] = ':';
        out[o++] = hex[digest[i] >> 4];
        out[o++] = hex[digest[i] & 15];
    }
    out[o] = 0;
}

static int der_fingerprint(const gnutls_datum_t *der, char out[BK_DTLS_FINGERPRINT_LEN]) {
    uint8_t digest[32];
    size_t size = sizeof digest;
    if (p_gnutls_fingerprint(GNUTLS_DIG_SHA256, der, digest, &size) < 0) return -1;
    fingerprint_text(digest, size, out);
    return 0;
}

bk_dtls *bk_dtls_create(char fingerprint[BK_DTLS_FINGERPRINT_LEN], char *error, size_t error_cap) {
    if (!bk_dtls_load()) {
        snprintf(error, error_cap, "%s", bk_dtls_load_error());
        return NULL;
    }
    bk_dtls *d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(error, error_cap, "out of memory");
        return NULL;
    }
    d->fd = -1;
    d->stop_fd = -1;
    d->deadline_ns = INT64_MAX;
    int rc;
    const char *step = "key";
    if ((rc = p_gnutls_x509_privkey_init(&d->key)) < 0) goto fail;
    if ((rc = p_gnutls_x509_privkey_generate(d->key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
        goto fail;
    step = "certificate";
    if ((rc = p_gnutls_x509_crt_init(&d->crt)) < 0) goto fail;
    time_t now = time(NULL);
    uint8_t serial[8];
    for (int i = 0; i < 8; i++) serial[i] = (uint8_t)(now >> (i * 5)) ^ (uint8_t)((uintptr_t)d >> (i * 8));
    serial[0] &= 0x7f;
    const char *err = NULL;
    if ((rc = p_gnutls_x509_crt_set_version(d->crt, 3)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_serial(d->crt, serial, sizeof serial)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_activation_time(d->crt, now - 86400)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_expiration_time(d->crt, now + 30 * 86400)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_dn(d->crt, "CN=broadcast", &err)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_issuer_dn(d->crt, "CN=broadcast", &err)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_set_key(d->crt, d->key)) < 0) goto fail;
    if ((rc = p_gnutls_x509_crt_sign2(d->crt, d->crt, d->key, GNUTLS_DIG_SHA256, 0)) < 0) goto fail;
    gnutls_datum_t der = {0};
    if ((rc = p_gnutls_x509_crt_export2(d->crt, GNUTLS_X509_FMT_DER, &der)) < 0) goto fail;
    rc = der_fingerprint(&der, fingerprint);
    (*p_gnutls_free)(der.data);
    if (rc < 0) goto fail;
    step = "credentials";
    if ((rc = p_gnutls_certificate_allocate_credentials(&d->cred)) < 0) goto fail;
    if ((rc = p_gnutls_certificate_set_x509_key(d->cred, &d->crt, 1, d->key)) < 0) goto fail;
    return d;
fail:
    snprintf(error, error_cap, "DTLS %s: %s", step, rc < 0 ? p_gnutls_strerror(rc) : "failed");
    bk_dtls_destroy(d);
    return NULL;
}

static ssize_t push(gnutls_transport_ptr_t ptr, const void *data, size_t size) {
    bk_dtls *d = ptr;
    ssize_t n = sendto(d->fd, data, size, MSG_NOSIGNAL, (const struct sockaddr *)&d->peer, d->peer_len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return (ssize_t)size; /* a datagram lost: DTLS resends */
    return n;
}

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Milliseconds until `deadline_ns`, rounded up, clamped to [0, cap]. */
static int ms_until(int64_t deadline_ns, int cap) {
    if (deadline_ns == INT64_MAX) return cap;
    int64_t left = deadline_ns - monotonic_ns();
    if (left <= 0) return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms < cap ? (int)ms : cap;
}

/* Waits up to `ms` for a DTLS datagram, handing anything else (STUN, RTCP) to the caller. While
   handshaking, the stop and the operation's deadline end the wait at once: -1, which GnuTLS
   takes as a fatal pull error (the caller tells the two apart by `stopped` / `expired`). */
static int pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms) {
    bk_dtls *d = ptr;
    if (d->pending_len > 0) return 1;
    if (d->feeding) return 0;
    int cap = ms > 60000 ? 60000 : (int)ms; /* GnuTLS may ask for an indefinite wait */
    int64_t until = monotonic_ns() + (int64_t)cap * 1000000;
    for (;;) {
        int left = ms_until(until, cap);
        int op_left = ms_until(d->deadline_ns, left);
        struct pollfd p[2] = {{.fd = d->fd, .events = POLLIN}, {.fd = d->stop_fd, .events = POLLIN}};
        int r = poll(p, d->stop_fd >= 0 ? 2 : 1, op_left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return r;
        if (d->stop_fd >= 0 && (p[1].revents & POLLIN)) {
            d->stopped = 1;
            errno = EINTR;
            return -1;
        }
        if (r == 0 || !(p[0].revents & (POLLIN | POLLERR | POLLHUP))) {
            if (d->deadline_ns != INT64_MAX && monotonic_ns() >= d->deadline_ns) {
                d->expired = 1;
                errno = ETIMEDOUT;
                return -1;
            }
            if (r == 0 && left == 0) return 0;
            continue;
        }
        struct sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(d->fd, d->pending, sizeof d->pending, MSG_DONTWAIT, (struct sockaddr *)&from, &from_len);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n < 0 && errno == ECONNREFUSED) continue;
            return -1;
        }
        /* RFC 7983: 20..63 is DTLS. */
        if (d->pending[0] >= 20 && d->pending[0] <= 63) {
            d->pending_len = (int)n;
            return 1;
        }
        if (d->other) d->other(d->ctx, d->pending, (int)n, (const struct sockaddr *)&from, from_len);
        if (left == 0) return 0;
    }
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *data, size_t size) {
    bk_dtls *d = ptr;
    if (d->pending_len == 0) {
        int r = pull_timeout(ptr, 0);
        if (r <= 0) {
            errno = EAGAIN;
            return -1;
        }
    }
    size_t n = (size_t)d->pending_len < size ? (size_t)d->pending_len : size;
    memcpy(data, d->pending, n);
    d->pending_len = 0;
    return (ssize_t)n;
}

int bk_dtls_handshake(bk_dtls *d, int client, int fd, const struct sockaddr *peer, socklen_t peer_len, int stop_fd,
                      int64_t deadline_ns, bk_dtls_other_fn other, void *ctx, char *error, size_t error_cap) {
    if (d->session) {
        p_gnutls_deinit(d->session);
        d->session = NULL;
    }
    d->fd = fd;
    memcpy(&d->peer, peer, peer_len);
    d->peer_len = peer_len;
    d->other = other;
    d->ctx = ctx;
    d->pending_len = 0;
    d->feeding = 0;
    d->stop_fd = stop_fd;
    d->deadline_ns = deadline_ns;
    d->stopped = 0;
    d->expired = 0;
    int rc;
    const char *step = "init";
    if ((rc = p_gnutls_init(&d->session, (client ? GNUTLS_CLIENT : GNUTLS_SERVER) | GNUTLS_DATAGRAM | GNUTLS_NO_SIGNAL)) < 0)
        goto fail;
    if ((rc = p_gnutls_set_default_priority(d->session)) < 0) goto fail;
    if ((rc = p_gnutls_credentials_set(d->session, GNUTLS_CRD_CERTIFICATE, d->cred)) < 0) goto fail;
    step = "use_srtp";
    if ((rc = p_gnutls_srtp_set_profile(d->session, GNUTLS_SRTP_AES128_CM_HMAC_SHA1_80)) < 0) goto fail;
    /* The peer is authenticated by its fingerprint in the SDP, so its certificate is required. */
    if (!client) p_gnutls_certificate_server_set_request(d->session, GNUTLS_CERT_REQUIRE);
    p_gnutls_transport_set_ptr(d->session, d);
    p_gnutls_transport_set_push_function(d->session, push);
    p_gnutls_transport_set_pull_function(d->session, pull);
    p_gnutls_transport_set_pull_timeout_function(d->session, pull_timeout);
    p_gnutls_dtls_set_mtu(d->session, 1200);
    /* GnuTLS's own total bound: what is left of the operation (its deadline is also checked
       at every wait, so this only backs it up). */
    int total_ms = ms_until(deadline_ns, 60000);
    p_gnutls_dtls_set_timeouts(d->session, 500, (unsigned)(total_ms > 0 ? total_ms : 1));
    step = "handshake";
    do {
        if (d->stop_fd >= 0) {
            struct pollfd p = {.fd = d->stop_fd, .events = POLLIN};
            if (poll(&p, 1, 0) > 0) d->stopped = 1;
        }
        if (d->stopped) break;
        rc = p_gnutls_handshake(d->session);
    } while (rc < 0 && !p_gnutls_error_is_fatal(rc) && !d->stopped && !d->expired);
    d->stop_fd = -1;
    d->deadline_ns = INT64_MAX;
    if (d->stopped) {
        snprintf(error, error_cap, "DTLS handshake: stopped");
        return -2;
    }
    if (d->expired || rc == GNUTLS_E_TIMEDOUT) {
        snprintf(error, error_cap, "DTLS handshake not done within the connect deadline");
        return -3;
    }
    if (rc < 0) goto fail;
    return 0;
fail:
    snprintf(error, error_cap, "DTLS %s: %s", step, p_gnutls_strerror(rc));
    return -1;
}

void bk_dtls_feed(bk_dtls *d, const uint8_t *data, int len) {
    if (d->session == NULL || len <= 0 || (size_t)len > sizeof d->pending) return;
    memcpy(d->pending, data, (size_t)len);
    d->pending_len = len;
    d->feeding = 1;
    uint8_t sink[256];
    /* Processes the record: a resent handshake flight makes GnuTLS resend ours; application data
       (none is expected on WebRTC's DTLS without data channels) is discarded. */
    (void)p_gnutls_record_recv(d->session, sink, sizeof sink);
    d->pending_len = 0;
}

int bk_dtls_peer_fingerprint(bk_dtls *d, char fingerprint[BK_DTLS_FINGERPRINT_LEN]) {
    if (d->session == NULL) return -1;
    unsigned int n = 0;
    const gnutls_datum_t *peers = p_gnutls_certificate_get_peers(d->session, &n);
    if (peers == NULL || n == 0) return -1;
    return der_fingerprint(&peers[0], fingerprint);
}

int bk_dtls_srtp_keys(bk_dtls *d, int client, uint8_t local[30], uint8_t remote[30]) {
    uint8_t material[64];
    gnutls_datum_t ck, cs, sk, ss;
    if (d->session == NULL) return -1;
    if (p_gnutls_srtp_get_keys(d->session, material, sizeof material, &ck, &cs, &sk, &ss) < 0) return -1;
    if (ck.size != 16 || cs.size != 14 || sk.size != 16 || ss.size != 14) return -1;
    const gnutls_datum_t *lk = client ? &ck : &sk, *ls = client ? &cs : &ss;
    const gnutls_datum_t *rk = client ? &sk : &ck, *rs = client ? &ss : &cs;
    memcpy(local, lk->data, 16);
    memcpy(local + 16, ls->data, 14);
    memcpy(remote, rk->data, 16);
    memcpy(remote + 16, rs->data, 14);
    memset(material, 0, sizeof material);
    return 0;
}

void bk_dtls_destroy(bk_dtls *d) {
    if (d == NULL) return;
    if (d->session) {
        /* close_notify, not waiting for the peer's. */
        p_gnutls_bye(d->session, GNUTLS_SHUT_WR);
        p_gnutls_deinit(d->session);
    }
    if (d->cred) p_gnutls_certificate_free_credentials(d->cred);
    if (d->crt) p_gnutls_x509_crt_deinit(d->crt);
    if (d->key) p_gnutls_x509_privkey_deinit(d->key);
    free(d);
}

int bk_dtls_hmac_sha1(const void *key, size_t key_len, const void *data, size_t len, uint8_t digest[20]) {
    if (!bk_dtls_load()) return -1;
    return p_gnutls_hmac_fast(GNUTLS_MAC_SHA1, key, key_len, data, len, digest) < 0 ? -1 : 0;
}
