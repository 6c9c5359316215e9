// SPDX-License-Identifier: MIT
/*
 * A session's gesture track (remolo_playout.h, struct gtrack): gesture
 * states in, what the touchpad shows out, on the drain clock.
 *
 * A state is absolute (the centroid's offset, scale and turn since the
 * gesture began: docs/protocol.md, "Gestures"), so the track does not sum
 * anything: each queued state is a segment along which the shown state
 * moves from the one before, as a motion segment spreads a frame's delta.
 * A lost state costs a step; the next one carries the whole gesture.
 *
 * Fingers go down when a gesture's first segment starts and lift one
 * drain tick after its last state has played: libinput takes a touch's
 * final position from the frame before its lift, and a lift in the same
 * frame as the last move would drop that move.
 */
#include <string.h>

#include "remolo_playout.h"

#define GESTQ_MASK (REMOLO_GESTQ_CAP - 1)

static const int32_t rest[4] = { 0, 0, REMOLO_GESTURE_SCALE_ONE, 0 };

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

void gtrack_init(struct gtrack *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->from, rest, sizeof(t->from));
	t->shown.scale_q16 = REMOLO_GESTURE_SCALE_ONE;
}

static struct gtrack_seg *newest(struct gtrack *t)
{
	return t->head == t->tail ? NULL : &t->seg[(t->tail - 1) & GESTQ_MASK];
}

/* The session's gesture `id` is over: later states of it are refused. */
static void end_open(struct gtrack *t, uint8_t id)
{
	t->open = false;
	t->ended_id = id;
	t->ended_valid = true;
}

/* A state into a queued segment, over [start_us, start_us + dur_us). */
static void take_state(struct gtrack_seg *s, const struct playout_pkt *pkt, uint64_t start_us, uint32_t dur_us)
{
	s->id = pkt->g.id;
	s->type = pkt->g.type;
	s->fingers = pkt->g.fingers;
	s->flags = pkt->g.flags;
	s->start_us = start_us;
	s->dur_us = dur_us;
	s->to[0] = pkt->a;
	s->to[1] = pkt->b;
	s->to[2] = pkt->g.scale_q16;
	s->to[3] = pkt->g.angle_urad;
}

int gtrack_push(struct gtrack *t, uint64_t rx_us, const struct playout_pkt *pkt, uint64_t start_us,
		uint32_t dur_us, bool *began)
{
	const struct playout_gesture *g = &pkt->g;
	struct gtrack_seg *s, *last = newest(t);
	bool end_only = g->type == PLAYOUT_GESTURE_END;

	*began = false;
	if (end_only) {
		if (!t->open || t->open_id != g->id) {
			/* Ended by its last state already (the usual case: the
			 * end follows it on the control channel), or its states
			 * were all lost or are yet to come: whichever, that
			 * gesture is over. */
			end_open(t, g->id);
			return PLAYOUT_PUSH_ON_TIME;
		}
	} else if (__builtin_expect(t->ended_valid && g->id == t->ended_id && !t->open, 0)) {
		/* The control channel's end overtook this state (TCP passes
		 * UDP; a sender sends the last state and the end together):
		 * while that end waits in the queue, the state takes its place
		 * as the gesture's last. Otherwise an id that ended stays ended:
		 * a state after the end has played, or after the receiver's own
		 * timeout. */
		if (last && last->id == g->id && last->type == PLAYOUT_GESTURE_END) {
			take_state(last, pkt, start_us, dur_us);
			last->flags = PLAYOUT_GESTURE_FLAG_LAST;
			t->last_rx_us = rx_us;
			return PLAYOUT_PUSH_ON_TIME;
		}
		return PLAYOUT_PUSH_REJECTED;
	} else if (!t->open || t->open_id != g->id) {
		/* A new id begins a gesture; the one open (its end lost or
		 * still on its way) ends where this one starts. */
		if (t->open)
			end_open(t, t->open_id);
		t->open = true;
		t->open_id = g->id;
		*began = true;
	}
	t->last_rx_us = rx_us;
	if (__builtin_expect(t->tail - t->head == REMOLO_GESTQ_CAP, 0)) {
		/* Full: join the newest state of this gesture (states are
		 * absolute, so only a step is lost); nothing of it to join,
		 * refuse, and the next state begins it. */
		if (!last || last->id != g->id || *began) {
			if (*began)
				t->open = false;
			return PLAYOUT_PUSH_REJECTED;
		}
		if (!end_only) {
			memcpy(last->to, (int32_t[4]){ pkt->a, pkt->b, g->scale_q16, g->angle_urad }, sizeof(last->to));
			last->dur_us = (uint32_t)(diff(start_us + dur_us, last->start_us) > 0
							  ? diff(start_us + dur_us, last->start_us) : 0);
		}
		last->flags |= end_only ? PLAYOUT_GESTURE_FLAG_LAST : g->flags;
		if (last->flags & PLAYOUT_GESTURE_FLAG_LAST)
			end_open(t, g->id);
		return PLAYOUT_PUSH_MERGED;
	}
	s = &t->seg[t->tail++ & GESTQ_MASK];
	/* An end ends where the gesture's last queued state does, or now. */
	take_state(s, pkt, end_only && last && last->id == g->id ? last->start_us + last->dur_us : start_us,
		   end_only ? 0 : dur_us);
	if (end_only)
		s->flags = PLAYOUT_GESTURE_FLAG_LAST;
	if (s->flags & PLAYOUT_GESTURE_FLAG_LAST)
		end_open(t, g->id);
	return PLAYOUT_PUSH_ON_TIME;
}

