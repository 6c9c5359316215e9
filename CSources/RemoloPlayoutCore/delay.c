/* SPDX-License-Identifier: MIT */
/*
 * The jitter buffer's size (design note, part 4): the 95th percentile of how late
 * the last 240 packets were, plus a margin, clamped, starting at 12 ms. It
 * grows at once and shrinks by 1% of itself per packet.
 *
 * The window is kept twice: in arrival order (a ring, to know which value
 * leaves) and sorted (so the quantile is one load). Each packet costs two
 * binary searches and two memmove()s of at most 1 KiB; nothing is sorted
 * per packet.
 *
 * With stall_weight the delay is the chooser's (chooser.c), which replays
 * the recent past at a set of candidate delays, and the window is not used
 * unless choose_floor sets it under the chooser's pick.
 *
 * choose_floor (docs/playout.md, "The floor under the chooser"). The
 * chooser charges every packet its delay, so it weighs the mean latency;
 * the fixed-delay frontier judges the 95th percentile. A delay below the
 * network's knee (recall.c: the delay past which fewer than 5% of packets
 * are late at no delay) does not move the 95th percentile, and it leaves
 * every stall longer: where stalls recur, the chooser sits below the knee
 * and pays jitter for latency the percentile does not count. The floor is
 * the lesser of two readings of the knee: the session's own (its packets
 * so far, at recall_permille) and the window's target (the last 240
 * packets, 2 s at 120 Hz). Each alone reads luck: one hold early in a
 * session stays in the session's reading for tens of seconds, and one
 * clump stays in the window for 2 s. Both read high together only where
 * stalls recur within the window, all session long; where clumps come at
 * random, one of them reads low and the chooser's costs decide. The
 * floor's window counts its values in 1 ms bins and keeps its quantile's
 * bin as they come and go (binned_target): a few adds a packet, where the
 * sorted window costs two binary searches and two memmove()s.
 *
 * With recall_permille, a session given a usable memory of its sender's
 * network (chooser_recall) holds the delay the memory reads while its own
 * packets agree, and the window's estimate only after they overrule it
 * (docs/playout.md, "A returning sender"). The held delay is not clamped
 * to delay_max_us: that cap keeps one clump in a 240-packet window from
 * taking the delay past 60 ms (design note, part 4), and the memory's
 * reading is a share of at least 67 s of movement, not one clump. It is kept
 * within the candidates' range (REMOLO_CHOOSER_DELAY_MAX_US) instead.
 */
#include <string.h>

#include "remolo_playout.h"

#define RING_MASK (REMOLO_WINDOW_MAX - 1)

void delay_init(struct delay_est *d, const struct playout_config *cfg)
{
	memset(d->ring, 0, sizeof(d->ring));
	memset(d->sorted, 0, sizeof(d->sorted));
	memset(d->bins, 0, sizeof(d->bins));
	d->q = 0;
	d->below = 0;
	d->count = 0;
	d->head = 0;
	d->delay_us = cfg->delay_start_us;
	d->target_us = cfg->delay_start_us;
	chooser_init(&d->chooser, cfg->delay_start_us);
}

