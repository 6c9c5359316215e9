/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the datagram open path (remolo_wire.h), built and
 * run by Tests/Fuzz/run under ASan and UBSan. Besides crashes it checks
 * the rules the receiver relies on and aborts when one breaks:
 *  - raw input: every open is counted exactly once; an accepted datagram
 *    has a known kind and canonical fields, its counter is newer than
 *    anything the session accepted, and opening it again is a replay;
 *    motion is recovered only by a 65-byte datagram of session B, after a
 *    gap;
 *  - the first 25 bytes as counter + plaintext, sealed under the test key:
 *    opens (or is refused for its kind or fields, never otherwise), reseals
 *    to the same bytes, and any one-bit flip is refused;
 *  - the first 41 bytes as counter + the redundant layout's plaintext,
 *    sealed for session B (granted it): the same, and what it recovers is
 *    the totals minus its own motion (nothing before it was opened), the
 *    session's sums become its totals, and session A (not granted) refuses
 *    the 65 bytes as too long without moving anything; as a gesture
 *    (kind 6; session B is granted gestures too), it opens within the
 *    gesture bounds, moves no sums, recovers nothing, reseals to the same
 *    bytes with wire_seal_gesture, and hands its gap to the next totals;
 *  - the bytes as add/remove operations on the session table: lookups
 *    agree with a plain list after every step.
 * Seeds: Tests/Fuzz/corpus/datagram_open/ (Tests/Fuzz/make_corpus_datagram_open.py).
 */
// fuzz-sources: CSources/RemoloPlayoutCore/wire.c
// fuzz-libs: -lsodium
// fuzz-options: -max_len=512
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remolo_wire.h"

#define CHECK(x) do { if (!(x)) abort(); } while (0)

/* The test sessions the seed corpus is sealed for: key byte i = i (A) and
 * 0x80 + i (B); ids "remolo-A" and "remolo-B". */
static uint8_t key_a[WIRE_KEY_LEN], key_b[WIRE_KEY_LEN];
static const uint8_t id_a[WIRE_ID_LEN] = { 'r', 'e', 'm', 'o', 'l', 'o', '-', 'A' };
static const uint8_t id_b[WIRE_ID_LEN] = { 'r', 'e', 'm', 'o', 'l', 'o', '-', 'B' };

