/* SPDX-License-Identifier: MIT */
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stdint.h>

/* Heap allocations (malloc, calloc, realloc, memalign family) made by the
 * whole process so far. */
uint64_t bench_allocations(void);

/* Reads a bare timerfd (absolute first expiry, period_ns after that) ticks
 * times on the calling thread, timer slack 1 ns, SCHED_FIFO at rt_priority
 * when above 0 (the policy is restored after): late_ns[i] is how long
 * after its latest expiry read i returned. 0 or -errno (-EPERM and the like
 * when SCHED_FIFO is refused). */
int bench_timer_lateness(uint32_t ticks, uint32_t period_ns, int rt_priority, uint64_t *late_ns);

#endif
