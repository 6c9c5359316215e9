/* SPDX-License-Identifier: MIT */
/*
 * Playout: packets in, integer pointer deltas out, on the receiver's clock
 * (design note, parts 4 and 5). Glue over offset.c, delay.c, segq.c, keyq.c
 * and gesture.c, plus the button queue and the per-axis Q8 remainders; the
 * knobs are config.c's.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "remolo_playout.h"

_Static_assert(REMOLO_KEYS_PER_TICK >= 1 && REMOLO_KEYS_PER_TICK <= PLAYOUT_KEY_PER_TICK, "a tick's keys fit its frame");

#define BTNQ_MASK (REMOLO_BTNQ_CAP - 1)
#define MARKS_MASK (REMOLO_MARKS_CAP - 1)

int playout_init(struct playout *p, const struct playout_config *cfg)
{
	struct playout_config def;

	if (!cfg) {
		playout_config_default(&def);
		cfg = &def;
	}
	if (playout_config_check(cfg) < 0)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	offset_init(&p->clock);
	delay_init(&p->delay, &p->cfg);
	segq_init(&p->q);
	gtrack_init(&p->g);
	return 0;
}

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return diff(a, b) >= 0 ? a : b;
}

/* Remembers where the motion sent at tx_us plays to (motion_end_by). A
 * mark overwritten still counts, summed up: every forgotten mark was sent
 * at or before forgot_tx_us and plays to no later than forgot_end_us. */
static void mark_motion(struct playout *p, uint64_t tx_us, uint64_t end_us)
{
	struct playout_mark *m = &p->marks[p->marks_next];

	if (p->marks_len == REMOLO_MARKS_CAP) {
		if (!p->marks_forgot || diff(m->tx_us, p->forgot_tx_us) > 0)
			p->forgot_tx_us = m->tx_us;
		if (!p->marks_forgot || diff(m->end_us, p->forgot_end_us) > 0)
			p->forgot_end_us = m->end_us;
		p->marks_forgot = true;
	} else {
		p->marks_len++;
	}
	m->tx_us = tx_us;
	m->end_us = end_us;
	p->marks_next = (p->marks_next + 1) & MARKS_MASK;
}

/* The latest end of all motion remembered, whatever its sender time. */
static uint64_t marks_latest(const struct playout *p)
{
	uint64_t end = p->marks_floor_us;

	if (p->marks_forgot)
		end = later(end, p->forgot_end_us);
	for (uint32_t i = 0; i < p->marks_len; i++)
		end = later(end, p->marks[i].end_us);
	return end;
}

/* Starts the marks afresh: all motion placed so far plays to floor_us.
 * Sender times across a clock reset or step do not compare, so what was
 * queued before one goes before anything placed after it. */
static void marks_restart(struct playout *p, uint64_t floor_us)
{
	p->marks_len = 0;
	p->marks_next = 0;
	p->marks_forgot = false;
	p->marks_floor_us = floor_us;
}

/* Where the motion sent at or before tx_us plays to: a late key or button
 * of that sender time goes after it, so it keeps its place in sender
 * order, and not after motion the sender sent later (which may already be
 * queued: keys and buttons come over the control channel, often behind
 * the datagrams). When a forgotten mark may be later than tx_us, which of
 * the forgotten ones came before it is unknown: then after all the motion
 * queued (the queue's end), as late motion goes. */
static uint64_t motion_end_by(const struct playout *p, uint64_t tx_us)
{
	uint64_t end = p->marks_floor_us;

	if (p->marks_forgot) {
		if (diff(p->forgot_tx_us, tx_us) > 0)
			return later(marks_latest(p), p->q.tail_end_us);
		end = later(end, p->forgot_end_us);
	}
	for (uint32_t i = 0; i < p->marks_len; i++) {
		if (diff(p->marks[i].tx_us, tx_us) <= 0)
			end = later(end, p->marks[i].end_us);
	}
	return end;
}

static uint32_t clamp_u(int64_t v, uint32_t lo, uint32_t hi)
{
	if (v < (int64_t)lo)
		return lo;
	if (v > (int64_t)hi)
		return hi;
	return (uint32_t)v;
}

static int32_t bound(struct playout *p, int32_t v, int32_t max)
{
	if (__builtin_expect(v > max || v < -max, 0)) {
		p->stats.clamped++;
		return v > 0 ? max : -max;
	}
	return v;
}

static bool btn_index(uint16_t code, uint32_t *i)
{
	if (code < PLAYOUT_BTN_FIRST || code >= PLAYOUT_BTN_FIRST + PLAYOUT_BTN_COUNT)
		return false;
	*i = code - PLAYOUT_BTN_FIRST;
	return true;
}