/* First index whose value is >= v. */
static uint32_t lower_bound(const uint32_t *a, uint32_t n, uint32_t v)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (a[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void sorted_remove(struct delay_est *d, uint32_t v)
{
	uint32_t i = lower_bound(d->sorted, d->count, v);

	/* v is present: it entered the window and has not left it. */
	memmove(&d->sorted[i], &d->sorted[i + 1], (d->count - i - 1) * sizeof(uint32_t));
	d->count--;
}

static void sorted_insert(struct delay_est *d, uint32_t v)
{
	uint32_t i = lower_bound(d->sorted, d->count, v);

	memmove(&d->sorted[i + 1], &d->sorted[i], (d->count - i) * sizeof(uint32_t));
	d->sorted[i] = v;
	d->count++;
}

uint32_t delay_quantile(const struct delay_est *d, const struct playout_config *cfg)
{
	uint64_t rank;

	if (d->count == 0)
		return 0;
	/* Nearest rank: the ceil(q * n)-th smallest value, 1-based. */
	rank = ((uint64_t)cfg->quantile_permille * d->count + 999) / 1000;
	if (rank == 0)
		rank = 1;
	return d->sorted[rank - 1];
}

/* The quantile plus the margin, clamped to [min, max]. */
static uint32_t target_of(const struct delay_est *d, const struct playout_config *cfg)
{
	uint64_t base;
	uint64_t target;

	base = delay_quantile(d, cfg);
	target = base + cfg->delay_margin_us;

	if (target < cfg->delay_min_us)
		target = cfg->delay_min_us;
	if (target > cfg->delay_max_us)
		target = cfg->delay_max_us;
	return (uint32_t)target;
}

static uint32_t clamped(const struct playout_config *cfg, uint32_t v)
{
	return v < cfg->delay_min_us ? cfg->delay_min_us : v > cfg->delay_max_us ? cfg->delay_max_us : v;
}

/* A held delay is the memory's reading: within [delay_min_us,
 * REMOLO_CHOOSER_DELAY_MAX_US], not delay_max_us (see the top). */
static uint32_t held_clamped(const struct playout_config *cfg, uint32_t held)
{
	return held < cfg->delay_min_us ? cfg->delay_min_us
	     : held > REMOLO_CHOOSER_DELAY_MAX_US ? REMOLO_CHOOSER_DELAY_MAX_US : held;
}

static uint32_t bin_of(uint32_t v)
{
	uint32_t b = (v + REMOLO_FLOOR_BIN_US - 1) / REMOLO_FLOOR_BIN_US;

	return b < REMOLO_FLOOR_BINS ? b : REMOLO_FLOOR_BINS - 1;
}

/* The floor's window: the same values as the sorted one, counted in 1 ms
 * bins (bin b: (b - 1, b] ms), and its quantile's bin kept as they come
 * and go. The quantile moves by a few bins a packet at most, so this is a
 * few adds where the sorted window is two binary searches and two
 * memmove()s; the reading is the bin's upper edge, at most 1 ms above the
 * sorted window's. */
static uint32_t binned_target(struct delay_est *d, const struct playout_config *cfg, uint32_t v)
{
	uint32_t b = bin_of(v), need;
	uint64_t target;

	if (d->count == cfg->window) {
		uint32_t old = bin_of(d->ring[(d->head - cfg->window) & RING_MASK]);

		d->bins[old]--;
		if (old <= d->q)
			d->below--;
	} else {
		d->count++;
	}
	d->ring[d->head & RING_MASK] = v;
	d->head++;
	d->bins[b]++;
	if (b <= d->q)
		d->below++;
	/* Nearest rank, as delay_quantile: the least bin with ceil(q * n)
	 * values at or below it. */
	need = (uint32_t)(((uint64_t)cfg->quantile_permille * d->count + 999) / 1000);
	if (need == 0)
		need = 1;
	while (d->below < need && d->q < REMOLO_FLOOR_BINS - 1)
		d->below += d->bins[++d->q];
	while (d->q > 0 && d->below - d->bins[d->q] >= need)
		d->below -= d->bins[d->q--];
	target = (uint64_t)d->q * REMOLO_FLOOR_BIN_US + cfg->delay_margin_us;
	return clamped(cfg, target > UINT32_MAX ? UINT32_MAX : (uint32_t)target);
}

/* With stall_weight: the chooser's pick, or the floor under it. */
static uint32_t chosen(struct delay_est *d, const struct playout_config *cfg, uint32_t v)
{
	uint32_t pick = chooser_delay_us(&d->chooser), floor;

	if (cfg->choose_floor) {
		/* The window learns while a memory is held, for when it lets go. */
		floor = binned_target(d, cfg, v);
		if (d->chooser.knee_us < floor)
			floor = d->chooser.knee_us;
		if (!d->chooser.holding && floor > pick)
			pick = floor;
	}
	return d->chooser.holding ? held_clamped(cfg, pick) : clamped(cfg, pick);
}

uint32_t delay_update(struct delay_est *d, const struct playout_config *cfg, uint64_t lateness_us)
{
	uint32_t v = lateness_us > REMOLO_LATENESS_CAP_US ? REMOLO_LATENESS_CAP_US
							   : (uint32_t)lateness_us;

	/* The chooser's pick, or its floor, as they stand after the packets
	 * before this one (delay_observe feeds them): not this window, no
	 * grow-at-once. The change is played through the slew
	 * (applied_delay in playout.c). */
	if (cfg->stall_weight) {
		d->target_us = chosen(d, cfg, v);
		d->delay_us = d->target_us;
		return d->delay_us;
	}

	if (d->count == cfg->window)
		sorted_remove(d, d->ring[(d->head - cfg->window) & RING_MASK]);
	d->ring[d->head & RING_MASK] = v;
	d->head++;
	sorted_insert(d, v);

	d->target_us = target_of(d, cfg);
	/* Held: the window still learns, for when the hold lets go. The
	 * change is played through the slew, as the chooser's. */
	if (d->chooser.holding) {
		d->target_us = held_clamped(cfg, chooser_delay_us(&d->chooser));
		d->delay_us = d->target_us;
		return d->delay_us;
	}

	if (d->target_us >= d->delay_us) {
		d->delay_us = d->target_us;     /* worse: grow at once */
	} else {
		uint32_t step = (uint32_t)((uint64_t)d->delay_us * cfg->shrink_permille / 1000);

		if (step == 0 && cfg->shrink_permille != 0)
			step = 1;
		d->delay_us = d->delay_us - step < d->target_us ? d->target_us
								: d->delay_us - step;
	}
	return d->delay_us;
}

void delay_observe(struct delay_est *d, const struct playout_config *cfg, uint64_t rx_us, uint64_t ref_us,
		   uint32_t frame_us, bool joined)
{
	if (cfg->stall_weight || cfg->recall_permille)
		chooser_add(&d->chooser, cfg, rx_us, ref_us, frame_us, joined);
}

/* The binned window's values drop by by_us: counted again from the ring. */
static void rebase_bins(struct delay_est *d, const struct playout_config *cfg, uint64_t by_us)
{
	uint32_t n = d->count;

	memset(d->bins, 0, sizeof(d->bins));
	d->q = 0;
	d->below = 0;
	d->count = 0;
	d->head -= n;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = d->ring[d->head & RING_MASK];

		(void)binned_target(d, cfg, v > by_us ? v - (uint32_t)by_us : 0);
	}
}

void delay_rebase(struct delay_est *d, const struct playout_config *cfg, uint64_t by_us)
{
	/* The chooser's shadow schedules are in receiver time: a higher
	 * offset moves later packets' slots, not what is scheduled. */
	if (cfg->stall_weight || cfg->recall_permille)
		chooser_rebase(&d->chooser, by_us);
	if (cfg->stall_weight && cfg->choose_floor) {
		rebase_bins(d, cfg, by_us);
		return;
	}
	if (cfg->stall_weight)
		return;
	/* Subtracting a constant (floored at 0) keeps the sorted copy sorted. */
	for (uint32_t i = 0; i < REMOLO_WINDOW_MAX; i++) {
		d->ring[i] = d->ring[i] > by_us ? d->ring[i] - (uint32_t)by_us : 0;
		d->sorted[i] = d->sorted[i] > by_us ? d->sorted[i] - (uint32_t)by_us : 0;
	}
	d->target_us = target_of(d, cfg);
	if (d->delay_us > d->target_us)
		d->delay_us = d->delay_us - d->target_us > by_us ? d->delay_us - (uint32_t)by_us : d->target_us;
}