static void lift(struct gtrack *t)
{
	memset(&t->shown, 0, sizeof(t->shown));
	t->shown.scale_q16 = REMOLO_GESTURE_SCALE_ONE;
	memcpy(t->from, rest, sizeof(t->from));
	t->lift_next = false;
}

/* from + (to - from) * num / den, per field; den > 0, num in [0, den]. */
static void between(const int32_t from[4], const int32_t to[4], uint64_t num, uint64_t den, int32_t out[4])
{
	for (int i = 0; i < 4; i++) {
		int64_t d = (int64_t)to[i] - from[i];

		/* |d| < 2^32 and num <= den < 2^32: the product fits. */
		out[i] = (int32_t)(from[i] + d * (int64_t)num / (int64_t)den);
	}
}

bool gtrack_drain(struct gtrack *t, uint64_t now_us, struct playout_touch *touch, bool *timed_out)
{
	struct playout_touch before = t->shown;
	int32_t cur[4];

	*timed_out = false;
	if (t->lift_next)
		lift(t);
	while (t->head != t->tail) {
		struct gtrack_seg *s = &t->seg[t->head & GESTQ_MASK];
		int64_t into = diff(now_us, s->start_us);
		uint32_t dur = s->dur_us;

		if (into < 0)
			break;
		/* A state ends where the next one starts, when that is sooner:
		 * the first state after a pause spreads over a whole frame bound
		 * (frame_max_us) and the next must not find it unfinished. */
		if (t->tail - t->head > 1) {
			int64_t gap = diff(t->seg[(t->head + 1) & GESTQ_MASK].start_us, s->start_us);

			if (gap < (int64_t)dur)
				dur = gap > 0 ? (uint32_t)gap : 0;
		}
		if (s->type == PLAYOUT_GESTURE_END) {
			/* The control channel's end: lift unless another gesture
			 * has taken the pad meanwhile. */
			if (t->shown.fingers && t->shown_id == s->id)
				t->lift_next = true;
			t->head++;
			continue;
		}
		if (!t->shown.fingers || t->shown_id != s->id) {
			/* A gesture begins: from rest. One that was shown and
			 * never ended lifts in this same frame (tpdev lifts and
			 * puts down in one frame, new tracking ids). */
			memcpy(t->from, rest, sizeof(t->from));
			t->shown_id = s->id;
			t->lift_next = false;
		}
		t->shown.fingers = s->fingers;
		t->shown.type = s->type;
		if ((uint64_t)into >= dur) {
			memcpy(cur, s->to, sizeof(cur));
			memcpy(t->from, s->to, sizeof(t->from));
			if (s->flags & PLAYOUT_GESTURE_FLAG_LAST)
				t->lift_next = true;
			t->head++;
		} else {
			between(t->from, s->to, (uint64_t)into, dur, cur);
		}
		t->shown.x_um = cur[0];
		t->shown.y_um = cur[1];
		t->shown.scale_q16 = cur[2];
		t->shown.angle_urad = cur[3];
		if ((uint64_t)into < dur)
			break;
	}
	/* The last guard: a gesture nobody renews (its sender forgot the
	 * end, and the session lives on) lifts, and stays ended. */
	if (t->open && diff(now_us, t->last_rx_us) >= (int64_t)REMOLO_GESTURE_STALE_US) {
		end_open(t, t->open_id);
		t->head = t->tail;
		t->lift_next = true;
		*timed_out = true;
	}
	if (t->lift_now) {
		t->lift_now = false;
		lift(t);
	}
	*touch = t->shown;
	return before.fingers != t->shown.fingers || before.x_um != t->shown.x_um ||
	       before.y_um != t->shown.y_um || before.scale_q16 != t->shown.scale_q16 ||
	       before.angle_urad != t->shown.angle_urad || before.type != t->shown.type;
}

void gtrack_flush(struct gtrack *t, uint64_t now_us)
{
	for (uint32_t i = t->head; i != t->tail; i++) {
		struct gtrack_seg *s = &t->seg[i & GESTQ_MASK];

		s->start_us = now_us - s->dur_us;
	}
	if (t->open)
		end_open(t, t->open_id);
	t->lift_now = true;
}
