/* dlopen()s libsrtp2 on first use (see CSRTPShim.h). */
#include "CSRTPShim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <srtp2/srtp.h>

#define BK_SRTP_SONAME "libsrtp2.so.1"

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

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

static void load(void) {
    /* Never dlclose()d: srtp_init keeps global state for the life of the process. */
    void *lib = dlopen(BK_SRTP_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error,
                 "WHIP needs libsrtp2 (%s), which could not be loaded: %s; install libsrtp2-1",
                 BK_SRTP_SONAME, why ? why : "unknown error");
        return;
    }
#define BK_RESOLVE(name)                                                                           \
    p_##name = (__typeof__(name) *)dlsym(lib, #name);                                               \
    if (p_##name == NULL) {                                                                        \
        snprintf(load_error, sizeof load_error, "WHIP needs libsrtp2 2.x: %s lacks %s", BK_SRTP_SONAME, #name); \
        return;                                                                                    \
    }
    BK_SRTP_FUNCTIONS(BK_RESOLVE)
#undef BK_RESOLVE
    if (p_srtp_init() != srtp_err_status_ok) {
        snprintf(load_error, sizeof load_error, "WHIP: srtp_init failed");
        return;
    }
    loaded = 1;
}

int bk_srtp_load(void) {
    pthread_once(&load_once, load);
    return loaded;
}

const char *bk_srtp_load_error(void) { return loaded ? "" : load_error; }

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
