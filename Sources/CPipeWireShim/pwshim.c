#include "CPipeWireShim.h"
#include <pipewire/pipewire.h>
int bk_pw_shim_version(void) { return 1; }
