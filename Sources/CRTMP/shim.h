#include <librtmp/rtmp.h>
#include <librtmp/log.h>
