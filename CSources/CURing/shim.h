/* Only C files of RemoloCore include liburing (it defines _XOPEN_SOURCE itself). */
#include <liburing.h>
