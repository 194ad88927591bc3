#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include "CLinuxProcess.h"

int bk_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    int rc = setrlimit(RLIMIT_CORE, &none);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) rc = -1;
    return rc;
}

int bk_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

void bk_test_fault(int kind) {
    if (kind == 1) {
        /* volatile: the compiler may not prove the store dead or replace it with a trap. */
        volatile int *volatile nothing = NULL;
        *nothing = 1;
    }
    abort();
}
