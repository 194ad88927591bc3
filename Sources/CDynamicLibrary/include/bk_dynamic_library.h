/* The one dlopen() loader of the optional C libraries (libsrt, GnuTLS, libsrtp2, libpipewire,
   libsystemd, libsoxr): each shim describes its library once (sonames, Debian package, symbol
   table, optional start-up call) and calls bk_dl_load before using it. A library is opened on
   first use, never linked, so a run that does not need it never maps it; it is never closed.

   Every failure is one line in one wording, kept in the library's own bounded buffer:
     "srt:// needs libsrt.so.1.5: not found (install libsrt1.5-openssl)"
     "srt:// needs libsrt.so.1.5: cannot be loaded: <dlerror> (install libsrt1.5-openssl)"
     "WHIP needs libsrtp2.so.1: missing symbol srtp_create"
   and a start-up call's own reason after "<feature> needs <soname>: ". */
#ifndef BK_DYNAMIC_LIBRARY_H
#define BK_DYNAMIC_LIBRARY_H

#include <pthread.h>
#include <stddef.h>

#define BK_DL_ERROR_CAP 320

/* One symbol to resolve: its address is stored into `destination` (the address of a pointer-sized
   function pointer variable). A missing required symbol fails the load; a missing optional one
   leaves NULL there. */
typedef struct {
    const char *name;
    void *destination;
    int required;
} bk_dl_symbol;

#define BK_DL_REQUIRED(symbol, variable) {#symbol, (void *)&(variable), 1}
#define BK_DL_OPTIONAL(symbol, variable) {#symbol, (void *)&(variable), 0}
/* For an X-macro list whose pointers are named p_<symbol>: BK_LIST(BK_DL_REQUIRED_P). */
#define BK_DL_REQUIRED_P(symbol) BK_DL_REQUIRED(symbol, p_##symbol),

/* Runs once, after every required symbol resolved (e.g. srt_startup). 0, or -1 with a reason in
   `error` (without the "<feature> needs <soname>: " prefix, which the loader adds). */
typedef int (*bk_dl_start_fn)(char *error, size_t error_cap);

typedef struct {
    /* Description, set once (BK_DL_LIBRARY or bk_dl_library_init). */
    const char *feature;        /* what needs the library, first words of every error: "srt://" */
    /* NULL-terminated, tried in order. Only names with the ABI the shim was compiled against: an
       unversioned libfoo.so is a -dev symlink that may lead to another major (other struct layouts,
       e.g. SRT_TRACEBSTATS), so the shims list none. */
    const char *const *sonames;
    const char *package;        /* the Debian package(s) that install it, named in the error */
    const bk_dl_symbol *symbols;
    size_t symbol_count;
    bk_dl_start_fn start;       /* or NULL */
    /* State: written under `lock` on the first load only; `state` is read atomically. */
    pthread_mutex_t lock;
    int state;                  /* 0 not tried, 1 loaded, -1 failed (sticky) */
    void *handle;
    const char *soname;         /* the name that opened, or the first one tried */
    char error[BK_DL_ERROR_CAP];
} bk_dl_library;

/* A static description, for a file-scope `static bk_dl_library`. */
#define BK_DL_LIBRARY(feature_, sonames_, package_, symbols_, start_)                                     \
    {.feature = (feature_), .sonames = (sonames_), .package = (package_), .symbols = (symbols_),            \
     .symbol_count = sizeof(symbols_) / sizeof((symbols_)[0]), .start = (start_),                          \
     .lock = PTHREAD_MUTEX_INITIALIZER, .state = 0, .handle = NULL, .soname = NULL, .error = {0}}

/* The same for a library built at run time (tests): `library` must stay at this address, and the
   arrays it points to must outlive it. */
void bk_dl_library_init(bk_dl_library *library, const char *feature, const char *const *sonames, const char *package,
                        const bk_dl_symbol *symbols, size_t symbol_count, bk_dl_start_fn start);

/* Opens the library, resolves its table and runs its start-up call, the first time from whichever
   thread asks first; every later call (from any thread) returns the same result at the cost of an
   atomic load. The handle, or NULL with the reason in bk_dl_error(). Allocates nothing after the
   first call. */
void *bk_dl_load(bk_dl_library *library);

/* 1 when a bk_dl_load has succeeded (never loads). */
int bk_dl_is_loaded(const bk_dl_library *library);

/* Why the load failed; "" when it succeeded or was not tried. */
const char *bk_dl_error(const bk_dl_library *library);

#endif
