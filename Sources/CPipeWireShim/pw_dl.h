#ifndef BK_PW_DL_H
#define BK_PW_DL_H
/*
 * libpipewire-0.3 is not linked: it is dlopen()ed on first use (bk_pw_ensure_init), so a run
 * that captures nothing never maps it (nor what it pulls in). The shim's C files call PipeWire
 * through the table below; the macros at the end of this header turn each pw_* call into a call
 * through its pointer.
 *
 * Include this header LAST in a .c file, after every PipeWire/SPA header: the macros would
 * otherwise rewrite the headers' own declarations. The list is what `nm -u` of the compiled
 * objects names; a new pw_* call that is not listed here fails at link time (undefined symbol),
 * so it cannot slip through.
 */
#include <pipewire/pipewire.h>
#include <pipewire/impl-module.h>

#define BK_PW_FUNCTIONS(X) \
    X(pw_init) \
    X(pw_properties_new) X(pw_properties_set) \
    X(pw_main_loop_new) X(pw_main_loop_get_loop) X(pw_main_loop_run) X(pw_main_loop_quit) X(pw_main_loop_destroy) \
    X(pw_thread_loop_new) X(pw_thread_loop_get_loop) X(pw_thread_loop_start) X(pw_thread_loop_stop) \
    X(pw_thread_loop_lock) X(pw_thread_loop_unlock) X(pw_thread_loop_destroy) \
    X(pw_context_new) X(pw_context_add_spa_lib) X(pw_context_load_module) X(pw_context_connect) \
    X(pw_context_connect_fd) X(pw_context_destroy) \
    X(pw_core_disconnect) X(pw_proxy_destroy) \
    X(pw_stream_new) X(pw_stream_add_listener) X(pw_stream_connect) X(pw_stream_update_params) \
    X(pw_stream_dequeue_buffer) X(pw_stream_queue_buffer) X(pw_stream_get_time_n) \
    X(pw_stream_disconnect) X(pw_stream_destroy)

struct bk_pw_api {
#define BK_PW_MEMBER(name) __typeof__(name) *name;
    BK_PW_FUNCTIONS(BK_PW_MEMBER)
#undef BK_PW_MEMBER
};

/* Filled once by bk_pw_ensure_init; read-only afterwards. */
extern struct bk_pw_api bk_pw_api;

#ifndef BK_PW_DL_IMPL
#define pw_init                   (bk_pw_api.pw_init)
#define pw_properties_new         (bk_pw_api.pw_properties_new)
#define pw_properties_set         (bk_pw_api.pw_properties_set)
#define pw_main_loop_new          (bk_pw_api.pw_main_loop_new)
#define pw_main_loop_get_loop     (bk_pw_api.pw_main_loop_get_loop)
#define pw_main_loop_run          (bk_pw_api.pw_main_loop_run)
#define pw_main_loop_quit         (bk_pw_api.pw_main_loop_quit)
#define pw_main_loop_destroy      (bk_pw_api.pw_main_loop_destroy)
#define pw_thread_loop_new        (bk_pw_api.pw_thread_loop_new)
#define pw_thread_loop_get_loop   (bk_pw_api.pw_thread_loop_get_loop)
#define pw_thread_loop_start      (bk_pw_api.pw_thread_loop_start)
#define pw_thread_loop_stop       (bk_pw_api.pw_thread_loop_stop)
#define pw_thread_loop_lock       (bk_pw_api.pw_thread_loop_lock)
#define pw_thread_loop_unlock     (bk_pw_api.pw_thread_loop_unlock)
#define pw_thread_loop_destroy    (bk_pw_api.pw_thread_loop_destroy)
#define pw_context_new            (bk_pw_api.pw_context_new)
#define pw_context_add_spa_lib    (bk_pw_api.pw_context_add_spa_lib)
#define pw_context_load_module    (bk_pw_api.pw_context_load_module)
#define pw_context_connect        (bk_pw_api.pw_context_connect)
#define pw_context_connect_fd     (bk_pw_api.pw_context_connect_fd)
#define pw_context_destroy        (bk_pw_api.pw_context_destroy)
#define pw_core_disconnect        (bk_pw_api.pw_core_disconnect)
#define pw_proxy_destroy          (bk_pw_api.pw_proxy_destroy)
#define pw_stream_new             (bk_pw_api.pw_stream_new)
#define pw_stream_add_listener    (bk_pw_api.pw_stream_add_listener)
#define pw_stream_connect         (bk_pw_api.pw_stream_connect)
#define pw_stream_update_params   (bk_pw_api.pw_stream_update_params)
#define pw_stream_dequeue_buffer  (bk_pw_api.pw_stream_dequeue_buffer)
#define pw_stream_queue_buffer    (bk_pw_api.pw_stream_queue_buffer)
#define pw_stream_get_time_n      (bk_pw_api.pw_stream_get_time_n)
#define pw_stream_disconnect      (bk_pw_api.pw_stream_disconnect)
#define pw_stream_destroy         (bk_pw_api.pw_stream_destroy)
#endif

#endif
