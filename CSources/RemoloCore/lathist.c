/* SPDX-License-Identifier: MIT */
/*
 * A long memory of lateness, and the delay it asks for (hist_samples).
 *
 * The window rule (delay.c) sees the last 240 packets, about two seconds:
 * it grows at once after one short queue and forgets a stall that recurs
 * every few seconds. With late packets caught up by stretching, a short
 * queue costs little, and each growth of the delay is itself a change of
 * speed. Here the latenesses of the last hist_samples..2 * hist_samples
 * packets (older ones weigh half at each halving) sit in fixed 0.5 ms
 * buckets, and the delay is the one that costs least:
 *
 *   cost(D) = D + late_cost_us * P(lateness > D)
 *
 * i.e. every packet pays the delay, and a packet later than the delay pays
 * late_cost_us more (it holds the cursor, then is caught up by a stretch).
 * Raising the delay is worth it while each millisecond of it makes more
 * than 1 ms / late_cost_us of the packets on time: a tail of recurring
 * stalls (a heavy, flat density of lateness: S5's 90 ms stalls twice a
 * second put 0.2% of the packets in every millisecond up to 90 ms) is
 * covered, a thin tail of rare queues (S2's, 0.05% per millisecond) is
 * left to the catch-up.
 *
 * Per packet: one increment; every REMOLO_LATHIST_RECALC packets, one pass
 * over the buckets; at each halving, one more. No sort, no allocation.
 */
#include <string.h>

#include "remolo_playout.h"

void lathist_init(struct lathist *h, uint32_t prior)
{
	memset(h, 0, sizeof(*h));
	h->count[0] = prior;
	h->total = prior;
}

void lathist_add(struct lathist *h, const struct playout_config *cfg, uint64_t lateness_us)
{
	uint64_t b = lateness_us / REMOLO_LATHIST_BUCKET_US;

	if (b >= REMOLO_LATHIST_BUCKETS)
		b = REMOLO_LATHIST_BUCKETS - 1;     /* the last bucket: everything beyond */
	h->count[b]++;
	h->total++;
	h->added++;
	if (h->total < 2 * (uint64_t)cfg->hist_samples)
		return;
	/* Forget geometrically: the memory holds between hist_samples and
	 * twice as many packets' worth, and a halving costs one pass. */
	h->total = 0;
	for (uint32_t i = 0; i < REMOLO_LATHIST_BUCKETS; i++) {
		h->count[i] /= 2;
		h->total += h->count[i];
	}
}

uint32_t lathist_best(const struct lathist *h, const struct playout_config *cfg, uint32_t cap_us)
{
	/* tail[j]: the packets later than a delay of j buckets. */
	uint32_t tail[REMOLO_LATHIST_BUCKETS];
	uint32_t m = cfg->late_hold_us / REMOLO_LATHIST_BUCKET_US, best = REMOLO_LATHIST_BUCKET_US;
	uint64_t run = 0, best_cost = UINT64_MAX;

	if (h->total == 0)
		return 0;
	if (m == 0)
		m = 1;
	if (m > REMOLO_LATHIST_BUCKETS)
		m = REMOLO_LATHIST_BUCKETS;
	tail[REMOLO_LATHIST_BUCKETS - 1] = h->count[REMOLO_LATHIST_BUCKETS - 1];
	for (uint32_t j = REMOLO_LATHIST_BUCKETS - 1; j-- > 0;)
		tail[j] = tail[j + 1] + h->count[j];
	/*
	 * A packet late by e holds the cursor for e, at most late_hold_us: a
	 * longer hold is the following packets' (they queue behind it and are
	 * late too). The expected hold beyond a delay D is the integral of
	 * P(lateness > x) over [D, D + hold]: the sum of m tails. Candidates
	 * are bucket edges D = j * width, j >= 1; the last bucket is
	 * open-ended (its packets stay late beyond it). Compared times m:
	 * D * total * m < 2^17 * 2^22 * 2^8, late_cost_us * sum < 2^26 * 2^22
	 * * 2^8: far inside 64 bits.
	 */
	for (uint32_t k = 0; k < m; k++)
		run += tail[REMOLO_LATHIST_BUCKETS - 1];
	for (uint32_t j = REMOLO_LATHIST_BUCKETS - 1; j >= 1; j--) {
		uint32_t d = j * REMOLO_LATHIST_BUCKET_US;
		uint32_t leaving = j + m < REMOLO_LATHIST_BUCKETS ? tail[j + m] : tail[REMOLO_LATHIST_BUCKETS - 1];
		uint64_t cost;

		/* run = tail[j] + ... + tail[j + m - 1], past the end the last. */
		run = run - leaving + tail[j];
		if (d > cap_us)
			continue;
		cost = (uint64_t)d * h->total * m + (uint64_t)cfg->late_cost_us * run;
		/* Ties go to the smaller delay (scanned last). */
		if (cost <= best_cost) {
			best_cost = cost;
			best = d;
		}
	}
	return best;
}

void lathist_rebase(struct lathist *h, uint64_t by_us)
{
	/* Every sample was measured against an offset by_us too low: shift
	 * down by the nearest whole number of buckets, the ones below 0 into
	 * bucket 0. */
	uint64_t n = (by_us + REMOLO_LATHIST_BUCKET_US / 2) / REMOLO_LATHIST_BUCKET_US;

	if (n == 0)
		return;
	if (n >= REMOLO_LATHIST_BUCKETS)
		n = REMOLO_LATHIST_BUCKETS - 1;
	for (uint32_t i = 1; i <= n; i++)
		h->count[0] += h->count[i];
	memmove(&h->count[1], &h->count[n + 1], (REMOLO_LATHIST_BUCKETS - 1 - n) * sizeof(h->count[0]));
	memset(&h->count[REMOLO_LATHIST_BUCKETS - n], 0, n * sizeof(h->count[0]));
}
