#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include "bk_thread.h"

void bk_set_thread_name(const char *name) {
    char buf[16];
    strncpy(buf, name, 15);
    buf[15] = 0;
    pthread_setname_np(pthread_self(), buf);
}
