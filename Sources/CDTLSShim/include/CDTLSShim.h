/* DTLS-SRTP for WHIP through GnuTLS, dlopen()ed on first use (as CGnuTLSShim does for rtmps://):
   a self-signed ECDSA P-256 certificate made at start, a DTLS 1.2 handshake with the use_srtp
   extension (SRTP_AES128_CM_HMAC_SHA1_80) over a UDP socket shared with ICE, the peer's certificate
   fingerprint and the exported SRTP keys. Also HMAC-SHA1 for STUN's MESSAGE-INTEGRITY. */
#ifndef CDTLS_SHIM_H
#define CDTLS_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

int bk_dtls_load(void);
const char *bk_dtls_load_error(void);

/* "AB:CD:..." for SHA-256: 32 bytes as 95 characters + NUL. */
#define BK_DTLS_FINGERPRINT_LEN 96

typedef struct bk_dtls bk_dtls;

/* A datagram that is not DTLS (a STUN request, an early RTCP packet) read while handshaking:
   handed to the caller, which answers or drops it. */
typedef void (*bk_dtls_other_fn)(void *ctx, const uint8_t *data, int len, const struct sockaddr *from,
                                 socklen_t from_len);

/* Generates the key and certificate; writes our fingerprint. NULL with `error` filled on failure. */
bk_dtls *bk_dtls_create(char fingerprint[BK_DTLS_FINGERPRINT_LEN], char *error, size_t error_cap);

/* Runs the handshake as client (`client` 1) or server over `fd`, datagrams to and from `peer`.
   Every wait polls `stop_fd` (a stop's self-pipe, readable once stopped; -1 for none) beside
   `fd`, and is bounded by `deadline_ns` (CLOCK_MONOTONIC nanoseconds; INT64_MAX for none).
   0 on success; -1 with `error` (a failed handshake); -2 when the stop came; -3 when the
   deadline passed. */
int bk_dtls_handshake(bk_dtls *d, int client, int fd, const struct sockaddr *peer, socklen_t peer_len, int stop_fd,
                      int64_t deadline_ns, bk_dtls_other_fn other, void *ctx, char *error, size_t error_cap);

/* The peer certificate's SHA-256 fingerprint ("AB:CD:..."); -1 if it sent none. */
int bk_dtls_peer_fingerprint(bk_dtls *d, char fingerprint[BK_DTLS_FINGERPRINT_LEN]);

/* The SRTP master key + salt for what we send and what we receive (30 bytes each). */
int bk_dtls_srtp_keys(bk_dtls *d, int client, uint8_t local[30], uint8_t remote[30]);

/* A DTLS datagram that arrived after the handshake (the peer resending its last flight because
   ours was lost): GnuTLS answers by resending our last flight. Never blocks. */
void bk_dtls_feed(bk_dtls *d, const uint8_t *data, int len);

/* Sends close_notify (best effort) and frees everything. */
void bk_dtls_destroy(bk_dtls *d);

/* HMAC-SHA1 (STUN MESSAGE-INTEGRITY). 0 on success. */
int bk_dtls_hmac_sha1(const void *key, size_t key_len, const void *data, size_t len, uint8_t digest[20]);

#endif
