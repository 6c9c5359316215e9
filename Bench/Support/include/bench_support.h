/* SPDX-License-Identifier: MIT */
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stdint.h>

/* Heap allocations (malloc, calloc, realloc, memalign family) made by the
 * whole process so far. */
uint64_t bench_allocations(void);

#endif
