#include <sys/prctl.h>
#include "bk_process.h"

int bk_disable_transparent_huge_pages(void) { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }
