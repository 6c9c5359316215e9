/* SPDX-License-Identifier: MIT */
/*
 * Clock offset between sender and receiver (design note, part 4).
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

void offset_init(struct offset_est *c)
{
	c->offset_us = 0;
	c->creep_rem = 0;
	c->last_rx_us = 0;
	c->valid = false;
	c->win_start_us = 0;
	c->win_min = 0;
	c->prev_min = 0;
	c->win_open = false;
	c->prev_valid = false;
}

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static void rebase(struct offset_est *c, int64_t sample)
{
	c->offset_us = sample;
	c->creep_rem = 0;
}

/* A reset or a step starts the windowed minimum afresh: samples from
 * before it belong to another clock relation. */
static void forget_windows(struct offset_est *c)
{
	c->win_open = false;
	c->prev_valid = false;
}

/* Windowed minimum (rise_window_us != 0). Returns true when the offset
 * rose: the smallest trip of the last two windows is slower than the
 * offset, so the fastest trip the offset remembers no longer happens. */
static bool window_rise(struct offset_est *c, const struct playout_config *cfg,
			uint64_t rx_us, int64_t sample)
{
	bool rose = false;

	if (c->win_open && (uint64_t)diff(rx_us, c->win_start_us) < cfg->rise_window_us) {
		if (sample < c->win_min)
			c->win_min = sample;
		return false;
	}
	if (c->win_open) {
		int64_t m = c->win_min;

		if (c->prev_valid && c->prev_min < m)
			m = c->prev_min;
		if (c->prev_valid && m > c->offset_us) {
			rebase(c, m);
			rose = true;
		}
		c->prev_min = c->win_min;
		c->prev_valid = true;
	}
	c->win_start_us = rx_us;
	c->win_min = sample;
	c->win_open = true;
	return rose;
}

int offset_update(struct offset_est *c, const struct playout_config *cfg,
		 uint64_t rx_us, uint64_t tx_us, uint64_t *lateness_us)
{
	int64_t sample = diff(rx_us, tx_us);
	int64_t elapsed;
	int event = OFFSET_EVENT_NONE;

	if (__builtin_expect(!c->valid, 0)) {
		rebase(c, sample);
		forget_windows(c);
		c->valid = true;
		c->last_rx_us = rx_us;
		*lateness_us = 0;
		return OFFSET_EVENT_RESET;
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
		forget_windows(c);
		*lateness_us = 0;
		return OFFSET_EVENT_RESET;
	}

	/* elapsed <= gap_reset_us <= 60 s and creep_ppm <= 1e6: the product
	 * stays below 2^46. */
	c->creep_rem += (uint64_t)elapsed * cfg->creep_ppm;
	if (c->creep_rem >= 1000000u) {
		int64_t step = (int64_t)(c->creep_rem / 1000000u);

		c->creep_rem %= 1000000u;
		/* A hostile sender time can put the offset at INT64_MAX:
		 * saturate; the next sample below it rebases anyway. */
		if (__builtin_expect(c->offset_us > INT64_MAX - step, 0))
			c->offset_us = INT64_MAX;
		else
			c->offset_us += step;
	}

	if (cfg->rise_window_us && window_rise(c, cfg, rx_us, sample))
		event = OFFSET_EVENT_RISE;

	if (sample < c->offset_us) {
		rebase(c, sample);
		/* A rise followed by a new minimum is still a rise overall: the
		 * caller rebases the delay window on the net change. */
		if (event != OFFSET_EVENT_RISE)
			event = OFFSET_EVENT_MINIMUM;
	}

	/* sample >= offset here, but both may be far apart after a step:
	 * compare in unsigned space. */
	*lateness_us = (uint64_t)sample - (uint64_t)c->offset_us;
	if (__builtin_expect(*lateness_us > cfg->step_reset_us, 0)) {
		rebase(c, sample);
		forget_windows(c);
		*lateness_us = 0;
		return OFFSET_EVENT_STEP;
	}
	return event;
}
