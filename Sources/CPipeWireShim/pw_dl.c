/* Loads libpipewire-0.3 on first use and resolves the functions the shim calls (see pw_dl.h). */
#define BK_PW_DL_IMPL
#include "pw_common.h"
#include "pw_dl.h"
#include "bk_dynamic_library.h"

#include <stdio.h>

struct bk_pw_api bk_pw_api;

static int start(char *error, size_t error_cap)
{
    (void)error;
    (void)error_cap;
    bk_pw_api.pw_init(NULL, NULL);
    return 0;
}

#define BK_PW_ENTRY(name) BK_DL_REQUIRED(name, bk_pw_api.name),
static const bk_dl_symbol symbols[] = {BK_PW_FUNCTIONS(BK_PW_ENTRY)};
#undef BK_PW_ENTRY
/* The modules libpipewire dlopens itself link it by name, so they bind to this copy. */
static const char *const sonames[] = {"libpipewire-0.3.so.0", NULL};
static bk_dl_library library = BK_DL_LIBRARY("capture", sonames, "libpipewire-0.3-0 libpipewire-0.3-modules",
                                             symbols, start);

int bk_pw_ensure_init(char *err, size_t err_len)
{
    if (bk_dl_load(&library) != NULL) return 0;
    /* "no PipeWire" first: PipeWireStream reads it as "unavailable", not an I/O failure. */
    snprintf(err, err_len, "no PipeWire library: %s", bk_dl_error(&library));
    return -1;
}
