#ifndef BK_THREAD_H
#define BK_THREAD_H
/// Names the calling thread (visible in top -H and perf); names are cut to 15 bytes.
void bk_set_thread_name(const char *name);
#endif