static void btn_push(struct playout *p, uint64_t at_us, uint32_t idx, uint8_t down)
{
	struct btnq *b = &p->b;
	struct btnq_event *e;

	if (__builtin_expect(b->tail - b->head == REMOLO_BTNQ_CAP || b->overflow_mask, 0)) {
		b->overflow_mask |= (uint8_t)(1u << idx);
		if (down)
			b->overflow_down |= (uint8_t)(1u << idx);
		else
			b->overflow_down &= (uint8_t)~(1u << idx);
		p->stats.btn_collapsed++;
		return;
	}
	/* Buttons keep their order, whatever their timestamps say. */
	at_us = later(at_us, b->last_at_us);
	e = &b->ev[b->tail & BTNQ_MASK];
	e->at_us = at_us;
	e->code = (uint16_t)(PLAYOUT_BTN_FIRST + idx);
	e->down = down ? 1 : 0;
	b->tail++;
	b->last_at_us = at_us;
}

/* Emits due button events, at most one transition per button per tick so
 * that a click never becomes a down and up inside one SYN_REPORT frame;
 * none due after limit_us. */
static void btn_drain(struct playout *p, uint64_t now_us, uint64_t limit_us, struct playout_out *out)
{
	struct btnq *b = &p->b;
	uint8_t seen = 0;

	while (b->head != b->tail && out->nbtn < PLAYOUT_BTN_PER_TICK) {
		struct btnq_event *e = &b->ev[b->head & BTNQ_MASK];
		uint8_t bit = (uint8_t)(1u << (e->code - PLAYOUT_BTN_FIRST));

		if (diff(e->at_us, now_us) > 0 || diff(e->at_us, limit_us) > 0 || (seen & bit))
			break;
		b->head++;
		if (!!(b->state & bit) == e->down)
			continue;       /* no change: a repeated down or up */
		seen |= bit;
		b->state ^= bit;
		out->btn[out->nbtn].code = e->code;
		out->btn[out->nbtn].down = e->down;
		out->nbtn++;
		if (!out->due_us || diff(e->at_us, out->due_us) < 0)
			out->due_us = e->at_us;
	}
	if (b->head != b->tail || !b->overflow_mask)
		return;
	for (uint32_t i = 0; i < PLAYOUT_BTN_COUNT && out->nbtn < PLAYOUT_BTN_PER_TICK; i++) {
		uint8_t bit = (uint8_t)(1u << i);

		if (!(b->overflow_mask & bit) || (seen & bit))
			continue;
		b->overflow_mask &= (uint8_t)~bit;
		if ((b->state & bit) == (b->overflow_down & bit))
			continue;
		b->state ^= bit;
		out->btn[out->nbtn].code = (uint16_t)(PLAYOUT_BTN_FIRST + i);
		out->btn[out->nbtn].down = !!(b->state & bit);
		out->nbtn++;
	}
}

/* Where a time-stretched packet's segment lies (slew_permille). It is due
 * to end one (capped) frame after its slot, as in the design note, and
 * starts where the previous movement segment ends when that is still to
 * come (a segment that ended before this arrival left a stall, and
 * stretching over it would make part of this packet due at once):
 * - behind schedule (the previous segment ended later than its own slot
 *   said: a late packet, or one queued behind late ones), it plays at most
 *   1 + catchup_permille times faster than it happened, so a backlog drains
 *   by speeding up, never by a jump;
 * - otherwise within half a frame of the previous end (the applied delay
 *   moved by its slew), it joins and plays that much faster or slower
 *   instead of overlapping or leaving a gap.
 * It starts no earlier than its arrival, and ends no earlier than its slot
 * says. */
static void stretched(struct playout *p, uint64_t rx_us, uint64_t slot_us, bool joinable,
		      int64_t interval, uint64_t *start, uint32_t *dur)
{
	const struct playout_config *cfg = &p->cfg;
	uint32_t nom = clamp_u(interval, cfg->seg_min_us, cfg->seg_max_us);
	/* nom <= 1 s, catchup <= 1000: the quotient is at least nom / 2. */
	uint32_t fastest = (uint32_t)((uint64_t)nom * 1000 / (1000 + cfg->catchup_permille));
	uint64_t due = slot_us + nom, end;
	int64_t gap = diff(slot_us, p->move_end_us);

	*start = slot_us;
	if (joinable && diff(p->move_end_us, rx_us) >= 0) {
		bool behind = diff(p->move_end_us, p->move_due_us) > 0;

		if ((behind && gap <= 0) || (gap <= (int64_t)nom / 2 && gap >= -(int64_t)nom / 2))
			*start = p->move_end_us;
	}
	*start = later(*start, rx_us);
	end = later(due, *start + fastest);
	p->move_due_us = due;
	/* Both ends lie within a few segments of the slot, or of the arrival
	 * and the queue's end: far below 2^32 us apart. */
	*dur = (uint32_t)diff(end, *start);
}

