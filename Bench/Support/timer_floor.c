/* SPDX-License-Identifier: MIT */
/*
 * The floor for the receive loop's tick lateness (rx.tick_late_us): a bare
 * timerfd read by a plain blocking read() on the calling thread, with the
 * loop's own thread settings (timer slack 1 ns, optionally SCHED_FIFO) and
 * the loop's way of arming it (absolute first expiry, then a fixed period).
 * Whatever lateness this shows, the machine adds; what the loop shows above
 * it, io_uring and the loop add.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>

#include "bench_support.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bench_timer_lateness(uint32_t ticks, uint32_t period_ns, int rt_priority, uint64_t *late_ns)
{
	struct sched_param sp, old_sp;
	struct itimerspec its;
	uint64_t first, n = 0, v;
	int old_policy, fd, ret = 0;

	if (!ticks || !period_ns || period_ns >= 1000000000u || !late_ns)
		return -EINVAL;
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (pthread_getschedparam(pthread_self(), &old_policy, &old_sp) != 0)
		return -EPERM;
	if (rt_priority > 0) {
		memset(&sp, 0, sizeof(sp));
		sp.sched_priority = rt_priority;
		ret = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
		if (ret != 0)
			return -ret;
	}
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	memset(&its, 0, sizeof(its));
	first = now_ns() + period_ns;
	its.it_value.tv_sec = (time_t)(first / 1000000000u);
	its.it_value.tv_nsec = (long)(first % 1000000000u);
	its.it_interval.tv_nsec = period_ns;
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		ret = -errno;
		goto out_close;
	}
	for (uint32_t i = 0; i < ticks; i++) {
		ssize_t r = read(fd, &v, sizeof(v));
		uint64_t t = now_ns();

		if (r != (ssize_t)sizeof(v)) {
			if (r < 0 && errno == EINTR) {
				i--;
				continue;
			}
			ret = r < 0 ? -errno : -EIO;
			goto out_close;
		}
		n += v;
		late_ns[i] = t - (first + (n - 1) * period_ns);
	}
out_close:
	close(fd);
out:
	if (rt_priority > 0)
		(void)pthread_setschedparam(pthread_self(), old_policy, &old_sp);
	return ret;
}
