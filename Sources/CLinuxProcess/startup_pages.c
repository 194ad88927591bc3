#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "CLinuxProcess.h"

/* One mapping of /proc/self/smaps as far as the release decision needs it. */
struct mapping {
    unsigned long start, end;
    int candidate;          /* private, not writable, backed by a regular file */
    size_t rss_kb, anonymous_kb;
};

static size_t release(const struct mapping *m) {
    /* Anonymous > 0 means some pages were written (RELRO after relocation): those exist only
     * here, and dropping them would lose them. A mapping with none is a clean copy of its file. */
    if (!m->candidate || m->rss_kb == 0 || m->anonymous_kb != 0) return 0;
    if (madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) != 0) return 0;
    return m->rss_kb * 1024;
}

long bk_release_clean_file_pages(void) {
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return -1;
    char line[512];
    struct mapping m = {0};
    int have = 0;
    size_t released = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) == 3 && path_at > 0) {
            if (have) released += release(&m);
            const char *path = line + path_at;
            m = (struct mapping){ .start = start, .end = end };
            m.candidate = perms[1] != 'w' && perms[3] == 'p' && path[0] == '/'
                && strncmp(path, "/memfd:", 7) != 0 && strncmp(path, "/dev/", 5) != 0;
            have = 1;
        } else if (strncmp(line, "Rss:", 4) == 0) {
            sscanf(line + 4, "%zu", &m.rss_kb);
        } else if (strncmp(line, "Anonymous:", 10) == 0) {
            sscanf(line + 10, "%zu", &m.anonymous_kb);
        }
    }
    if (have) released += release(&m);
    fclose(f);
    return (long)released;
}