/* Where a packet's motion plays: [*start, *start + *dur). */
static void motion_span(struct playout *p, uint64_t rx_us, uint64_t slot_us, bool late, int64_t interval,
			bool joinable, uint64_t *start, uint32_t *dur)
{
	const struct playout_config *cfg = &p->cfg;

	*start = slot_us;
	if (cfg->slew_permille) {
		stretched(p, rx_us, slot_us, joinable, interval, start, dur);
	} else if (late) {
		/* Missed its slot: replay from now, after what is queued, at
		 * about its own pace (design note, part 5). */
		*start = later(rx_us, p->q.tail_end_us);
		*dur = clamp_u(interval, cfg->late_min_us, cfg->late_max_us);
	} else if (cfg->seg_end_at_slot) {
		/* On time means rx <= slot. A packet that arrives inside its own
		 * interval plays what is left of it faster rather than late. */
		*dur = clamp_u(interval, cfg->seg_min_us, cfg->seg_max_us);
		*start = later(slot_us - *dur, rx_us);
		*dur = (uint32_t)(slot_us - *start);
	} else {
		*dur = clamp_u(interval, cfg->seg_min_us, cfg->seg_max_us);
	}
}

/* Queues motion (a, b) of kind, sent at tx_us (or, recovered, after it),
 * over [start, start + dur), merged into the newest segment when the ring
 * is full, or applied at the next tick when the ring holds only the other
 * kind; and marks where it plays to. */
static int queue_motion(struct playout *p, uint64_t rx_us, uint64_t tx_us, uint8_t kind, int64_t a, int64_t b,
			uint64_t start, uint32_t dur, bool late)
{
	bool scroll = kind == PLAYOUT_KIND_SCROLL;
	int r = segq_push(&p->q, kind, start, dur, a, b);

	if (r >= 0) {
		/* Merged, it plays within the segment it joined, which ends
		 * no later than the queue does. */
		mark_motion(p, tx_us, r == 0 ? start + dur : p->q.tail_end_us);
	} else {
		mark_motion(p, tx_us, rx_us);
	}
	if (r == 0) {
		p->last_activity_us = later(p->last_activity_us, start + dur);
		p->move_end_us = start + dur;
		p->last_due_us = start + dur;
		p->last_due_strict = dur == 0;
		return late ? PLAYOUT_PUSH_LATE : PLAYOUT_PUSH_ON_TIME;
	}
	if (r == 1) {
		p->stats.merged++;
		p->last_due_us = p->q.tail_end_us;
		p->last_due_strict = false;
		return PLAYOUT_PUSH_MERGED;
	}
	p->acc[scroll ? 2 : 0] += a;
	p->acc[scroll ? 3 : 1] += b;
	p->stats.forced++;
	p->last_due_us = rx_us;
	p->last_due_strict = true;
	return PLAYOUT_PUSH_FORCED;
}

static int push_motion(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt,
		       uint64_t slot_us, bool late, int64_t interval, bool joinable)
{
	int32_t max = pkt->kind == PLAYOUT_KIND_SCROLL ? REMOLO_MAX_SCROLL_Q8 : REMOLO_MAX_MOTION_Q8;
	uint64_t start;
	uint32_t dur;

	motion_span(p, rx_us, slot_us, late, interval, joinable, &start, &dur);
	return queue_motion(p, rx_us, pkt->tx_us, pkt->kind, bound(p, pkt->a, max), bound(p, pkt->b, max), start, dur,
			    late);
}

/* The delay as applied to this packet's slot, time-stretched
 * (slew_permille): the schedule keeps its place in receiver time when the
 * offset moves, then follows offset + delay by at most slew_permille of the
 * sender time elapsed. While nothing is playing there is no schedule to
 * keep and the delay applies at once. A late packet does not move the
 * schedule: the packets after it may well be on time (a single datagram
 * held by the air, not a queue); the segments behind it speed up to catch
 * up (stretched). */
