#ifndef BK_PROCESS_H
#define BK_PROCESS_H
/// Turns transparent huge pages off for this process (prctl PR_SET_THP_DISABLE). libx264
/// madvises its large frame buffers for huge pages, which rounds each up to 2 MB resident;
/// with THP off they cost only the pages really touched. Returns 0 on success.
int bk_disable_transparent_huge_pages(void);
#endif
