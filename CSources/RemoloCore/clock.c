/* SPDX-License-Identifier: MIT */
/*
 * Clock offset between sender and receiver (brief part 4).
 *
 * The offset is the smallest observed (arrival - sender time): the fastest
 * trip ever made, which holds the one-way minimum delay plus the clock
 * difference. Between new minima it creeps up (2 ms/s by default) so that a
 * receiver clock running slower than the sender's cannot leave a stale
 * minimum behind; a long silence forgets it, and a packet later than any
 * jitter could make (a sender clock stepped backwards) rebases it.
 *
 * All differences are taken in uint64_t and reinterpreted as int64_t, so
 * hostile sender times (backwards, hours ahead, 2^64 - 1) wrap instead of
 * overflowing.
 */
#include "remolo_playout.h"

void clock_init(struct clock_est *c)
{
	c->offset_us = 0;
	c->creep_rem = 0;
	c->last_rx_us = 0;
	c->valid = false;
}

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static void rebase(struct clock_est *c, int64_t sample)
{
	c->offset_us = sample;
	c->creep_rem = 0;
}

int clock_update(struct clock_est *c, const struct playout_config *cfg,
		 uint64_t rx_us, uint64_t tx_us, uint64_t *lateness_us)
{
	int64_t sample = diff(rx_us, tx_us);
	int64_t elapsed;
	int event = CLOCK_EVENT_NONE;

	if (__builtin_expect(!c->valid, 0)) {
		rebase(c, sample);
		c->valid = true;
		c->last_rx_us = rx_us;
		*lateness_us = 0;
		return CLOCK_EVENT_RESET;
	}

	/* A receiver clock that went backwards (it should not: CLOCK_MONOTONIC)
	 * counts as no time at all. */
	elapsed = diff(rx_us, c->last_rx_us);
	if (elapsed < 0)
		elapsed = 0;
	else
		c->last_rx_us = rx_us;

	if ((uint64_t)elapsed > cfg->gap_reset_us) {
		rebase(c, sample);
		*lateness_us = 0;
		return CLOCK_EVENT_RESET;
	}

	/* elapsed <= gap_reset_us <= 60 s and creep_ppm <= 1e6: the product
	 * stays below 2^46. */
	c->creep_rem += (uint64_t)elapsed * cfg->creep_ppm;
	if (c->creep_rem >= 1000000u) {
		c->offset_us += (int64_t)(c->creep_rem / 1000000u);
		c->creep_rem %= 1000000u;
	}

	if (sample < c->offset_us) {
		rebase(c, sample);
		event = CLOCK_EVENT_MINIMUM;
	}

	/* sample >= offset here, but both may be far apart after a step:
	 * compare in unsigned space. */
	*lateness_us = (uint64_t)sample - (uint64_t)c->offset_us;
	if (__builtin_expect(*lateness_us > cfg->step_reset_us, 0)) {
		rebase(c, sample);
		*lateness_us = 0;
		return CLOCK_EVENT_STEP;
	}
	return event;
}
