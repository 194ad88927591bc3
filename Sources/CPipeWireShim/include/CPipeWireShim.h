#ifndef BK_PW_SHIM_H
#define BK_PW_SHIM_H
/* PipeWire/SPA helpers; see pwshim.c. */
int bk_pw_shim_version(void);
#endif
