/* dlopen()s libsrtp2 on first use (see CSRTPShim.h). */
#include "CSRTPShim.h"
#include "bk_dynamic_library.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <srtp2/srtp.h>

#define BK_SRTP_FUNCTIONS(X)                     \
    X(srtp_init)                                 \
    X(srtp_create)                               \
    X(srtp_dealloc)                              \
    X(srtp_protect)                              \
    X(srtp_protect_rtcp)                         \
    X(srtp_unprotect_rtcp)                       \
    X(srtp_crypto_policy_set_rtp_default)        \
    X(srtp_crypto_policy_set_rtcp_default)

#define BK_POINTER(name) static __typeof__(name) *p_##name;
BK_SRTP_FUNCTIONS(BK_POINTER)
#undef BK_POINTER

/* Never closed: srtp_init keeps global state for the life of the process. */
static int start(char *error, size_t error_cap) {
    if (p_srtp_init() == srtp_err_status_ok) return 0;
    snprintf(error, error_cap, "srtp_init failed");
    return -1;
}

static const bk_dl_symbol symbols[] = {BK_SRTP_FUNCTIONS(BK_DL_REQUIRED_P)};
static const char *const sonames[] = {"libsrtp2.so.1", NULL};
static bk_dl_library library = BK_DL_LIBRARY("WHIP", sonames, "libsrtp2-1", symbols, start);

int bk_srtp_load(void) { return bk_dl_load(&library) != NULL; }

const char *bk_srtp_load_error(void) { return bk_dl_error(&library); }

struct bk_srtp {
    srtp_t session;
};

bk_srtp *bk_srtp_create(const uint8_t key_salt[BK_SRTP_KEY_SALT_LEN], int outbound) {
    if (!bk_srtp_load()) return NULL;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    p_srtp_crypto_policy_set_rtp_default(&policy.rtp);
    p_srtp_crypto_policy_set_rtcp_default(&policy.rtcp);
    policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
    /* libsrtp reads the key during srtp_create only. */
    uint8_t key[BK_SRTP_KEY_SALT_LEN];
    memcpy(key, key_salt, sizeof key);
    policy.key = key;
    /* Room for NACK retransmissions of recent packets (RFC 3711's replay list is 128 by default). */
    policy.window_size = 1024;
    policy.allow_repeat_tx = 1;
    policy.next = NULL;
    bk_srtp *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    if (p_srtp_create(&s->session, &policy) != srtp_err_status_ok) {
        free(s);
        return NULL;
    }
    memset(key, 0, sizeof key);
    return s;
}

int bk_srtp_protect(bk_srtp *s, void *packet, int *len) { return (int)p_srtp_protect(s->session, packet, len); }
int bk_srtp_protect_rtcp(bk_srtp *s, void *packet, int *len) { return (int)p_srtp_protect_rtcp(s->session, packet, len); }
int bk_srtp_unprotect_rtcp(bk_srtp *s, void *packet, int *len) {
    return (int)p_srtp_unprotect_rtcp(s->session, packet, len);
}

void bk_srtp_destroy(bk_srtp *s) {
    if (s == NULL) return;
    p_srtp_dealloc(s->session);
    free(s);
}
