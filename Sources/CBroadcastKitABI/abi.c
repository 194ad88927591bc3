/* The C ABI's types live in include/broadcastkit.h; the functions are implemented in Swift
 * (Sources/BroadcastKitC, @_cdecl). This file only pins the struct layouts the Swift side and the
 * Python binding (bindings/python/broadcastkit/_abi.py) rely on. */
#include "broadcastkit.h"

_Static_assert(sizeof(bk_video_frame) == 96, "bk_video_frame layout");
_Static_assert(sizeof(bk_audio_buffer) == 40, "bk_audio_buffer layout");
_Static_assert(sizeof(bk_stats) == 8 + 8 * 8 + 8 * BK_DROP_REASON_COUNT + 8 * 8 + 2 * 8, "bk_stats layout");
_Static_assert(sizeof(bk_event) == 40, "bk_event layout");

#include <malloc.h>
#include "bk_abi_internal.h"

void bk_abi_trim_heap(void) { malloc_trim(0); }