static uint64_t applied_delay(struct playout *p, uint64_t rx_us, uint64_t tx_us, int ev,
			      int64_t offset_before, uint32_t delay)
{
	const struct playout_config *cfg = &p->cfg;
	/* Offsets may be anywhere in int64 under a hostile sender: take the
	 * change in unsigned space; anything beyond step_reset_us re-anchors. */
	int64_t moved = (int64_t)((uint64_t)p->clock.offset_us - (uint64_t)offset_before);
	int64_t bound_us = (int64_t)cfg->step_reset_us;
	int64_t keep_us = cfg->keep_max_us && cfg->keep_max_us < cfg->step_reset_us ? (int64_t)cfg->keep_max_us
										: bound_us;
	int64_t a = p->applied_us;
	bool playing = p->prev_move && diff(p->move_end_us, rx_us) > 0;

	if (!p->have_applied || !playing || ev == OFFSET_EVENT_RESET || ev == OFFSET_EVENT_STEP ||
	    moved > keep_us || moved < -keep_us) {
		a = delay;
	} else {
		int64_t dt = p->have_prev ? diff(tx_us, p->prev_tx_us) : 0;
		int64_t step;

		if (dt < 0)
			dt = 0;
		if (dt > (int64_t)cfg->seg_max_us)
			dt = cfg->seg_max_us;
		/* dt <= 1 s and slew <= 1000: no overflow. */
		step = dt * cfg->slew_permille / 1000;
		a -= moved;
		if (a > (int64_t)delay)
			a = a - step > (int64_t)delay ? a - step : delay;
		else
			a = a + step < (int64_t)delay ? a + step : delay;
		/* Within a stall's worth of the target, never negative. */
		if (a > (int64_t)delay + bound_us)
			a = (int64_t)delay + bound_us;
		if (a < 0)
			a = 0;
	}
	p->applied_us = a;
	p->have_applied = true;
	return (uint64_t)a;
}

/* Where a packet plays: feeds the clock and the delay with its arrival and
 * fills *pl: its slot (sender time + offset + delay), whether it arrived
 * after that, and the interval its motion spreads over. */
struct placed {
	uint64_t slot;
	int64_t interval;
	bool late;
	bool joinable;
	/* The previous packet's sender time, when the schedule still holds
	 * it (no clock reset since): where recovered motion began. */
	uint64_t prev_tx;
	bool had_prev;
};

static void place(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt, struct placed *pl)
{
	const struct playout_config *cfg = &p->cfg;
	uint64_t lateness;
	int64_t offset_before;
	uint32_t delay;
	int ev;
	bool move;

	p->stats.packets++;
	offset_before = p->clock.offset_us;
	ev = offset_update(&p->clock, cfg, rx_us, pkt->tx_us, &lateness);
	/* The offsets may be anywhere in int64 under a hostile sender:
	 * subtract in unsigned space (the difference is positive). */
	if (ev == OFFSET_EVENT_RISE && p->clock.offset_us > offset_before)
		delay_rebase(&p->delay, cfg, (uint64_t)p->clock.offset_us - (uint64_t)offset_before);
	if (ev == OFFSET_EVENT_RESET)
		p->stats.clock_resets++;
	else if (ev == OFFSET_EVENT_STEP)
		p->stats.clock_steps++;
	if (ev == OFFSET_EVENT_RESET || ev == OFFSET_EVENT_STEP)
		marks_restart(p, later(marks_latest(p), p->q.tail_end_us));
	delay = delay_update(&p->delay, cfg, lateness);
	pl->joinable = p->prev_move && ev != OFFSET_EVENT_RESET;

	/* The packet's slot: sender time + offset + delay. Since the offset
	 * is at most this packet's (arrival - sender time), the slot is never
	 * more than one delay ahead of the arrival. */
	if (cfg->slew_permille) {
		uint64_t applied = applied_delay(p, rx_us, pkt->tx_us, ev, offset_before, delay);

		pl->slot = pkt->tx_us + (uint64_t)p->clock.offset_us + applied;
		pl->late = lateness > applied;
	} else {
		pl->slot = pkt->tx_us + (uint64_t)p->clock.offset_us + delay;
		pl->late = lateness > delay;
	}
	if (pl->late)
		p->stats.late++;

	/* Time since the previous packet, on the sender's clock; the first
	 * one after a reset spreads over the longest segment. */
	pl->had_prev = p->have_prev && ev != OFFSET_EVENT_RESET;
	pl->prev_tx = p->prev_tx_us;
	pl->interval = pl->had_prev ? diff(pkt->tx_us, p->prev_tx_us) : (int64_t)cfg->seg_max_us;
	move = pkt->kind == PLAYOUT_KIND_MOTION || pkt->kind == PLAYOUT_KIND_SCROLL;
	if (cfg->frame_max_us && move) {
		/* The sender sums a frame's movement and sends it at the frame's
		 * end: after a pause the motion is one frame's, not the pause's.
		 * Where the counter says datagrams were lost in between (lost_n,
		 * redundancy only), the interval holds that many frames more. */
		int64_t per = pl->interval > 0 ? pl->interval / ((int64_t)pkt->lost_n + 1) : pl->interval;

		if (p->prev_move && ev != OFFSET_EVENT_RESET && per > 0 && per <= (int64_t)cfg->frame_max_us)
			p->frame_us = (uint32_t)per;
		if (p->frame_us && pl->interval > (int64_t)p->frame_us)
			pl->interval = p->frame_us;
		/* A packet older than the previous one (reordered) still
		 * carries one frame of motion, not a zero-length one. */
		if (pl->interval <= 0 && p->frame_us)
			pl->interval = p->frame_us;
		/* Before any frame is known (the session's first packet), one
		 * frame is at most frame_max_us. */
		if (!p->frame_us && pl->interval > (int64_t)cfg->frame_max_us)
			pl->interval = cfg->frame_max_us;
	}
	if (move && (cfg->stall_weight || cfg->recall_permille))
		delay_observe(&p->delay, cfg, rx_us, pkt->tx_us + (uint64_t)p->clock.offset_us,
			      clamp_u(pl->interval, cfg->seg_min_us, cfg->seg_max_us), pl->joinable);
	p->prev_move = move;
	p->prev_tx_us = pkt->tx_us;
	p->have_prev = true;
	/* Heartbeats keep the clock estimate fresh but are not activity: an
	 * idle trackpad on screen sends them every 100 ms, and the drain timer
	 * must still stop (design note, part 5). */
	if (pkt->kind != PLAYOUT_KIND_HEARTBEAT)
		p->last_activity_us = later(p->last_activity_us, rx_us);
}

