#include <vo-aacenc/voAAC.h>
#include <vo-aacenc/cmnMemory.h>
