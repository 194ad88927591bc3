/* libsrtp2 reached at run time: dlopen()ed when the first WHIP destination opens, so a process
   without one never maps it. Swift calls the bk_srtp_* functions below; libsrtp's types stay here. */
#ifndef CSRTP_SHIM_H
#define CSRTP_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* Bytes srtp_protect / srtp_protect_rtcp may append (auth tag, SRTCP index): a buffer handed to
   bk_srtp_protect* must have this much room past the packet. */
#define BK_SRTP_MAX_TRAILER 32
/* A SRTP_AES128_CM_HMAC_SHA1_80 master key followed by its master salt. */
#define BK_SRTP_KEY_SALT_LEN 30

/* Loads libsrtp2.so.1 and runs srtp_init, once per process (thread-safe). 1 when usable; 0 otherwise
   with a one-line reason in bk_srtp_load_error(). */
int bk_srtp_load(void);
const char *bk_srtp_load_error(void);

typedef struct bk_srtp bk_srtp;

/* One direction of a session with AES_CM_128_HMAC_SHA1_80 for RTP and RTCP: outbound (our key,
   protects) or inbound (the peer's key, unprotects). NULL on failure. */
bk_srtp *bk_srtp_create(const uint8_t key_salt[BK_SRTP_KEY_SALT_LEN], int outbound);
/* In place; *len grows by the trailer. 0 on success, else libsrtp's error status. */
int bk_srtp_protect(bk_srtp *s, void *packet, int *len);
int bk_srtp_protect_rtcp(bk_srtp *s, void *packet, int *len);
/* In place; *len shrinks. 0 when the packet authenticated. */
int bk_srtp_unprotect_rtcp(bk_srtp *s, void *packet, int *len);
void bk_srtp_destroy(bk_srtp *s);

#endif