/* Motion the packet recovered for the datagrams lost just before it
 * (pkt.lost, the redundancy feature), bounded by the single-packet bound
 * per lost datagram, into a[0..3]. False when there is none. */
static bool lost_motion(struct playout *p, const struct playout_pkt *pkt, int64_t a[4])
{
	int64_t n = pkt->lost_n < REMOLO_LOST_BOUND_DATAGRAMS ? pkt->lost_n : REMOLO_LOST_BOUND_DATAGRAMS;
	bool any = false;

	if (n < 1)
		n = 1;
	for (int i = 0; i < 4; i++) {
		int64_t max = (int64_t)(i < 2 ? REMOLO_MAX_MOTION_Q8 : REMOLO_MAX_SCROLL_Q8) * n;

		a[i] = pkt->lost[i];
		if (a[i] > max || a[i] < -max) {
			p->stats.clamped++;
			a[i] = a[i] > 0 ? max : -max;
		}
		any |= a[i] != 0;
	}
	return any;
}

/* Where recovered motion plays, as a segment of its own (frame_max_us). On
 * the schedule it would have played right after the previous packet's
 * frame, over the lost datagrams' frames (lost_n of them, within the time
 * since the previous packet), ending where this packet's own frame
 * begins: that is where it goes, as much of it as is still to come, over
 * at most lost_span_max_us (still ending on time). Arrived too late for
 * that, it plays from the arrival, or joins the end of the queue, at up to
 * 1 + catchup_permille times its own pace, as a late packet does
 * (stretched). */
