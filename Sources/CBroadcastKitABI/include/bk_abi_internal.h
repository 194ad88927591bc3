/* Helpers the Swift side of the C ABI calls and Swift cannot reach directly. Not installed and not
 * exported (exports.map keeps every symbol outside broadcastkit.h local). */
#ifndef BK_ABI_INTERNAL_H
#define BK_ABI_INTERNAL_H

/* Gives malloc's free pages back to the kernel (glibc malloc_trim(0)). */
void bk_abi_trim_heap(void);

#endif
