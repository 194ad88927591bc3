#include "CShims.h"
#include <malloc.h>

int bk_set_malloc_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

size_t bk_heap_in_use(void) { return mallinfo2().uordblks; }
