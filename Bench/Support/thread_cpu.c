/* SPDX-License-Identifier: MIT */
/*
 * CPU time of one thread of this process, by its kernel thread id: for
 * threads Bench did not start itself (the data-channel endpoint's), whose
 * pthread_t it does not have. The clock id is the one glibc's
 * pthread_getcpuclockid makes (the kernel's CPUCLOCK_PERTHREAD | SCHED
 * encoding, include/linux/posix-timers.h), read with nanosecond resolution.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#include "bench_support.h"

int64_t bench_thread_cpu_ns(int tid)
{
	enum { CPUCLOCK_SCHED = 2, CPUCLOCK_PERTHREAD_MASK = 4, CPUCLOCK_SHIFT = 3 };
	clockid_t id = (clockid_t)((~(unsigned)tid << CPUCLOCK_SHIFT) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED);
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return -errno;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
