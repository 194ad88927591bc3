/* Loads libpipewire-0.3 on first use and resolves the functions the shim calls (see pw_dl.h). */
#define BK_PW_DL_IMPL
#include "pw_common.h"
#include "pw_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define BK_PW_LIBRARY "libpipewire-0.3.so.0"

struct bk_pw_api bk_pw_api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[400]; /* empty: loaded and initialised */

static void load(void)
{
    /* RTLD_LOCAL: nothing else resolves against it; the modules libpipewire dlopens itself link
     * it by name, so they bind to this copy. Never closed. */
    void *h = dlopen(BK_PW_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof(load_error),
                 "no PipeWire library: cannot load %s (%s); PipeWire capture needs it "
                 "(Debian: apt install libpipewire-0.3-0 libpipewire-0.3-modules)",
                 BK_PW_LIBRARY, why ? why : "not found");
        return;
    }
#define BK_PW_RESOLVE(name) \
    if ((bk_pw_api.name = (__typeof__(bk_pw_api.name))dlsym(h, #name)) == NULL) { \
        snprintf(load_error, sizeof(load_error), \
                 "no usable PipeWire library: %s has no %s (PipeWire 0.3 is needed)", BK_PW_LIBRARY, #name); \
        return; \
    }
    BK_PW_FUNCTIONS(BK_PW_RESOLVE)
#undef BK_PW_RESOLVE
    bk_pw_api.pw_init(NULL, NULL);
}

int bk_pw_ensure_init(char *err, size_t err_len)
{
    pthread_once(&load_once, load);
    if (load_error[0] == 0) return 0;
    snprintf(err, err_len, "%s", load_error);
    return -1;
}