static void setup(struct wire *w)
{
	CHECK(wire_init(w) == 0);
	CHECK(wire_add_session(w, id_a, key_a) == 0);
	CHECK(wire_add_session(w, id_b, key_b) == 1);
	CHECK(wire_set_totals(w, id_b, 1) == 0);
	CHECK(wire_set_gestures(w, id_b, 1) == 0);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int recovers(const struct playout_pkt *p)
{
	return p->lost[0] || p->lost[1] || p->lost[2] || p->lost[3];
}

static void check_gesture(const struct playout_pkt *p)
{
	const struct playout_gesture *g = &p->g;

	CHECK(p->a >= -REMOLO_GESTURE_MAX_UM && p->a <= REMOLO_GESTURE_MAX_UM);
	CHECK(p->b >= -REMOLO_GESTURE_MAX_UM && p->b <= REMOLO_GESTURE_MAX_UM);
	CHECK(p->code == 0 && p->down == 0 && (g->flags & ~PLAYOUT_GESTURE_FLAG_LAST) == 0);
	if (g->type == PLAYOUT_GESTURE_SWIPE)
		CHECK(g->fingers >= 3 && g->fingers <= 4 && g->scale_q16 == REMOLO_GESTURE_SCALE_ONE && g->angle_urad == 0);
	else
		CHECK(g->type == PLAYOUT_GESTURE_PINCH && g->fingers >= 2 && g->fingers <= 4 &&
		      g->scale_q16 >= REMOLO_GESTURE_SCALE_MIN && g->scale_q16 <= REMOLO_GESTURE_SCALE_MAX &&
		      g->angle_urad >= -REMOLO_GESTURE_ANGLE_MAX && g->angle_urad <= REMOLO_GESTURE_ANGLE_MAX);
}

static void check_pkt(const struct playout_pkt *p)
{
	if (p->kind == PLAYOUT_KIND_GESTURE) {
		check_gesture(p);
		return;
	}
	CHECK(p->kind >= PLAYOUT_KIND_MOTION && p->kind <= PLAYOUT_KIND_HEARTBEAT);
	CHECK(p->g.id == 0 && p->g.type == 0 && p->g.fingers == 0 && p->g.flags == 0 && p->g.scale_q16 == 0);
	if (p->kind == PLAYOUT_KIND_BUTTON)
		CHECK(p->down <= 1 && p->a == 0 && p->b == 0);
	else
		CHECK(p->code == 0 && p->down == 0);
	if (p->kind == PLAYOUT_KIND_HEARTBEAT)
		CHECK(p->a == 0 && p->b == 0);
}

static void raw(const uint8_t *data, size_t size)
{
	struct wire w;
	struct wire_rx rx;
	uint64_t calls = 0, sum;
	size_t chunk = size, n = 1;

	setup(&w);
	/* A whole number of datagrams is a sequence: replay state carries. */
	if (size && size % WIRE_DATAGRAM_LEN == 0) {
		chunk = WIRE_DATAGRAM_LEN;
		n = size / WIRE_DATAGRAM_LEN;
	} else if (size && size % WIRE_TOTALS_DATAGRAM_LEN == 0) {
		chunk = WIRE_TOTALS_DATAGRAM_LEN;
		n = size / WIRE_TOTALS_DATAGRAM_LEN;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *d = data + i * chunk;
		struct wire_session before = w.sess[0];
		struct wire_session before_b = w.sess[1];
		int r = wire_open(&w, d, chunk, &rx);

		calls++;
		if (r >= 0) {
			struct wire_session *was = r == 0 ? &before : &before_b;

			CHECK(r <= 1 && rx.slot == (uint32_t)r);
			CHECK(memcmp(rx.id, r == 0 ? id_a : id_b, WIRE_ID_LEN) == 0);
			CHECK(rx.counter == le64(d + WIRE_OFF_COUNTER));
			CHECK(!was->any_seen || rx.counter > was->newest);
			check_pkt(&rx.pkt);
			if (chunk != WIRE_TOTALS_DATAGRAM_LEN) {
				CHECK(rx.pkt.lost_n == 0 && !recovers(&rx.pkt));
			} else if (rx.pkt.kind == PLAYOUT_KIND_GESTURE) {
				/* No motion, no totals: its gap is owed to the next totals. */
				uint64_t gap = was->any_seen ? rx.counter - was->newest - 1 : rx.counter;

				CHECK(r == 1 && rx.pkt.lost_n == 0 && !recovers(&rx.pkt));
				CHECK(memcmp(w.sess[1].total, was->total, sizeof(was->total)) == 0);
				CHECK(w.sess[1].owed == was->owed + gap);
			} else {
				/* Only where granted; only after a gap (its own and what
				 * gesture datagrams owe), as long as it says. */
				uint64_t gap = (was->any_seen ? rx.counter - was->newest - 1 : rx.counter) + was->owed;

				CHECK(r == 1 && w.sess[1].owed == 0);
				CHECK(rx.pkt.lost_n == gap || (gap > UINT32_MAX && rx.pkt.lost_n == UINT32_MAX));
				CHECK(rx.pkt.lost_n || !recovers(&rx.pkt));
			}
			CHECK(wire_open(&w, d, chunk, &rx) == -WIRE_DROP_REPLAY);
			calls++;
		} else {
			CHECK(r >= -(int)WIRE_DROP_BAD_FIELD);
			/* Only an authentic datagram may move the counter. */
			if (r != -WIRE_DROP_BAD_KIND && r != -WIRE_DROP_BAD_FIELD) {
				CHECK(w.sess[0].newest == before.newest && w.sess[0].any_seen == before.any_seen);
				CHECK(w.sess[1].newest == before_b.newest && w.sess[1].any_seen == before_b.any_seen);
			}
		}
	}
	sum = w.stats.opened;
	for (int i = 0; i < WIRE_DROP_COUNT; i++)
		sum += w.stats.drop[i];
	CHECK(sum == calls && w.stats.drop[0] == 0);
	wire_deinit(&w);
}

static void recipe(const uint8_t *data, size_t size)
{
	struct wire w;
	struct wire_rx rx;
	uint8_t dg[WIRE_DATAGRAM_LEN], again[WIRE_DATAGRAM_LEN];
	uint64_t counter;
	unsigned bit;
	int r;

	if (size < 8 + WIRE_PT_LEN)
		return;
	counter = le64(data);
	memcpy(dg, id_a, WIRE_ID_LEN);
	memcpy(dg + WIRE_OFF_COUNTER, data, 8);
	CHECK(wire_aead_seal(dg + WIRE_OFF_CT, data + 8, WIRE_PT_LEN, dg, WIRE_HDR_LEN,
			     WIRE_NONCE_FIXED, counter, key_a) == WIRE_PT_LEN + WIRE_TAG_LEN);

	setup(&w);
	r = wire_open(&w, dg, sizeof(dg), &rx);
	CHECK(r == 0 || r == -WIRE_DROP_BAD_KIND || r == -WIRE_DROP_BAD_FIELD);
	CHECK(w.sess[0].any_seen && w.sess[0].newest == counter);
	if (r == 0) {
		check_pkt(&rx.pkt);
		CHECK(wire_seal(key_a, id_a, counter, &rx.pkt, again, sizeof(again)) == WIRE_DATAGRAM_LEN);
		CHECK(memcmp(again, dg, sizeof(dg)) == 0);
	}
	CHECK(wire_open(&w, dg, sizeof(dg), &rx) == -WIRE_DROP_REPLAY);
	wire_deinit(&w);

	bit = size > 8 + WIRE_PT_LEN ? data[8 + WIRE_PT_LEN] : 0;
	bit |= size > 9 + WIRE_PT_LEN ? (unsigned)data[9 + WIRE_PT_LEN] << 8 : 0;
	bit %= WIRE_DATAGRAM_LEN * 8;
	dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	setup(&w);
	r = wire_open(&w, dg, sizeof(dg), &rx);
	CHECK(r == -WIRE_DROP_BAD_TAG || r == -WIRE_DROP_UNKNOWN_SESSION);
	CHECK(!w.sess[0].any_seen && !w.sess[1].any_seen);
	wire_deinit(&w);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void recipe_totals(const uint8_t *data, size_t size)
{
	struct wire w;
	struct wire_rx rx;
	uint8_t dg[WIRE_TOTALS_DATAGRAM_LEN], again[WIRE_TOTALS_DATAGRAM_LEN];
	const uint8_t *pt = data + 8;
	uint32_t totals[4], own[4] = { 0 };
	uint64_t counter;
	unsigned bit;
	int r;

	if (size < 8 + WIRE_PT_TOTALS_LEN)
		return;
	counter = le64(data);
	for (int i = 0; i < 4; i++)
		totals[i] = le32(pt + WIRE_PT_OFF_TOTALS + 4 * i);
	memcpy(dg, id_b, WIRE_ID_LEN);
	memcpy(dg + WIRE_OFF_COUNTER, data, 8);
	CHECK(wire_aead_seal(dg + WIRE_OFF_CT, pt, WIRE_PT_TOTALS_LEN, dg, WIRE_HDR_LEN,
			     WIRE_NONCE_FIXED, counter, key_b) == WIRE_PT_TOTALS_LEN + WIRE_TAG_LEN);

	setup(&w);
	r = wire_open(&w, dg, sizeof(dg), &rx);
	CHECK(r == 1 || r == -WIRE_DROP_BAD_KIND || r == -WIRE_DROP_BAD_FIELD);
	CHECK(w.sess[1].any_seen && w.sess[1].newest == counter);
	if (r == 1 && rx.pkt.kind == PLAYOUT_KIND_GESTURE) {
		static const uint32_t none[4];

		check_pkt(&rx.pkt);
		CHECK(memcmp(w.sess[1].total, none, sizeof(none)) == 0 && !recovers(&rx.pkt) && rx.pkt.lost_n == 0);
		CHECK(w.sess[1].owed == counter);
		CHECK(wire_seal_gesture(key_b, id_b, counter, &rx.pkt, again, sizeof(again)) == WIRE_TOTALS_DATAGRAM_LEN);
		CHECK(memcmp(again, dg, sizeof(dg)) == 0);
	} else if (r == 1) {
		check_pkt(&rx.pkt);
		CHECK(memcmp(w.sess[1].total, totals, sizeof(totals)) == 0);
		wire_totals_add(own, &rx.pkt);
		for (int i = 0; i < 4; i++)
			CHECK(rx.pkt.lost[i] == (counter ? (int32_t)(totals[i] - own[i]) : 0));
		CHECK(rx.pkt.lost_n == (counter > UINT32_MAX ? UINT32_MAX : counter));
		CHECK(wire_seal_totals(key_b, id_b, counter, &rx.pkt, totals, again, sizeof(again)) ==
		      WIRE_TOTALS_DATAGRAM_LEN);
		CHECK(memcmp(again, dg, sizeof(dg)) == 0);
	}
	CHECK(wire_open(&w, dg, sizeof(dg), &rx) == -WIRE_DROP_REPLAY);
	/* Session A never granted the layout: too long, nothing moves. */
	memcpy(dg, id_a, WIRE_ID_LEN);
	CHECK(wire_open(&w, dg, sizeof(dg), &rx) == -WIRE_DROP_LONG);
	CHECK(!w.sess[0].any_seen);
	wire_deinit(&w);

	memcpy(dg, id_b, WIRE_ID_LEN);
	bit = size > 8 + WIRE_PT_TOTALS_LEN ? data[8 + WIRE_PT_TOTALS_LEN] : 0;
	bit |= size > 9 + WIRE_PT_TOTALS_LEN ? (unsigned)data[9 + WIRE_PT_TOTALS_LEN] << 8 : 0;
	bit %= WIRE_TOTALS_DATAGRAM_LEN * 8;
	dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	setup(&w);
	r = wire_open(&w, dg, sizeof(dg), &rx);
	/* A flip in the id may name session A, which refuses the length. */
	CHECK(r == -WIRE_DROP_BAD_TAG || r == -WIRE_DROP_UNKNOWN_SESSION || r == -WIRE_DROP_LONG);
	CHECK(!w.sess[0].any_seen && !w.sess[1].any_seen);
	wire_deinit(&w);
}

/* Ids that share bytes, so their index homes collide often. */
#define CHURN_IDS 48

static void churn(const uint8_t *data, size_t size)
{
	struct wire w;
	uint8_t present[CHURN_IDS] = { 0 };
	uint8_t id[WIRE_ID_LEN] = { 0 };
	uint32_t live = 0;

	CHECK(wire_init(&w) == 0);
	for (size_t i = 0; i < size && i < 96; i++) {
		unsigned which = (data[i] & 0x7f) % CHURN_IDS;
		int r;

		id[0] = (uint8_t)which;
		if (data[i] & 0x80) {
			r = wire_remove_session(&w, id);
			CHECK(present[which] ? r == 0 : r < 0);
			live -= present[which];
			present[which] = 0;
		} else {
			r = wire_add_session(&w, id, key_a);
			if (present[which])
				CHECK(r < 0);
			else if (live == REMOLO_SESSIONS_MAX)
				CHECK(r < 0);
			else {
				CHECK(r >= 0 && (uint32_t)r < REMOLO_SESSIONS_MAX);
				present[which] = 1;
				live++;
			}
		}
		CHECK(w.nsessions == live);
		for (unsigned k = 0; k < CHURN_IDS; k++) {
			id[0] = (uint8_t)k;
			r = wire_lookup(&w, id);
			CHECK(present[k] ? (r >= 0 && memcmp(w.sess[r].id, id, WIRE_ID_LEN) == 0) : r < 0);
		}
	}
	wire_deinit(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!key_a[1]) {
		for (unsigned i = 0; i < WIRE_KEY_LEN; i++) {
			key_a[i] = (uint8_t)i;
			key_b[i] = (uint8_t)(0x80 + i);
		}
	}
	raw(data, size);
	recipe(data, size);
	recipe_totals(data, size);
	churn(data, size);
	return 0;
}
