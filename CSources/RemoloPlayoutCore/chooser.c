/* SPDX-License-Identifier: MIT */
/*
 * The jitter buffer's size, chosen by replaying what this network just did
 * (stall_weight != 0; docs/playout.md, "How the delay is chosen").
 *
 * A fixed set of candidate delays are the experts. Each one runs a shadow
 * of the playout: every movement packet is scheduled at its sender time +
 * offset + that delay, over its own frame, and where it arrives after
 * that, or behind a packet that did, it plays from its arrival at the
 * catch-up's pace, as the real schedule does (stretched() in playout.c).
 * What the shadow would have shown is charged, per packet, in one unit
 * (microseconds of delay on one packet):
 *
 *   cost = delay + (how much later than its slot the packet's motion
 *          ended: the catch-up's latency) + stall_weight * (how long the
 *          cursor stood still waiting for it while the finger moved)
 *
 * Stall time is what the eye sees: a stall of e holds the cursor for e and
 * then catches up over e / catchup, so the squared frame error it causes
 * grows with e, and a queue that delivers 13 packets at once is one stall,
 * not 13 late packets (the window's quantile counts it 13 times). Every
 * packet pays the delay.
 *
 * The costs are discounted sums: each packet multiplies every cost by
 * 1 - 2^-choose_horizon_shift before adding its own, so the memory is
 * about 2^shift packets. The choice follows the leader (the least cost)
 * with a hysteresis of choose_hysteresis_permille of the leader's cost:
 * a delay that is about as good as the one in use does not displace it,
 * since every change of delay is itself a change of the cursor's speed.
 * Follow-the-leader over a fixed expert set is within the switching cost
 * of the best fixed candidate in hindsight over the memory: the question
 * the fixed-delay frontier asks.
 *
 * A returning sender (recall_permille, recall.c). The costs above learn
 * the network from the session's first packet: on a network whose
 * lateness does not tell the next stretch's, following the leader over
 * ~2^10 packets trades places among delays that are equally good in
 * hindsight, and every change is a change of the cursor's speed; and
 * their mean cannot see the knee of the 95th percentile. With a memory of
 * the sender's earlier sessions, the session instead holds the delay the
 * memory reads (past the knee) for as long as its own packets agree: once
 * there are REMOLO_RECALL_CHECK_PACKETS of them, every 128 packets their
 * own reading is compared, and one less than a quarter or more than four
 * times the held delay, by more than REMOLO_RECALL_CHECK_SLACK_US
 * besides, is a different network. The bound is wide because one
 * session's reading is that session's luck: on a link that holds for
 * 150-300 ms every 10 s, 8.5 s of movement read anything from 22 to 127
 * ms where the memory reads 62; a quiet network after a stalling one reads 0 against 75.
 * Then the session goes back to the costs (the window's quantile without
 * stall_weight: delay.c), and the memory is dropped: what the next
 * session starts from is this session's packets, the new network's.
 * Without stall_weight only candidate 0, the zero-delay shadow the memory
 * reads, is run.
 *
 * Per packet: one pass over the candidates (a few adds and compares each),
 * one histogram bin, every 128 packets one pass over the histogram; no
 * allocation, no division but one per packet.
 */
#include <string.h>

#include "remolo_playout.h"

/* Candidate 0 is 0 us: the zero-delay shadow the memory reads, all of the
 * chooser that runs without stall_weight (RecallTests, case 9). */
static const uint32_t candidates_us[REMOLO_CHOOSER_CANDIDATES] = REMOLO_CHOOSER_CANDIDATES_US;

static inline uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

void chooser_init(struct chooser *c, uint32_t start_us)
{
	memset(c, 0, sizeof(*c));
	c->knee_us = UINT32_MAX;
	/* Start on the candidate nearest the configured start delay. */
	for (uint32_t k = 1; k < REMOLO_CHOOSER_CANDIDATES; k++) {
		uint32_t a = candidates_us[k] > start_us ? candidates_us[k] - start_us : start_us - candidates_us[k];
		uint32_t b = candidates_us[c->pick] > start_us ? candidates_us[c->pick] - start_us
							       : start_us - candidates_us[c->pick];
		if (a < b)
			c->pick = k;
	}
}

uint32_t chooser_candidate_us(uint32_t k)
{
	return k < REMOLO_CHOOSER_CANDIDATES ? candidates_us[k] : 0;
}

/* The memory's reading, or the delay the session before held while the
 * reading stays within 1/2^REMOLO_RECALL_KEEP_SHIFT of it: one session's
 * luck moves the reading, and a held delay that followed it would pool as
 * sessions that each hold their own do (remolo_limits.h). */
