/* sd-bus through a table of function pointers resolved from libsystemd.so.0 on first use. */
#include "CSDBusShim.h"
#include "bk_dynamic_library.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

_Static_assert(sizeof(bk_sd_bus_error) == sizeof(sd_bus_error), "bk_sd_bus_error must match sd_bus_error");
_Static_assert(offsetof(bk_sd_bus_error, name) == offsetof(sd_bus_error, name), "sd_bus_error.name");
_Static_assert(offsetof(bk_sd_bus_error, message) == offsetof(sd_bus_error, message), "sd_bus_error.message");
_Static_assert(offsetof(bk_sd_bus_error, _need_free) == offsetof(sd_bus_error, _need_free), "sd_bus_error._need_free");

#define BK_SD_FUNCTIONS(X) \
    X(sd_bus_open_user) X(sd_bus_new) X(sd_bus_set_address) X(sd_bus_set_bus_client) X(sd_bus_start) \
    X(sd_bus_flush_close_unref) X(sd_bus_get_unique_name) X(sd_bus_call) \
    X(sd_bus_process) X(sd_bus_wait) X(sd_bus_match_signal) X(sd_bus_slot_unref) X(sd_bus_error_free) \
    X(sd_bus_message_new_method_call) X(sd_bus_message_ref) X(sd_bus_message_unref) \
    X(sd_bus_message_append_basic) X(sd_bus_message_open_container) X(sd_bus_message_close_container) \
    X(sd_bus_message_read_basic) X(sd_bus_message_skip) X(sd_bus_message_enter_container) \
    X(sd_bus_message_exit_container) X(sd_bus_message_peek_type)

static struct {
#define BK_SD_MEMBER(name) __typeof__(name) *name;
    BK_SD_FUNCTIONS(BK_SD_MEMBER)
#undef BK_SD_MEMBER
} api;

#define BK_SD_ENTRY(name) BK_DL_REQUIRED(name, api.name),
static const bk_dl_symbol symbols[] = {BK_SD_FUNCTIONS(BK_SD_ENTRY)};
#undef BK_SD_ENTRY
static const char *const sonames[] = {"libsystemd.so.0", NULL};
static bk_dl_library library = BK_DL_LIBRARY("the screen-cast portal", sonames, "libsystemd0", symbols, NULL);

static int ready(void) { return bk_dl_load(&library) != NULL; }

const char *bk_sd_bus_load(void) { return ready() ? NULL : bk_dl_error(&library); }

/* Our opaque types are sd-bus's own objects under another name. */
#define BUS(b) ((sd_bus *)(void *)(b))
#define MSG(m) ((sd_bus_message *)(void *)(m))
#define MSGP(m) ((sd_bus_message **)(void *)(m))
#define ERR(e) ((sd_bus_error *)(void *)(e))

int bk_sd_bus_open_user(bk_sd_bus **ret)
{
    return ready() ? api.sd_bus_open_user((sd_bus **)(void *)ret) : -ELIBACC;
}

int bk_sd_bus_open_address(const char *address, bk_sd_bus **ret)
{
    if (!ready()) return -ELIBACC;
    sd_bus *bus = NULL;
    int r = api.sd_bus_new(&bus);
    if (r < 0) return r;
    if ((r = api.sd_bus_set_address(bus, address)) < 0 || (r = api.sd_bus_set_bus_client(bus, 1)) < 0 ||
        (r = api.sd_bus_start(bus)) < 0) {
        api.sd_bus_flush_close_unref(bus);
        return r;
    }
    *ret = (bk_sd_bus *)(void *)bus;
    return 0;
}

bk_sd_bus *bk_sd_bus_flush_close_unref(bk_sd_bus *bus)
{
    return ready() ? (bk_sd_bus *)(void *)api.sd_bus_flush_close_unref(BUS(bus)) : NULL;
}

int bk_sd_bus_get_unique_name(bk_sd_bus *bus, const char **unique)
{
    return ready() ? api.sd_bus_get_unique_name(BUS(bus), unique) : -ELIBACC;
}

