/* SPDX-License-Identifier: MIT */
/*
 * The key queue (see remolo_playout.h): a session's key presses and
 * releases in push order, each due at the slot its sender time got, let out
 * by the drain at most one change per key per tick.
 *
 * Three rules keep every key from sticking:
 * - the session's intended state (want) refuses a press of a key already
 *   down and a release of a key not down, so the queue only ever holds
 *   alternating changes of each key and every release has its press before
 *   it;
 * - a press keeps a place in the ring for its release: it is taken only
 *   while the ring has room for it, its release and the release of every
 *   key wanted down (keyq_room), so a release always finds room and a full
 *   ring refuses presses only. Nothing is folded then, and a sender whose
 *   press was refused gets the next one taken as soon as the ring plays two
 *   changes. (The overflow release set below remains for keyq_flush and
 *   as a guard: a release that still met a full ring is folded there, let
 *   out once the ring has drained, and while it is pending every press is
 *   refused, so no press can overtake it.)
 * - keyq_flush makes every queued event due and then releases every key.
 */
#include <string.h>

#include "remolo_playout.h"

#define KEYQ_MASK (REMOLO_KEYQ_CAP - 1)

_Static_assert(REMOLO_KEYQ_CAP >= REMOLO_KEYQ_TEXT_EVENTS + PLAYOUT_KEY_LIMIT,
	       "the largest text fits an empty queue with a release kept for every key held");

static bool bit(const uint64_t *m, uint32_t c)
{
	return (m[c / 64] >> (c % 64)) & 1u;
}

static void set_bit(uint64_t *m, uint32_t c)
{
	m[c / 64] |= 1ull << (c % 64);
}

static void clear_bit(uint64_t *m, uint32_t c)
{
	m[c / 64] &= ~(1ull << (c % 64));
}

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

void keyq_init(struct keyq *q)
{
	memset(q, 0, sizeof(*q));
}

uint32_t keyq_room(const struct keyq *q)
{
	uint32_t used = keyq_len(q);

	if (q->releasing)
		return 0;
	for (uint32_t w = 0; w < PLAYOUT_KEY_WORDS; w++)
		used += (uint32_t)__builtin_popcountll(q->want[w]);
	return used >= REMOLO_KEYQ_CAP ? 0 : REMOLO_KEYQ_CAP - used;
}

int keyq_check(const struct keyq *q, uint16_t code, uint8_t down)
{
	if (code >= PLAYOUT_KEY_LIMIT || !playout_has_key(code))
		return PLAYOUT_KEY_REFUSED_UNKNOWN;
	if (down && bit(q->want, code))
		return PLAYOUT_KEY_REFUSED_HELD;
	if (!down && !bit(q->want, code))
		return PLAYOUT_KEY_REFUSED_NOT_HELD;
	/* The press and the place its release keeps. */
	if (down && keyq_room(q) < 2)
		return PLAYOUT_KEY_REFUSED_FLOOD;
	return PLAYOUT_KEY_REFUSED_NONE;
}

int keyq_push(struct keyq *q, uint64_t at_us, uint16_t code, uint8_t down)
{
	struct keyq_event *e;
	uint64_t gap;

	if (__builtin_expect(keyq_len(q) == REMOLO_KEYQ_CAP || q->releasing, 0)) {
		if (down)
			return -1;      /* keyq_check says flood */
		clear_bit(q->want, code);
		set_bit(q->release, code);
		q->releasing = true;
		return 1;
	}
	if (down)
		set_bit(q->want, code);
	else
		clear_bit(q->want, code);
	/* Keys keep their order, whatever their times say. */
	if (diff(at_us, q->last_at_us) < 0)
		at_us = q->last_at_us;
	if (keyq_len(q) == 0) {
		q->head_at_us = at_us;
		q->last_at_us = at_us;
		gap = 0;
	} else {
		/* Queued events are due within seconds of each other; a gap
		 * past 71 minutes (a drain that never ran) is cut short. */
		gap = at_us - q->last_at_us;
		if (gap > UINT32_MAX)
			gap = UINT32_MAX;
		q->last_at_us += gap;
	}
	e = &q->ev[q->tail & KEYQ_MASK];
	e->gap_us = (uint32_t)gap;
	e->code = code;
	e->down = down ? 1 : 0;
	e->pad = 0;
	q->tail++;
	return 0;
}

bool keyq_head_due(const struct keyq *q, uint64_t *at_us)
{
	if (q->head == q->tail)
		return false;
	*at_us = q->head_at_us;
	return true;
}

/* The overflow releases, after the ring: each key once, and not one that
 * already changed in this tick. */
static void drain_releases(struct keyq *q, const uint64_t *seen, struct playout_key *out, uint32_t *n,
			   uint32_t max)
{
	bool left = false;

	for (uint32_t w = 0; w < PLAYOUT_KEY_WORDS; w++) {
		uint64_t m = q->release[w];

		while (m) {
			uint32_t b = (uint32_t)__builtin_ctzll(m), code = w * 64 + b;

			m &= m - 1;
			if (*n == max || bit(seen, code)) {
				left = true;
				continue;
			}
			clear_bit(q->release, code);
			if (!bit(q->state, code))
				continue;
			clear_bit(q->state, code);
			out[*n].code = (uint16_t)code;
			out[*n].down = 0;
			(*n)++;
		}
	}
	q->releasing = left;
}

uint32_t keyq_drain(struct keyq *q, uint64_t now_us, uint64_t limit_us, struct playout_key *out,
		    uint32_t *n, uint32_t max, uint64_t *first_us)
{
	uint64_t seen[PLAYOUT_KEY_WORDS] = { 0 };
	uint32_t taken = 0;

	while (q->head != q->tail && *n < max) {
		const struct keyq_event *e = &q->ev[q->head & KEYQ_MASK];

		/* A key that changed in this tick waits for the next one: a
		 * press and its release never meet in one frame. */
		if (diff(q->head_at_us, now_us) > 0 || diff(q->head_at_us, limit_us) > 0 ||
		    bit(seen, e->code))
			break;
		if (taken++ == 0)
			*first_us = q->head_at_us;
		q->head++;
		if (q->head != q->tail)
			q->head_at_us += q->ev[q->head & KEYQ_MASK].gap_us;
		if (bit(q->state, e->code) == !!e->down)
			continue;       /* no change (push refuses these; kept for safety) */
		set_bit(seen, e->code);
		if (e->down)
			set_bit(q->state, e->code);
		else
			clear_bit(q->state, e->code);
		out[*n].code = e->code;
		out[*n].down = e->down;
		(*n)++;
	}
	if (q->head == q->tail && q->releasing)
		drain_releases(q, seen, out, n, max);
	return taken;
}

void keyq_flush(struct keyq *q, uint64_t now_us)
{
	for (uint32_t i = q->head; i != q->tail; i++)
		q->ev[i & KEYQ_MASK].gap_us = 0;
	q->head_at_us = now_us;
	q->last_at_us = now_us;
	/* Then every key goes up: the release set covers them all, and only
	 * keys let out as down are released. */
	memset(q->want, 0, sizeof(q->want));
	memset(q->release, 0xff, sizeof(q->release));
	q->releasing = true;
}
