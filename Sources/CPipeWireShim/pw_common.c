#include "pw_common.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void bk_pw_describe_connect_error(int err, char *out, size_t out_len)
{
    const char *dir = getenv("PIPEWIRE_RUNTIME_DIR");
    if (dir == NULL || dir[0] == 0) dir = getenv("XDG_RUNTIME_DIR");
    const char *remote = getenv("PIPEWIRE_REMOTE");
    if (remote == NULL || remote[0] == 0) remote = "pipewire-0";
    if (dir == NULL || dir[0] == 0) {
        snprintf(out, out_len,
                 "no PipeWire daemon: XDG_RUNTIME_DIR is not set, so the socket %s cannot be found "
                 "(set XDG_RUNTIME_DIR to the directory of a running pipewire, or start pipewire and wireplumber; scripts/pipewire-up starts a headless one)",
                 remote);
        return;
    }
    snprintf(out, out_len,
             "no PipeWire daemon at %s/%s (%s): start pipewire and wireplumber "
             "(systemctl --user start pipewire wireplumber, or scripts/pipewire-up for a headless one) "
             "or point XDG_RUNTIME_DIR/PIPEWIRE_RUNTIME_DIR at its socket directory",
             dir, remote, strerror(err));
}