static void lost_span(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt, const struct placed *pl,
		      uint64_t *start, uint32_t *dur)
{
	const struct playout_config *cfg = &p->cfg;
	int64_t n = pkt->lost_n ? pkt->lost_n : 1;
	int64_t since = pl->had_prev ? diff(pkt->tx_us, pl->prev_tx) : -1;
	int64_t frame = p->frame_us ? p->frame_us : (since > 0 ? since / (n + 1) : (int64_t)cfg->frame_max_us);
	int64_t span = frame * n, len;
	uint64_t nom_start, nom_end, end;

	/* Between the previous packet's frame and this one's. */
	if (since >= 0 && span > since - frame)
		span = since - frame > 0 ? since - frame : 0;
	if (span > (int64_t)PLAYOUT_CFG_SEG_MAX_US)
		span = PLAYOUT_CFG_SEG_MAX_US;
	if (since >= 0 && since - frame < (int64_t)PLAYOUT_CFG_SEG_MAX_US)
		nom_start = pl->slot - (uint64_t)since + (uint64_t)frame;
	else
		nom_start = pl->slot - (uint64_t)span;
	nom_end = nom_start + (uint64_t)span;
	len = cfg->lost_span_max_us && span > (int64_t)cfg->lost_span_max_us ? cfg->lost_span_max_us : span;
	*start = nom_end - (uint64_t)len;
	if (cfg->slew_permille) {
		/* Still playing: join the end of what is queued, no overlap, no gap. */
		if (pl->joinable && diff(p->move_end_us, rx_us) >= 0)
			*start = p->move_end_us;
		*start = later(*start, rx_us);
		end = later(nom_end, *start + (uint64_t)(len * 1000 / (1000 + cfg->catchup_permille)));
		p->move_due_us = nom_end;
	} else {
		*start = later(*start, rx_us);
		end = diff(nom_end, *start) > 0 ? nom_end : *start + clamp_u(len, cfg->late_min_us, cfg->late_max_us);
	}
	/* Both ends lie within a second or so of the arrival. */
	*dur = (uint32_t)diff(end, *start);
}

/* Plays the motion a packet recovered, once: as a segment of its own
 * (lost_span), or, where a packet spreads over the whole time since the
 * previous one (frame_max_us 0), as the packet's own motion is placed. */
static void recover(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt, const struct placed *pl)
{
	int64_t a[4];
	uint64_t start, tx;
	uint32_t dur;

	if (!lost_motion(p, pkt, a))
		return;
	/* Marked at the earliest sender time it may have, so a late key sent
	 * after any of it goes after all of it: the lost datagrams were sent
	 * after the motion marked last (the previous packet may be a key from
	 * the control channel, sent after some of them). With no mark since a
	 * reset (or one the clock says is not older), the longest span
	 * recovered motion covers (a segment of at most PLAYOUT_CFG_SEG_MAX_US,
	 * ending within one more before this packet) bounds it. */
	tx = pkt->tx_us - 2 * (uint64_t)PLAYOUT_CFG_SEG_MAX_US;
	if (p->marks_len) {
		uint64_t last = p->marks[(p->marks_next - 1) & MARKS_MASK].tx_us;

		if (diff(last, pkt->tx_us) < 0)
			tx = last + 1;
	}
	if (p->cfg.frame_max_us)
		lost_span(p, rx_us, pkt, pl, &start, &dur);
	else
		motion_span(p, rx_us, pl->slot, pl->late, pl->interval, pl->joinable, &start, &dur);
	p->stats.recovered++;
	p->lost_start_us = start;
	p->lost_end_us = start + dur;
	for (int k = 0; k < 2; k++) {
		if (a[2 * k] || a[2 * k + 1])
			(void)queue_motion(p, rx_us, tx, k ? PLAYOUT_KIND_SCROLL : PLAYOUT_KIND_MOTION, a[2 * k],
					   a[2 * k + 1], start, dur, pl->late);
	}
}

/* When a button or key event plays: at its slot, or, when it missed its
 * slot, from its arrival but after the motion sent at or before it
 * (motion_end_by), so it keeps its place in sender order rather than
 * waiting for motion sent after it. Buttons and keys share one order: each
 * goes after the other queue's newest event, and a key strictly after a
 * button (on a tie the drain lets a key out first). */
static uint64_t event_at(const struct playout *p, uint64_t rx_us, uint64_t tx_us, const struct placed *pl,
			 bool key)
{
	uint64_t at = pl->late ? later(rx_us, motion_end_by(p, tx_us)) : pl->slot;

	if (key)
		return later(at, p->b.last_at_us + 1);
	return later(at, p->k.last_at_us);
}

static int push_key(struct playout *p, uint64_t at_us, uint16_t code, uint8_t down)
{
	if (keyq_push(&p->k, at_us, code, down) == 1) {
		p->stats.key_folded++;
		return 1;
	}
	return 0;
}

/* A gesture state spreads over its frame as motion does (motion_span), but
 * on a schedule of its own: it neither joins nor moves the motion
 * segments' stretched schedule, since a swipe and a stroke are never on
 * the pad at once. Its end plays where its last state ends. */