void chooser_recall(struct chooser *c, const struct playout_config *cfg, const struct recall *mem)
{
	uint32_t read, kept = mem->held_us, band = mem->held_us >> REMOLO_RECALL_KEEP_SHIFT;

	c->mem = *mem;
	c->holding = cfg->recall_permille && recall_usable(mem);
	read = c->holding ? recall_delay_us(mem, cfg->recall_permille) : 0;
	c->held_us = kept && read + band >= kept && read <= kept + band ? kept : read;
}

void chooser_rebase(struct chooser *c, uint64_t by_us)
{
	/* The shadows are in receiver time; only this session's record of
	 * lateness, measured against the lower offset, moves. The memory's
	 * was measured against its own sessions' offsets. */
	recall_rebase(&c->own, by_us);
	if (c->knee_us != UINT32_MAX)
		c->knee_us = c->knee_us > by_us ? c->knee_us - (uint32_t)by_us : 0;
}

void chooser_recall_out(const struct chooser *c, struct recall *out)
{
	recall_merge(out, &c->mem, &c->own);
	/* Dropped when the session let go: its network was another. */
	out->held_us = c->holding ? c->held_us : 0;
}

uint32_t chooser_delay_us(const struct chooser *c)
{
	return c->holding ? c->held_us : candidates_us[c->pick];
}

/* The session's own packets against the held delay. */
static void check_held(struct chooser *c, const struct playout_config *cfg)
{
	uint32_t own = recall_delay_us(&c->own, cfg->recall_permille);

	if (__builtin_expect(own * REMOLO_RECALL_CHECK_RATIO + REMOLO_RECALL_CHECK_SLACK_US < c->held_us ||
			     own > c->held_us * REMOLO_RECALL_CHECK_RATIO + REMOLO_RECALL_CHECK_SLACK_US, 0)) {
		c->holding = false;
		recall_init(&c->mem);
	}
}

void chooser_add(struct chooser *c, const struct playout_config *cfg, uint64_t rx_us, uint64_t ref_us,
		 uint32_t frame_us, bool joined)
{
	uint32_t shift = cfg->choose_horizon_shift;
	/* The catch-up's pace: a frame behind schedule plays in
	 * frame * 1000 / (1000 + catchup_permille). */
	uint64_t fast = (uint64_t)frame_us * 1000 / (1000 + cfg->catchup_permille);
	uint32_t best = 0;
	/* Without the costs (recall_permille alone) only the zero-delay
	 * shadow is needed: the memory's lateness. */
	uint32_t n = cfg->stall_weight ? REMOLO_CHOOSER_CANDIDATES : 1;

	for (uint32_t k = 0; k < n; k++) {
		uint64_t slot = ref_us + candidates_us[k];
		uint64_t busy = joined ? c->end_us[k] : 0;   /* the shadow plays until then */
		uint64_t from = later(slot, busy);
		uint64_t stall = 0, end, behind;

		if (__builtin_expect(rx_us > from, 0)) {
			/* Nothing to show from `from` until it arrives. */
			stall = rx_us - from;
			end = later(slot + frame_us, rx_us + fast);
		} else if (__builtin_expect(busy > slot, 0)) {
			/* Queued behind a late one: caught up. */
			end = later(slot + frame_us, busy + fast);
		} else {
			end = slot + frame_us;
		}
		c->end_us[k] = end;
		behind = end - (slot + frame_us);
		if (stall > REMOLO_CHOOSER_STALL_CAP_US)
			stall = REMOLO_CHOOSER_STALL_CAP_US;
		if (behind > REMOLO_CHOOSER_STALL_CAP_US)
			behind = REMOLO_CHOOSER_STALL_CAP_US;
		c->cost[k] = c->cost[k] - (c->cost[k] >> shift) + candidates_us[k] + behind +
			     (uint64_t)cfg->stall_weight * stall;
		if (k == 0 && cfg->recall_permille) {
			recall_add(&c->own, behind, frame_us);
			/* choose_floor's reading of the session (delay.c). */
			if (cfg->choose_floor && c->packets + 1 >= REMOLO_FLOOR_MIN_PACKETS &&
			    ((c->packets + 1) & (REMOLO_FLOOR_EVERY - 1)) == 0)
				c->knee_us = recall_delay_us(&c->own, cfg->recall_permille);
			if (c->holding && c->packets + 1 >= REMOLO_RECALL_CHECK_PACKETS && ((c->packets + 1) & 127) == 0)
				check_held(c, cfg);
		}
		if (c->cost[k] < c->cost[best])
			best = k;
	}
	c->packets++;
	/* Follow the leader, with a hysteresis of a share of its cost. */
	if (best != c->pick &&
	    c->cost[best] + c->cost[best] / 1000 * cfg->choose_hysteresis_permille < c->cost[c->pick])
		c->pick = best;
}
