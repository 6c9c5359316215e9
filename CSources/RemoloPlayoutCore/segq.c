/* SPDX-License-Identifier: MIT */
/*
 * The segment queue (design note, part 5): each packet's motion becomes a segment
 * spread evenly over [start, start + dur). A drain tick integrates every
 * started segment up to "now".
 *
 * Exactness: a segment's emitted amount is total * elapsed / dur computed
 * from scratch each tick, minus what it already gave; at its end it has
 * given exactly its total. Nothing is lost to rounding inside a segment;
 * the Q8 remainder of the sum is carried by the caller.
 */
#include <string.h>

#include "remolo_playout.h"

#define SEGQ_MASK (REMOLO_SEGQ_CAP - 1)
/* Merged totals stay far from int64 overflow in total * elapsed. */
#define MERGED_TOTAL_MAX ((int64_t)1 << 40)

/* segq_drain computes total * elapsed with elapsed < dur <= the largest
 * configurable segment, and a single packet's bound fits a merged total. */
_Static_assert(MERGED_TOTAL_MAX <= INT64_MAX / PLAYOUT_CFG_SEG_MAX_US, "total * elapsed fits in int64");
_Static_assert(REMOLO_MAX_MOTION_Q8 <= MERGED_TOTAL_MAX && REMOLO_MAX_SCROLL_Q8 <= MERGED_TOTAL_MAX,
	       "one packet fits a segment");

void segq_init(struct segq *q)
{
	memset(q, 0, sizeof(*q));
}

static int64_t clamp_total(int64_t v)
{
	if (v > MERGED_TOTAL_MAX)
		return MERGED_TOTAL_MAX;
	if (v < -MERGED_TOTAL_MAX)
		return -MERGED_TOTAL_MAX;
	return v;
}

static bool merge(struct segq *q, uint8_t kind, int64_t a, int64_t b)
{
	for (uint32_t i = q->tail; i != q->head; i--) {
		struct segq_seg *s = &q->seg[(i - 1) & SEGQ_MASK];

		if (s->kind != kind || s->finished)
			continue;
		/* Clamping only bites after ~2^22 merged maximal packets. */
		s->total[0] = clamp_total(s->total[0] + a);
		s->total[1] = clamp_total(s->total[1] + b);
		return true;
	}
	return false;
}

int segq_push(struct segq *q, uint8_t kind, uint64_t start_us, uint32_t dur_us, int64_t a, int64_t b)
{
	struct segq_seg *s;
	uint64_t end = start_us + dur_us;

	if (__builtin_expect(segq_len(q) == REMOLO_SEGQ_CAP, 0))
		return merge(q, kind, a, b) ? 1 : -1;

	s = &q->seg[q->tail & SEGQ_MASK];
	s->start_us = start_us;
	s->dur_us = dur_us;
	s->kind = kind;
	s->finished = 0;
	s->begun = 0;
	s->total[0] = a;
	s->total[1] = b;
	s->done[0] = 0;
	s->done[1] = 0;
	q->tail++;
	if ((int64_t)(end - q->tail_end_us) > 0 || segq_len(q) == 1)
		q->tail_end_us = end;
	return 0;
}

void segq_drain(struct segq *q, uint64_t now_us, int64_t acc[4])
{
	q->began_us = 0;
	for (uint32_t i = q->head; i != q->tail; i++) {
		struct segq_seg *s = &q->seg[i & SEGQ_MASK];
		int64_t elapsed = (int64_t)(now_us - s->start_us);
		int64_t *out = s->kind == PLAYOUT_KIND_SCROLL ? &acc[2] : &acc[0];

		if (s->finished || elapsed <= 0)
			continue;
		if (!s->begun) {
			s->begun = 1;
			if (!q->began_us || (int64_t)(s->start_us - q->began_us) < 0)
				q->began_us = s->start_us;
		}
		if (elapsed >= (int64_t)s->dur_us) {
			out[0] += s->total[0] - s->done[0];
			out[1] += s->total[1] - s->done[1];
			s->finished = 1;
			continue;
		}
		for (int k = 0; k < 2; k++) {
			int64_t due = s->total[k] * elapsed / (int64_t)s->dur_us;

			out[k] += due - s->done[k];
			s->done[k] = due;
		}
	}
	/* Segments finish out of order when starts are not monotone (late
	 * replays, sender clock steps); the ring only frees from the head. */
	while (q->head != q->tail && q->seg[q->head & SEGQ_MASK].finished)
		q->head++;
}