static int push_gesture(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt, const struct placed *pl)
{
	const struct playout_config *cfg = &p->cfg;
	uint64_t start = later(pl->slot, rx_us);
	uint32_t dur = 0;
	bool began;
	int r;

	if (pkt->g.type != PLAYOUT_GESTURE_END)
		dur = pl->late ? clamp_u(pl->interval, cfg->late_min_us, cfg->late_max_us)
			       : clamp_u(pl->interval, cfg->seg_min_us, cfg->frame_max_us ? cfg->frame_max_us : cfg->seg_max_us);
	r = gtrack_push(&p->g, rx_us, pkt, start, dur, &began);
	if (r == PLAYOUT_PUSH_REJECTED) {
		p->stats.gesture_refused++;
		return r;
	}
	p->stats.gesture_states++;
	p->stats.gestures += began;
	p->last_activity_us = later(p->last_activity_us, start + dur);
	if (r == PLAYOUT_PUSH_MERGED)
		return r;
	return pl->late ? PLAYOUT_PUSH_LATE : PLAYOUT_PUSH_ON_TIME;
}

int playout_push(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt)
{
	struct placed pl;
	uint32_t idx = 0;
	int why;

	if (__builtin_expect(pkt->kind < PLAYOUT_KIND_MOTION || pkt->kind > PLAYOUT_KIND_GESTURE ||
			     (pkt->kind == PLAYOUT_KIND_BUTTON && !btn_index(pkt->code, &idx)) ||
			     (pkt->kind == PLAYOUT_KIND_GESTURE && pkt->g.type > PLAYOUT_GESTURE_PINCH), 0)) {
		p->stats.rejected++;
		return PLAYOUT_PUSH_REJECTED;
	}
	/* A refused key changes nothing, the clock included. */
	if (pkt->kind == PLAYOUT_KIND_KEY) {
		why = keyq_check(&p->k, pkt->code, pkt->down);
		if (why != PLAYOUT_KEY_REFUSED_NONE) {
			p->stats.key_refused[why]++;
			return PLAYOUT_PUSH_REJECTED + why;
		}
	}
	place(p, rx_us, pkt, &pl);
	recover(p, rx_us, pkt, &pl);

	switch (pkt->kind) {
	case PLAYOUT_KIND_MOTION:
	case PLAYOUT_KIND_SCROLL:
		return push_motion(p, rx_us, pkt, pl.slot, pl.late, pl.interval, pl.joinable);
	case PLAYOUT_KIND_BUTTON:
		btn_push(p, event_at(p, rx_us, pkt->tx_us, &pl, false), idx, pkt->down);
		return pl.late ? PLAYOUT_PUSH_LATE : PLAYOUT_PUSH_ON_TIME;
	case PLAYOUT_KIND_KEY:
		if (push_key(p, event_at(p, rx_us, pkt->tx_us, &pl, true), pkt->code, pkt->down))
			return PLAYOUT_PUSH_MERGED;
		return pl.late ? PLAYOUT_PUSH_LATE : PLAYOUT_PUSH_ON_TIME;
	case PLAYOUT_KIND_GESTURE:
		return push_gesture(p, rx_us, pkt, &pl);
	default:
		return PLAYOUT_PUSH_ON_TIME;    /* heartbeat: timing only */
	}
}

bool playout_keys_fit(struct playout *p, uint32_t need, uint32_t changes,
		      uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT])
{
	if (need <= keyq_room(&p->k))
		return true;
	p->stats.key_refused[PLAYOUT_KEY_REFUSED_FLOOD] += changes;
	if (refused)
		refused[PLAYOUT_KEY_REFUSED_FLOOD] += changes;
	return false;
}

uint32_t playout_push_keys(struct playout *p, uint64_t rx_us, uint64_t tx_us, const struct playout_key *keys,
			   uint32_t n, uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT])
{
	struct playout_pkt pkt = { .tx_us = tx_us, .kind = PLAYOUT_KIND_KEY };
	struct placed pl;
	uint64_t at = 0;
	uint32_t accepted = 0;

	for (uint32_t i = 0; i < n; i++) {
		int why = keyq_check(&p->k, keys[i].code, keys[i].down);

		if (why != PLAYOUT_KEY_REFUSED_NONE) {
			p->stats.key_refused[why]++;
			if (refused)
				refused[why]++;
			continue;
		}
		/* One sender time, one arrival: the clock hears of it once,
		 * and every key of the batch shares its slot. */
		if (accepted++ == 0) {
			place(p, rx_us, &pkt, &pl);
			at = event_at(p, rx_us, tx_us, &pl, true);
		}
		(void)push_key(p, at, keys[i].code, keys[i].down);
	}
	return accepted;
}

