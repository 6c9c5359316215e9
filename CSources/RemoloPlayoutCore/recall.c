/* SPDX-License-Identifier: MIT */
/*
 * What a sender's network did in its earlier sessions (recall_permille;
 * docs/playout.md, "A returning sender").
 *
 * The fixed-delay frontier judges latency at its 95th percentile. A
 * packet's latency at a delay d is about the larger of d + its frame and
 * its latency at no delay (every shadow schedule's end is nondecreasing in
 * d), so the 95th percentile at d is the larger of d + a frame and the
 * network's own 95th percentile at no delay: flat up to a knee, then the
 * delay's own. Below the knee a longer delay is free at the 95th
 * percentile and shortens every stall; above it, every millisecond is
 * paid. On a network that does not change (the lateness of one stretch
 * tells nothing of the next), no schedule beats the best pinned delay, and
 * the best pinned delays lie at or above the knee.
 *
 * The knee is a property of the network, not of one session: a link that
 * holds for 200 ms once every 10 s puts one hold in one 30 s session and
 * five in the next, and a rule read from one session's packets sets the
 * delay from that session's luck. So the zero-delay shadow's lateness
 * (candidate 0's, chooser.c) goes into a histogram that outlives the
 * session: 1 ms bins, every bin aged by 1/8 each 2^REMOLO_RECALL_AGE_SHIFT
 * units of movement (a memory of about eight times that: tens of
 * sessions' movement). A packet weighs its frame, not one: the 95th
 * percentile the frontier judges is over the time the cursor moves, and a
 * memory that counted packets would cover half the sessions at a 240 Hz
 * sender that it covers at 120 Hz, and read one session's luck there
 * (RESULTS.md, round 16). A session records its
 * own packets apart (recall_add) and merges them into the memory it was
 * given at its end (recall_merge); the receiver keeps the result per
 * sender and network and hands it to the next session; read there at
 * recall_permille (a share a little under the 5% the 95th percentile
 * leaves, so the delay sits past the knee, not on it), it is the delay the
 * session holds (chooser.c), unless the session before held one the
 * reading still lies near (held_us): then that one, so that one session's
 * luck does not move it.
 *
 * Per packet: one bin; every 2^REMOLO_RECALL_AGE_SHIFT units a pass over
 * the bins. No allocation, no division.
 */
#include <string.h>

#include "remolo_playout.h"

void recall_init(struct recall *r)
{
	memset(r, 0, sizeof(*r));
}

uint32_t recall_fold(uint64_t moved)
{
	while (moved >= REMOLO_RECALL_FOLD_AT)
		moved -= REMOLO_RECALL_FOLD_BY;
	return (uint32_t)moved;
}

uint32_t recall_weight(uint32_t frame_us)
{
	uint32_t f = frame_us < REMOLO_RECALL_FRAME_MAX_US ? frame_us : REMOLO_RECALL_FRAME_MAX_US;
	uint32_t w = f >> REMOLO_RECALL_UNIT_SHIFT;

	return w ? w : 1;
}

void recall_add(struct recall *r, uint64_t behind_us, uint32_t frame_us)
{
	/* Bin b holds lateness in (b - 1, b] ms, bin 0 a packet on time: so
	 * a reading of b ms leaves every packet in the bins above it late,
	 * and none in b. */
	uint64_t bin = (behind_us + REMOLO_RECALL_BIN_US - 1) / REMOLO_RECALL_BIN_US;
	uint32_t w = recall_weight(frame_us), was = r->moved;

	r->bins[bin < REMOLO_RECALL_BINS ? bin : REMOLO_RECALL_BINS - 1] += w;
	r->moved = recall_fold((uint64_t)was + w);
	/* The bound below (remolo_limits.h) holds as long as no more than
	 * 2^AGE_SHIFT and one frame come between two agings. */
	if (((uint64_t)was + w) >> REMOLO_RECALL_AGE_SHIFT != was >> REMOLO_RECALL_AGE_SHIFT)
		for (uint32_t b = 0; b < REMOLO_RECALL_BINS; b++)
			r->bins[b] -= r->bins[b] >> REMOLO_RECALL_AGE_BY;
}

uint32_t recall_delay_us(const struct recall *r, uint32_t permille)
{
	uint64_t total = 0, acc = 0, need;
	uint32_t b;

	for (b = 0; b < REMOLO_RECALL_BINS; b++)
		total += r->bins[b];
	if (total == 0)
		return 0;
	need = (total * permille + 999) / 1000;
	for (b = REMOLO_RECALL_BINS - 1; b > 0; b--) {
		acc += r->bins[b];
		if (acc >= need)
			break;
	}
	/* The bins above b hold less than the share, and b ms is the upper
	 * edge of bin b's lateness (recall_add): a delay that leaves less
	 * than `permille` later. A lower edge would leave bin b's packets
	 * late by up to a bin, and at a 240 Hz sender that is the one
	 * millisecond between the knee and the pin past it (RESULTS.md,
	 * round 16). */
	return b * REMOLO_RECALL_BIN_US;
}

bool recall_usable(const struct recall *r)
{
	return r->moved >= REMOLO_RECALL_MIN_MOVED;
}

void recall_merge(struct recall *out, const struct recall *old, const struct recall *session)
{
	/* The old memory ages as if the session's movement had followed it:
	 * once for each multiple of 2^REMOLO_RECALL_AGE_SHIFT it crosses. */
	uint64_t total = (uint64_t)old->moved + session->moved;
	uint64_t agings = (total >> REMOLO_RECALL_AGE_SHIFT) - (old->moved >> REMOLO_RECALL_AGE_SHIFT);

	for (uint32_t b = 0; b < REMOLO_RECALL_BINS; b++) {
		uint32_t v = old->bins[b];

		for (uint64_t k = 0; k < agings && v; k++)
			v -= v >> REMOLO_RECALL_AGE_BY;
		out->bins[b] = v + session->bins[b];
	}
	out->moved = recall_fold(total);
	out->held_us = 0;   /* chooser_recall_out says what the session held */
}

void recall_rebase(struct recall *r, uint64_t by_us)
{
	uint64_t n = by_us / REMOLO_RECALL_BIN_US;

	if (n == 0)
		return;
	for (uint32_t b = 1; b < REMOLO_RECALL_BINS; b++) {
		uint32_t to = b > n ? b - (uint32_t)n : 0;

		r->bins[to] += r->bins[b];
		r->bins[b] = 0;
	}
}

bool recall_valid(const struct recall *r)
{
	uint64_t total = 0;

	/* No more weight than the aging lets a memory hold: then no bin, nor
	 * a rebase's sum of them, overflows. */
	for (uint32_t b = 0; b < REMOLO_RECALL_BINS; b++)
		total += r->bins[b];
	/* A held delay is a reading: at most the last bin's. */
	return total <= REMOLO_RECALL_TOTAL_MAX && r->held_us <= (REMOLO_RECALL_BINS - 1) * REMOLO_RECALL_BIN_US &&
	       r->moved < REMOLO_RECALL_FOLD_AT;
}
