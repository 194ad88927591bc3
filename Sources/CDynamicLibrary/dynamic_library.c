/* The one dlopen() loader (see bk_dynamic_library.h). */
#include "bk_dynamic_library.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

enum { NOT_TRIED = 0, LOADED = 1, FAILED = -1 };

void bk_dl_library_init(bk_dl_library *library, const char *feature, const char *const *sonames, const char *package,
                        const bk_dl_symbol *symbols, size_t symbol_count, bk_dl_start_fn start)
{
    memset(library, 0, sizeof *library);
    library->feature = feature;
    library->sonames = sonames;
    library->package = package;
    library->symbols = symbols;
    library->symbol_count = symbol_count;
    library->start = start;
    pthread_mutex_init(&library->lock, NULL);
}

/* dlerror()'s text for a file that is not there, as opposed to one that is there and fails
   (a missing dependency, a wrong architecture): only the second is worth quoting. */
static int is_absent(const char *why)
{
    return why == NULL || strstr(why, "No such file or directory") != NULL;
}

/* Runs under the lock, once. Returns LOADED or FAILED with `error` filled. */
static int open_and_resolve(bk_dl_library *l)
{
    const char *first = l->sonames != NULL ? l->sonames[0] : NULL;
    l->soname = first != NULL ? first : "(no soname)";
    /* The first failure that is not a plain absence: quoted if no name opens. */
    char why[BK_DL_ERROR_CAP / 2] = {0};
    void *handle = NULL;
    for (size_t i = 0; first != NULL && l->sonames[i] != NULL && handle == NULL; i++) {
        /* RTLD_LOCAL: the library's symbols stay out of the global namespace. Never closed: these
           libraries keep global state (threads, atexit handlers) for the life of the process. */
        handle = dlopen(l->sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (handle != NULL) {
            l->soname = l->sonames[i];
        } else {
            const char *e = dlerror();
            if (why[0] == 0 && !is_absent(e)) snprintf(why, sizeof why, "%s", e);
        }
    }
    if (handle == NULL) {
        if (why[0] == 0)
            snprintf(l->error, sizeof l->error, "%s needs %s: not found (install %s)", l->feature, l->soname,
                     l->package);
        else
            snprintf(l->error, sizeof l->error, "%s needs %s: cannot be loaded: %s (install %s)", l->feature,
                     l->soname, why, l->package);
        return FAILED;
    }
    for (size_t i = 0; i < l->symbol_count; i++) {
        const bk_dl_symbol *s = &l->symbols[i];
        void *address = dlsym(handle, s->name);
        /* memcpy: the destination is a function pointer variable, not a void *. */
        memcpy(s->destination, &address, sizeof address);
        if (address == NULL && s->required) {
            snprintf(l->error, sizeof l->error, "%s needs %s: missing symbol %s", l->feature, l->soname, s->name);
            return FAILED;
        }
    }
    if (l->start != NULL) {
        char reason[BK_DL_ERROR_CAP / 2] = {0};
        if (l->start(reason, sizeof reason) != 0) {
            snprintf(l->error, sizeof l->error, "%s needs %s: %s", l->feature, l->soname,
                     reason[0] != 0 ? reason : "its start-up call failed");
            return FAILED;
        }
    }
    l->handle = handle;
    return LOADED;
}

void *bk_dl_load(bk_dl_library *library)
{
    int state = __atomic_load_n(&library->state, __ATOMIC_ACQUIRE);
    if (state == NOT_TRIED) {
        pthread_mutex_lock(&library->lock);
        state = __atomic_load_n(&library->state, __ATOMIC_ACQUIRE);
        if (state == NOT_TRIED) {
            state = open_and_resolve(library);
            /* Release: the table, the handle and the error are complete before anyone sees the state. */
            __atomic_store_n(&library->state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&library->lock);
    }
    return state == LOADED ? library->handle : NULL;
}

int bk_dl_is_loaded(const bk_dl_library *library)
{
    return __atomic_load_n(&library->state, __ATOMIC_ACQUIRE) == LOADED;
}

const char *bk_dl_error(const bk_dl_library *library)
{
    return __atomic_load_n(&library->state, __ATOMIC_ACQUIRE) == FAILED ? library->error : "";
}