/* Round half away from zero; the remainder stays in [-128, 128]. */
static int32_t take_q8(int64_t *acc)
{
	int64_t whole = (*acc >= 0 ? *acc + REMOLO_Q8_ONE / 2 : *acc - REMOLO_Q8_ONE / 2) / REMOLO_Q8_ONE;

	/* One tick never carries more than a few full-bound packets. */
	if (whole > INT32_MAX / 2)
		whole = INT32_MAX / 2;
	if (whole < -(INT32_MAX / 2))
		whole = -(INT32_MAX / 2);
	*acc -= whole * REMOLO_Q8_ONE;
	return (int32_t)whole;
}

/* Legacy wheel notches follow the hi-res stream: one per 120 units. */
static int32_t take_notches(int32_t *notch_acc, int32_t hires)
{
	int32_t n;

	*notch_acc += hires;
	n = *notch_acc / REMOLO_HIRES_PER_NOTCH;
	*notch_acc -= n * REMOLO_HIRES_PER_NOTCH;
	return n;
}

/* Buttons go to the pointer device and keys to the keyboard device, the
 * pointer's frame written first; across two devices a reader only keeps
 * the order of ticks. So one tick lets out buttons due before its first key
 * and then keys due no later than the first button that has to wait:
 * Ctrl+click stays Ctrl, then click, a tick apart, never click then Ctrl. */
static void buttons_and_keys(struct playout *p, uint64_t now_us, struct playout_out *out)
{
	uint64_t first_key, key_limit = now_us, key_due = 0;

	if (keyq_head_due(&p->k, &first_key) && diff(first_key, now_us) <= 0)
		btn_drain(p, now_us, first_key - 1, out);
	else
		btn_drain(p, now_us, now_us, out);
	/* The oldest button still queued, if due, holds back later keys. */
	if (p->b.head != p->b.tail && diff(p->b.ev[p->b.head & BTNQ_MASK].at_us, now_us) <= 0)
		key_limit = p->b.ev[p->b.head & BTNQ_MASK].at_us;
	if (keyq_drain(&p->k, now_us, key_limit, out->key, &out->nkey, REMOLO_KEYS_PER_TICK, &key_due) &&
	    (!out->due_us || diff(key_due, out->due_us) < 0))
		out->due_us = key_due;
	p->stats.keys += out->nkey;
}

void playout_tick(struct playout *p, uint64_t now_us, struct playout_out *out)
{
	/* The drain clock only moves forward. */
	now_us = later(now_us, p->last_now_us);
	p->last_now_us = now_us;

	memset(out, 0, sizeof(*out));
	segq_drain(&p->q, now_us, p->acc);
	out->due_us = p->q.began_us;
	out->dx = take_q8(&p->acc[0]);
	out->dy = take_q8(&p->acc[1]);
	out->wheel_hires = take_q8(&p->acc[2]);
	out->hwheel_hires = take_q8(&p->acc[3]);
	out->wheel = take_notches(&p->notch_acc[0], out->wheel_hires);
	out->hwheel = take_notches(&p->notch_acc[1], out->hwheel_hires);
	buttons_and_keys(p, now_us, out);
	if (!gtrack_idle(&p->g) || p->g.lift_now || p->g.lift_next) {
		out->touch_changed = gtrack_drain(&p->g, now_us, &out->touch, &out->touch_timed_out);
		p->stats.gesture_timeouts += out->touch_timed_out;
	}

	out->idle = segq_len(&p->q) == 0 && p->b.head == p->b.tail && !p->b.overflow_mask &&
		    keyq_len(&p->k) == 0 && !p->k.releasing && gtrack_idle(&p->g) && !p->g.lift_next &&
		    diff(now_us, p->last_activity_us) >= (int64_t)p->cfg.idle_us;
}

void playout_flush(struct playout *p, uint64_t now_us)
{
	for (uint32_t i = p->q.head; i != p->q.tail; i++) {
		struct segq_seg *s = &p->q.seg[i & (REMOLO_SEGQ_CAP - 1)];

		/* Due by now_us: a tick at now_us emits all of it (one more
		 * microsecond, so a zero-length segment is due too). */
		s->start_us = now_us - s->dur_us - 1;
	}
	for (uint32_t i = p->b.head; i != p->b.tail; i++)
		p->b.ev[i & BTNQ_MASK].at_us = now_us;
	p->b.last_at_us = now_us;
	p->q.tail_end_us = now_us;
	p->move_end_us = now_us;
	p->move_due_us = now_us;
	marks_restart(p, now_us);
	/* Then every button ends up released. */
	p->b.overflow_mask = (uint8_t)((1u << PLAYOUT_BTN_COUNT) - 1);
	p->b.overflow_down = 0;
	keyq_flush(&p->k, now_us);
	gtrack_flush(&p->g, now_us);
}
