#ifndef BK_SDBUS_SHIM_H
#define BK_SDBUS_SHIM_H
/*
 * The part of sd-bus (libsystemd) that PortalBus uses, with libsystemd dlopen()ed on first use
 * instead of linked: a run that never talks to the desktop portal never maps libsystemd and
 * what it pulls in (libgcrypt, libgpg-error, libzstd, liblz4, liblzma, libcap).
 *
 * Each bk_sd_bus_* function has the signature of its sd_bus_* namesake, over opaque types of
 * our own; bk_sd_bus_error has sd_bus_error's layout (checked at compile time in the shim).
 */
#include <stdint.h>

typedef struct bk_sd_bus bk_sd_bus;
typedef struct bk_sd_bus_message bk_sd_bus_message;
typedef struct bk_sd_bus_slot bk_sd_bus_slot;

typedef struct {
    const char *name;
    const char *message;
    int _need_free;
} bk_sd_bus_error;

typedef int (*bk_sd_bus_message_handler_t)(bk_sd_bus_message *m, void *userdata, bk_sd_bus_error *ret_error);

/* Loads libsystemd.so.0 once (thread-safe). NULL when loaded, else a one-line reason. Every
 * function below loads it too; without it they return -ELIBACC (or NULL, or do nothing). */
const char *bk_sd_bus_load(void);

int bk_sd_bus_open_user(bk_sd_bus **ret);
/* A bus client on the given D-Bus address (e.g. "unix:path=/run/user/1000/bus"), not the environment's. */
int bk_sd_bus_open_address(const char *address, bk_sd_bus **ret);
bk_sd_bus *bk_sd_bus_flush_close_unref(bk_sd_bus *bus);
int bk_sd_bus_get_unique_name(bk_sd_bus *bus, const char **unique);
int bk_sd_bus_call(bk_sd_bus *bus, bk_sd_bus_message *m, uint64_t usec, bk_sd_bus_error *ret_error,
                   bk_sd_bus_message **reply);
int bk_sd_bus_process(bk_sd_bus *bus, bk_sd_bus_message **r);
int bk_sd_bus_wait(bk_sd_bus *bus, uint64_t timeout_usec);
int bk_sd_bus_match_signal(bk_sd_bus *bus, bk_sd_bus_slot **ret, const char *sender, const char *path,
                           const char *interface, const char *member, bk_sd_bus_message_handler_t callback,
                           void *userdata);
bk_sd_bus_slot *bk_sd_bus_slot_unref(bk_sd_bus_slot *slot);
void bk_sd_bus_error_free(bk_sd_bus_error *e);

int bk_sd_bus_message_new_method_call(bk_sd_bus *bus, bk_sd_bus_message **m, const char *destination,
                                      const char *path, const char *interface, const char *member);
bk_sd_bus_message *bk_sd_bus_message_ref(bk_sd_bus_message *m);
bk_sd_bus_message *bk_sd_bus_message_unref(bk_sd_bus_message *m);
int bk_sd_bus_message_append_basic(bk_sd_bus_message *m, char type, const void *p);
int bk_sd_bus_message_open_container(bk_sd_bus_message *m, char type, const char *contents);
int bk_sd_bus_message_close_container(bk_sd_bus_message *m);
int bk_sd_bus_message_read_basic(bk_sd_bus_message *m, char type, void *p);
int bk_sd_bus_message_skip(bk_sd_bus_message *m, const char *types);
int bk_sd_bus_message_enter_container(bk_sd_bus_message *m, char type, const char *contents);
int bk_sd_bus_message_exit_container(bk_sd_bus_message *m);
int bk_sd_bus_message_peek_type(bk_sd_bus_message *m, char *type, const char **contents);

#endif
