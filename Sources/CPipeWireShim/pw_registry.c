/* Lists the graph's nodes through the registry, with one roundtrip on a private main loop. */
#include "CPipeWireShim.h"
#include "pw_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <spa/utils/result.h>
#include "pw_dl.h" /* last: routes pw_* calls through the loaded library */

struct list_state {
    struct pw_main_loop *loop;
    struct pw_core *core;
    bk_pw_node_cb cb;
    void *ctx;
    int pending;
    int error;
};

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
                      const struct spa_dict *props)
{
    struct list_state *s = data;
    (void)permissions; (void)version;
    if (strcmp(type, PW_TYPE_INTERFACE_Node) != 0 || props == NULL) return;
    bk_pw_node_info info = {
        .id = id,
        .name = spa_dict_lookup(props, PW_KEY_NODE_NAME),
        .media_class = spa_dict_lookup(props, PW_KEY_MEDIA_CLASS),
        .description = spa_dict_lookup(props, PW_KEY_NODE_DESCRIPTION),
    };
    const char *serial = spa_dict_lookup(props, PW_KEY_OBJECT_SERIAL);
    info.serial = serial ? strtoull(serial, NULL, 10) : 0;
    s->cb(s->ctx, &info);
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_global,
};

static void on_done(void *data, uint32_t id, int seq)
{
    struct list_state *s = data;
    if (id == PW_ID_CORE && seq == s->pending) pw_main_loop_quit(s->loop);
}

static void on_error(void *data, uint32_t id, int seq, int res, const char *message)
{
    struct list_state *s = data;
    (void)seq; (void)message;
    if (id == PW_ID_CORE) { s->error = res; pw_main_loop_quit(s->loop); }
}

/* The whole listing's deadline: a daemon that accepts the connection and never answers the sync
 * (wedged, or stopped with SIGSTOP) must not hang --list-sources or a source's start. */
#define BK_PW_LIST_DEADLINE_SECONDS 5

static void on_deadline(void *data, uint64_t expirations)
{
    struct list_state *s = data;
    (void)expirations;
    s->error = -ETIMEDOUT;
    pw_main_loop_quit(s->loop);
}

static const struct pw_core_events list_core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_done,
    .error = on_error,
};

int bk_pw_list_nodes(int remote_fd, bk_pw_node_cb cb, void *ctx, char *err, size_t err_len)
{
    if (bk_pw_ensure_init(err, err_len) < 0) return -ENOENT;
    struct list_state s = { .cb = cb, .ctx = ctx };
    int result = 0;
    s.loop = pw_main_loop_new(NULL);
    if (s.loop == NULL) { snprintf(err, err_len, "PipeWire: cannot create a loop (%s)", strerror(errno)); return -errno; }
    /* No D-Bus support plugin: listing nodes needs none (it would load libdbus-1 for good). */
    struct pw_context *context = pw_context_new(pw_main_loop_get_loop(s.loop),
                                                pw_properties_new("support.dbus", "false", NULL), 0);
    if (context == NULL) {
        result = -errno;
        snprintf(err, err_len, "PipeWire: cannot create a context (%s)", strerror(errno));
        pw_main_loop_destroy(s.loop);
        return result;
    }
    s.core = remote_fd >= 0 ? pw_context_connect_fd(context, remote_fd, NULL, 0) : pw_context_connect(context, NULL, 0);
    if (s.core == NULL) {
        result = -errno;
        bk_pw_describe_connect_error(errno, err, err_len);
        pw_context_destroy(context);
        pw_main_loop_destroy(s.loop);
        return result;
    }
    struct spa_hook core_listener, registry_listener;
    spa_zero(core_listener);
    spa_zero(registry_listener);
    pw_core_add_listener(s.core, &core_listener, &list_core_events, &s);
    struct pw_registry *registry = pw_core_get_registry(s.core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(registry, &registry_listener, &registry_events, &s);
    s.pending = pw_core_sync(s.core, PW_ID_CORE, 0);
    struct pw_loop *loop = pw_main_loop_get_loop(s.loop);
    struct spa_source *deadline = pw_loop_add_timer(loop, on_deadline, &s);
    struct timespec after = { .tv_sec = BK_PW_LIST_DEADLINE_SECONDS };
    if (deadline != NULL) pw_loop_update_timer(loop, deadline, &after, NULL, false);
    pw_main_loop_run(s.loop);
    if (deadline != NULL) pw_loop_destroy_source(loop, deadline);
    if (s.error == -ETIMEDOUT) {
        result = s.error;
        snprintf(err, err_len, "PipeWire: the daemon did not answer a node listing within %d s",
                 BK_PW_LIST_DEADLINE_SECONDS);
    } else if (s.error < 0) {
        result = s.error;
        snprintf(err, err_len, "PipeWire: listing nodes failed (%s)", spa_strerror(s.error));
    }
    spa_hook_remove(&registry_listener);
    spa_hook_remove(&core_listener);
    pw_proxy_destroy((struct pw_proxy *)registry);
    pw_core_disconnect(s.core);
    pw_context_destroy(context);
    pw_main_loop_destroy(s.loop);
    return result;
}