int bk_sd_bus_call(bk_sd_bus *bus, bk_sd_bus_message *m, uint64_t usec, bk_sd_bus_error *ret_error,
                   bk_sd_bus_message **reply)
{
    return ready() ? api.sd_bus_call(BUS(bus), MSG(m), usec, ERR(ret_error), MSGP(reply)) : -ELIBACC;
}

int bk_sd_bus_process(bk_sd_bus *bus, bk_sd_bus_message **r)
{
    return ready() ? api.sd_bus_process(BUS(bus), MSGP(r)) : -ELIBACC;
}

int bk_sd_bus_wait(bk_sd_bus *bus, uint64_t timeout_usec)
{
    return ready() ? api.sd_bus_wait(BUS(bus), timeout_usec) : -ELIBACC;
}

int bk_sd_bus_match_signal(bk_sd_bus *bus, bk_sd_bus_slot **ret, const char *sender, const char *path,
                           const char *interface, const char *member, bk_sd_bus_message_handler_t callback,
                           void *userdata)
{
    /* The handler's parameters are the same pointers under our names. */
    return ready() ? api.sd_bus_match_signal(BUS(bus), (sd_bus_slot **)(void *)ret, sender, path, interface, member,
                                             (sd_bus_message_handler_t)(void *)callback, userdata)
                   : -ELIBACC;
}

bk_sd_bus_slot *bk_sd_bus_slot_unref(bk_sd_bus_slot *slot)
{
    return ready() ? (bk_sd_bus_slot *)(void *)api.sd_bus_slot_unref((sd_bus_slot *)(void *)slot) : NULL;
}

void bk_sd_bus_error_free(bk_sd_bus_error *e)
{
    if (ready()) api.sd_bus_error_free(ERR(e));
}

int bk_sd_bus_message_new_method_call(bk_sd_bus *bus, bk_sd_bus_message **m, const char *destination,
                                      const char *path, const char *interface, const char *member)
{
    return ready() ? api.sd_bus_message_new_method_call(BUS(bus), MSGP(m), destination, path, interface, member)
                   : -ELIBACC;
}

bk_sd_bus_message *bk_sd_bus_message_ref(bk_sd_bus_message *m)
{
    return ready() ? (bk_sd_bus_message *)(void *)api.sd_bus_message_ref(MSG(m)) : NULL;
}

bk_sd_bus_message *bk_sd_bus_message_unref(bk_sd_bus_message *m)
{
    return ready() ? (bk_sd_bus_message *)(void *)api.sd_bus_message_unref(MSG(m)) : NULL;
}

int bk_sd_bus_message_append_basic(bk_sd_bus_message *m, char type, const void *p)
{
    return ready() ? api.sd_bus_message_append_basic(MSG(m), type, p) : -ELIBACC;
}

int bk_sd_bus_message_open_container(bk_sd_bus_message *m, char type, const char *contents)
{
    return ready() ? api.sd_bus_message_open_container(MSG(m), type, contents) : -ELIBACC;
}

int bk_sd_bus_message_close_container(bk_sd_bus_message *m)
{
    return ready() ? api.sd_bus_message_close_container(MSG(m)) : -ELIBACC;
}

int bk_sd_bus_message_read_basic(bk_sd_bus_message *m, char type, void *p)
{
    return ready() ? api.sd_bus_message_read_basic(MSG(m), type, p) : -ELIBACC;
}

int bk_sd_bus_message_skip(bk_sd_bus_message *m, const char *types)
{
    return ready() ? api.sd_bus_message_skip(MSG(m), types) : -ELIBACC;
}

int bk_sd_bus_message_enter_container(bk_sd_bus_message *m, char type, const char *contents)
{
    return ready() ? api.sd_bus_message_enter_container(MSG(m), type, contents) : -ELIBACC;
}

int bk_sd_bus_message_exit_container(bk_sd_bus_message *m)
{
    return ready() ? api.sd_bus_message_exit_container(MSG(m)) : -ELIBACC;
}

int bk_sd_bus_message_peek_type(bk_sd_bus_message *m, char *type, const char **contents)
{
    return ready() ? api.sd_bus_message_peek_type(MSG(m), type, contents) : -ELIBACC;
}
