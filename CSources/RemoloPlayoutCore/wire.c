/* SPDX-License-Identifier: MIT */
/*
 * Sealed datagrams: session table, replay rule, seal and open. The layout
 * and the replay rule are specified in remolo_wire.h.
 *
 * The open path is ordered cheapest reject first, and nothing the sender
 * did not authenticate changes state: length, session lookup and the
 * counter check need no crypto; the tag is verified (RFC 8439 2.8, in
 * constant time by libsodium) before a byte is decrypted; the session's
 * newest counter moves only after that. The plaintext lands in a scratch
 * buffer and is parsed and copied out only once the tag has verified.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sodium.h>

#include "remolo_wire.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define INDEX_MASK (WIRE_INDEX_SLOTS - 1)

_Static_assert(WIRE_KEY_LEN == crypto_aead_chacha20poly1305_ietf_KEYBYTES, "key size");
_Static_assert(WIRE_TAG_LEN == crypto_aead_chacha20poly1305_ietf_ABYTES, "tag size");
_Static_assert(WIRE_NONCE_LEN == crypto_aead_chacha20poly1305_ietf_NPUBBYTES, "nonce size");
_Static_assert(PLAYOUT_KIND_MOTION == 1 && PLAYOUT_KIND_SCROLL == 2 &&
	       PLAYOUT_KIND_BUTTON == 3 && PLAYOUT_KIND_HEARTBEAT == 4,
	       "wire kinds are the playout kinds");

/* ---- little-endian loads and stores ------------------------------------- */

static uint64_t load64(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void store32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- the AEAD ----------------------------------------------------------- */

/* RFC 8439 2.8: the 96-bit nonce is a 32-bit constant followed by a 64-bit
 * IV; both little-endian here (the RFC's 2.8.2 vector is fixed = 7). */
static void make_nonce(uint8_t nonce[WIRE_NONCE_LEN], uint32_t fixed, uint64_t iv)
{
	store32(nonce, fixed);
	store64(nonce + 4, iv);
}

int wire_crypto_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

int wire_aead_seal(uint8_t *out, const uint8_t *pt, size_t ptlen, const uint8_t *ad, size_t adlen,
		   uint32_t fixed, uint64_t iv, const uint8_t key[WIRE_KEY_LEN])
{
	uint8_t nonce[WIRE_NONCE_LEN];
	static const uint8_t empty[1];

	make_nonce(nonce, fixed, iv);
	/* libsodium declares the message pointer nonnull even when empty. */
	if (crypto_aead_chacha20poly1305_ietf_encrypt_detached(out, out + ptlen, NULL,
							       ptlen ? pt : empty, ptlen,
							       ad, adlen, NULL, nonce, key) != 0)
		return -1;
	return (int)(ptlen + WIRE_TAG_LEN);
}

int wire_aead_open(uint8_t *out, const uint8_t *ct, size_t ctlen, const uint8_t *ad, size_t adlen,
		   uint32_t fixed, uint64_t iv, const uint8_t key[WIRE_KEY_LEN])
{
	uint8_t nonce[WIRE_NONCE_LEN];
	size_t mlen;

	if (unlikely(ctlen < WIRE_TAG_LEN))
		return -1;
	mlen = ctlen - WIRE_TAG_LEN;
	make_nonce(nonce, fixed, iv);
	/* The detached form verifies the tag first and decrypts only on a
	 * match (libsodium's aead_chacha20poly1305.c), in constant time. */
	if (unlikely(crypto_aead_chacha20poly1305_ietf_decrypt_detached(out, NULL, ct, mlen, ct + mlen,
									ad, adlen, nonce, key) != 0))
		return -1;
	return (int)mlen;
}

/* ---- the session table -------------------------------------------------- */

/* Ids are random (the receiver draws them), so any bits would do; the
 * Fibonacci multiply keeps the index even if a caller's ids are not. The
 * id is cleartext on the wire, so lookup need not be constant-time. */
static uint32_t home(const uint8_t id[WIRE_ID_LEN])
{
	uint64_t h = load64(id) * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 58) & INDEX_MASK;
}
_Static_assert(WIRE_INDEX_SLOTS <= 64, "home() takes the top 6 bits");

/* The index position holding id, or -1. Linear probing; the index is at
 * most half full, so a run ends at an empty entry within a few steps. */
static int find_pos(const struct wire *w, const uint8_t id[WIRE_ID_LEN])
{
	uint32_t pos = home(id);

	for (uint32_t n = 0; n < WIRE_INDEX_SLOTS; n++, pos = (pos + 1) & INDEX_MASK) {
		uint8_t e = w->index[pos];

		if (e == 0)
			return -1;
		if (likely(memcmp(w->sess[e - 1].id, id, WIRE_ID_LEN) == 0))
			return (int)pos;
	}
	return -1;
}

int wire_init(struct wire *w)
{
	memset(w, 0, sizeof(*w));
	return wire_crypto_init();
}

void wire_deinit(struct wire *w)
{
	sodium_memzero(w, sizeof(*w));
}

int wire_lookup(const struct wire *w, const uint8_t id[WIRE_ID_LEN])
{
	int pos = find_pos(w, id);

	return pos < 0 ? -ENOENT : w->index[pos] - 1;
}

int wire_newest(const struct wire *w, const uint8_t id[WIRE_ID_LEN], uint64_t *out)
{
	const struct wire_session *s;
	int pos = find_pos(w, id);

	if (pos < 0)
		return -ENOENT;
	s = &w->sess[w->index[pos] - 1];
	/* Before the first authentic datagram "newest" means nothing: 0 is
	 * a valid first counter, so it cannot double as "none". */
	if (!s->any_seen)
		return 0;
	*out = s->newest;
	return 1;
}

int wire_add_session(struct wire *w, const uint8_t id[WIRE_ID_LEN], const uint8_t key[WIRE_KEY_LEN])
{
	uint32_t slot, pos;
	struct wire_session *s;

	if (find_pos(w, id) >= 0)
		return -EEXIST;
	if (w->nsessions >= REMOLO_SESSIONS_MAX)
		return -ENOSPC;
	for (slot = 0; slot < REMOLO_SESSIONS_MAX && w->sess[slot].live; slot++)
		;
	s = &w->sess[slot];
	memset(s, 0, sizeof(*s));
	memcpy(s->key, key, WIRE_KEY_LEN);
	memcpy(s->id, id, WIRE_ID_LEN);
	s->live = 1;
	for (pos = home(id); w->index[pos]; pos = (pos + 1) & INDEX_MASK)
		;
	w->index[pos] = (uint8_t)(slot + 1);
	w->nsessions++;
	return (int)slot;
}

/* Is h cyclically within (lo, hi]? */
static int cyc_between(uint32_t lo, uint32_t h, uint32_t hi)
{
	return lo <= hi ? (lo < h && h <= hi) : (lo < h || h <= hi);
}

int wire_remove_session(struct wire *w, const uint8_t id[WIRE_ID_LEN])
{
	int found = find_pos(w, id);
	uint32_t hole, j;

	if (found < 0)
		return -ENOENT;
	hole = (uint32_t)found;
	sodium_memzero(&w->sess[w->index[hole] - 1], sizeof(struct wire_session));
	w->index[hole] = 0;
	w->nsessions--;
	/* Backward-shift deletion (Knuth 6.4, Algorithm R): no tombstones,
	 * so lookups of unknown ids stay short however sessions churn. An
	 * entry after the hole moves into it unless its home lies cyclically
	 * in (hole, j], where it would then be unreachable. */
	for (j = (hole + 1) & INDEX_MASK; w->index[j]; j = (j + 1) & INDEX_MASK) {
		uint32_t h = home(w->sess[w->index[j] - 1].id);

		if (cyc_between(hole, h, j))
			continue;
		w->index[hole] = w->index[j];
		w->index[j] = 0;
		hole = j;
	}
	return 0;
}

/* ---- open --------------------------------------------------------------- */

static int drop(struct wire *w, enum wire_drop why)
{
	w->stats.drop[why]++;
	return -(int)why;
}

/* A gesture block (remolo_wire.h, the gesture layout) and the offset in
 * a, b into pkt: 0, or -WIRE_DROP_BAD_FIELD. */
static int parse_gesture(const uint8_t *blk, struct playout_pkt *pkt)
{
	struct playout_gesture *g = &pkt->g;
	int32_t lim = REMOLO_GESTURE_MAX_UM;

	g->id = blk[WIRE_G_OFF_ID];
	g->type = blk[WIRE_G_OFF_TYPE];
	g->fingers = blk[WIRE_G_OFF_FINGERS];
	g->flags = blk[WIRE_G_OFF_FLAGS];
	g->scale_q16 = (int32_t)load32(blk + WIRE_G_OFF_SCALE);
	g->angle_urad = (int32_t)load32(blk + WIRE_G_OFF_ANGLE);
	if (unlikely(pkt->a < -lim || pkt->a > lim || pkt->b < -lim || pkt->b > lim ||
		     (g->flags & ~PLAYOUT_GESTURE_FLAG_LAST) || load32(blk + WIRE_G_OFF_ZERO) != 0))
		return -WIRE_DROP_BAD_FIELD;
	switch (g->type) {
	case PLAYOUT_GESTURE_SWIPE:
		if (unlikely(g->fingers < 3 || g->fingers > 4 || g->scale_q16 != REMOLO_GESTURE_SCALE_ONE ||
			     g->angle_urad != 0))
			return -WIRE_DROP_BAD_FIELD;
		return 0;
	case PLAYOUT_GESTURE_PINCH:
		if (unlikely(g->fingers < 2 || g->fingers > 4 || g->scale_q16 < REMOLO_GESTURE_SCALE_MIN ||
			     g->scale_q16 > REMOLO_GESTURE_SCALE_MAX || g->angle_urad < -REMOLO_GESTURE_ANGLE_MAX ||
			     g->angle_urad > REMOLO_GESTURE_ANGLE_MAX))
			return -WIRE_DROP_BAD_FIELD;
		return 0;
	default:
		return -WIRE_DROP_BAD_FIELD;
	}
}

/* Fields of an authentic plaintext into a playout packet. ext: the 16
 * bytes after the base plaintext (totals or a gesture block), or NULL for
 * a 49-byte datagram; gestures: the session may send gesture datagrams. */
static int parse(const uint8_t *pt, const uint8_t *ext, bool gestures, struct playout_pkt *pkt)
{
	uint8_t kind = pt[WIRE_PT_OFF_KIND];
	int32_t a = (int32_t)load32(pt + WIRE_PT_OFF_A);
	int32_t b = (int32_t)load32(pt + WIRE_PT_OFF_B);

	memset(pkt, 0, sizeof(*pkt));
	pkt->tx_us = load64(pt + WIRE_PT_OFF_TX);
	pkt->kind = kind;
	switch (kind) {
	case PLAYOUT_KIND_MOTION:
	case PLAYOUT_KIND_SCROLL:
		pkt->a = a;
		pkt->b = b;
		return 0;
	case PLAYOUT_KIND_BUTTON:
		/* BTN_* codes are u16 (input-event-codes.h); the playout
		 * refuses codes that are not mouse buttons. */
		if (unlikely(a < 0 || a > 0xffff || (b != 0 && b != 1)))
			return -WIRE_DROP_BAD_FIELD;
		pkt->code = (uint16_t)a;
		pkt->down = (uint8_t)b;
		return 0;
	case PLAYOUT_KIND_HEARTBEAT:
		if (unlikely(a != 0 || b != 0))
			return -WIRE_DROP_BAD_FIELD;
		return 0;
	case WIRE_KIND_GESTURE:
		if (unlikely(!ext || !gestures))
			return -WIRE_DROP_BAD_KIND;
		pkt->a = a;
		pkt->b = b;
		return parse_gesture(ext, pkt);
	default:
		return -WIRE_DROP_BAD_KIND;
	}
}

/* The live session with this id, or NULL. */
static struct wire_session *live(struct wire *w, const uint8_t id[WIRE_ID_LEN])
{
	int pos = find_pos(w, id);

	return pos < 0 ? NULL : &w->sess[w->index[pos] - 1];
}

int wire_set_totals(struct wire *w, const uint8_t id[WIRE_ID_LEN], int on)
{
	struct wire_session *s = live(w, id);

	if (!s)
		return -ENOENT;
	s->totals = on ? 1 : 0;
	return 0;
}

int wire_set_gestures(struct wire *w, const uint8_t id[WIRE_ID_LEN], int on)
{
	struct wire_session *s = live(w, id);

	if (!s)
		return -ENOENT;
	s->gestures = on ? 1 : 0;
	return 0;
}

void wire_totals_add(uint32_t total[4], const struct playout_pkt *pkt)
{
	uint32_t k = pkt->kind == PLAYOUT_KIND_MOTION ? 0 : pkt->kind == PLAYOUT_KIND_SCROLL ? 2 : 4;

	if (k < 4) {
		total[k] += (uint32_t)pkt->a;
		total[k + 1] += (uint32_t)pkt->b;
	}
}

/* The running totals of an opened datagram (remolo_wire.h, the redundant
 * layout): a 49-byte one adds its own motion to the session's sums; a
 * 65-byte one that follows a gap of `gap` datagrams recovers what the gap
 * carried, totals - sums - own, into pkt->lost. The sums then equal the
 * totals: motion is counted once whatever comes later. */
static void take_totals(struct wire_session *s, struct playout_pkt *pkt, const uint8_t *totals, uint64_t gap)
{
	uint32_t own[4] = { 0 };

	if (!totals) {
		wire_totals_add(s->total, pkt);
		return;
	}
	wire_totals_add(own, pkt);
	for (int i = 0; i < 4; i++) {
		uint32_t t = load32(totals + 4 * i);

		/* Modulo 2^32, read as signed: a gap's motion is far below 2^31. */
		if (gap)
			pkt->lost[i] = (int32_t)(t - s->total[i] - own[i]);
		s->total[i] = t;
	}
	if (gap) {
		pkt->lost_n = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
		if (pkt->lost[0] || pkt->lost[1] || pkt->lost[2] || pkt->lost[3])
			s->recovered++;
	}
}

int wire_open(struct wire *w, const uint8_t *buf, size_t len, struct wire_rx *out)
{
	uint8_t pt[WIRE_PT_TOTALS_LEN];
	struct playout_pkt pkt;
	struct wire_session *s;
	uint64_t counter, gap;
	bool totals = len == WIRE_TOTALS_DATAGRAM_LEN;
	size_t ptlen = totals ? WIRE_PT_TOTALS_LEN : WIRE_PT_LEN;
	int pos, r;

	if (unlikely(len != WIRE_DATAGRAM_LEN && !totals))
		return drop(w, len < WIRE_DATAGRAM_LEN ? WIRE_DROP_SHORT : WIRE_DROP_LONG);
	pos = find_pos(w, buf + WIRE_OFF_ID);
	if (unlikely(pos < 0))
		return drop(w, WIRE_DROP_UNKNOWN_SESSION);
	s = &w->sess[w->index[pos] - 1];
	/* The 65-byte layouts only where hello granted one: anywhere else a
	 * datagram is too long, as it was before the layouts existed. */
	if (unlikely(totals && !s->totals && !s->gestures))
		return drop(w, WIRE_DROP_LONG);
	counter = load64(buf + WIRE_OFF_COUNTER);
	/* Strictly increasing (remolo_wire.h): checked before the crypto,
	 * since a replay is rejected whatever its tag says. */
	if (unlikely(s->any_seen && counter <= s->newest)) {
		s->rejected++;
		return drop(w, WIRE_DROP_REPLAY);
	}
	/* The header is the associated data (RFC 8439 2.8): id and counter
	 * are authenticated, not encrypted. */
	if (unlikely(wire_aead_open(pt, buf + WIRE_OFF_CT, ptlen + WIRE_TAG_LEN, buf, WIRE_HDR_LEN,
				    WIRE_NONCE_FIXED, counter, s->key) < 0)) {
		s->rejected++;
		return drop(w, WIRE_DROP_BAD_TAG);
	}
	/* Datagrams the counter skipped: lost, or still to come and then
	 * refused as late. */
	gap = s->any_seen ? counter - s->newest - 1 : counter;
	/* Authentic: only now may the counter move. It moves even if the
	 * payload is then refused, so that datagram cannot be replayed. */
	s->newest = counter;
	s->any_seen = 1;
	r = parse(pt, totals ? pt + WIRE_PT_OFF_TOTALS : NULL, s->gestures, &pkt);
	/* 65 bytes of another kind carry totals: only where those were granted. */
	if (unlikely(r == 0 && totals && pkt.kind != WIRE_KIND_GESTURE && !s->totals))
		r = -WIRE_DROP_BAD_KIND;
	if (unlikely(r < 0))
		return drop(w, (enum wire_drop)-r);
	if (pkt.kind == WIRE_KIND_GESTURE) {
		/* No motion and no totals: the datagrams skipped before it are
		 * the next totals' to recover (remolo_wire.h). */
		s->owed += gap;
	} else {
		take_totals(s, &pkt, totals ? pt + WIRE_PT_OFF_TOTALS : NULL, gap + s->owed);
		s->owed = 0;
	}
	s->opened++;
	w->stats.opened++;
	out->pkt = pkt;
	out->counter = counter;
	memcpy(out->id, s->id, WIRE_ID_LEN);
	out->slot = (uint32_t)(s - w->sess);
	return (int)out->slot;
}

/* ---- seal --------------------------------------------------------------- */

/* The plaintext of pkt (WIRE_PT_LEN bytes): 0, or -EINVAL for an unknown
 * kind or a button with down > 1. */
static int plaintext(const struct playout_pkt *pkt, uint8_t pt[WIRE_PT_LEN])
{
	int32_t a, b;

	switch (pkt->kind) {
	case PLAYOUT_KIND_MOTION:
	case PLAYOUT_KIND_SCROLL:
		a = pkt->a;
		b = pkt->b;
		break;
	case PLAYOUT_KIND_BUTTON:
		if (pkt->down > 1)
			return -EINVAL;
		a = pkt->code;
		b = pkt->down;
		break;
	case PLAYOUT_KIND_HEARTBEAT:
		a = b = 0;
		break;
	default:
		return -EINVAL;
	}
	pt[WIRE_PT_OFF_KIND] = pkt->kind;
	store32(pt + WIRE_PT_OFF_A, (uint32_t)a);
	store32(pt + WIRE_PT_OFF_B, (uint32_t)b);
	store64(pt + WIRE_PT_OFF_TX, pkt->tx_us);
	return 0;
}

/* Header, then the sealed plaintext and its tag: the datagram's length. */
static int seal(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
		const uint8_t *pt, size_t ptlen, uint8_t *out)
{
	memcpy(out + WIRE_OFF_ID, id, WIRE_ID_LEN);
	store64(out + WIRE_OFF_COUNTER, counter);
	if (wire_aead_seal(out + WIRE_OFF_CT, pt, ptlen, out, WIRE_HDR_LEN, WIRE_NONCE_FIXED, counter, key) < 0)
		return -EINVAL;
	return (int)(WIRE_HDR_LEN + ptlen + WIRE_TAG_LEN);
}

int wire_seal_gesture(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
		      const struct playout_pkt *pkt, uint8_t *out, size_t cap)
{
	uint8_t pt[WIRE_PT_TOTALS_LEN] = { 0 };
	uint8_t *blk = pt + WIRE_PT_OFF_GESTURE;
	struct playout_pkt check;

	if (cap < WIRE_TOTALS_DATAGRAM_LEN)
		return -ENOSPC;
	if (pkt->kind != WIRE_KIND_GESTURE)
		return -EINVAL;
	pt[WIRE_PT_OFF_KIND] = WIRE_KIND_GESTURE;
	store32(pt + WIRE_PT_OFF_A, (uint32_t)pkt->a);
	store32(pt + WIRE_PT_OFF_B, (uint32_t)pkt->b);
	store64(pt + WIRE_PT_OFF_TX, pkt->tx_us);
	blk[WIRE_G_OFF_ID] = pkt->g.id;
	blk[WIRE_G_OFF_TYPE] = pkt->g.type;
	blk[WIRE_G_OFF_FINGERS] = pkt->g.fingers;
	blk[WIRE_G_OFF_FLAGS] = pkt->g.flags;
	store32(blk + WIRE_G_OFF_SCALE, (uint32_t)pkt->g.scale_q16);
	store32(blk + WIRE_G_OFF_ANGLE, (uint32_t)pkt->g.angle_urad);
	/* What the receiver would refuse is never sealed: one set of rules. */
	if (parse(pt, blk, true, &check) < 0)
		return -EINVAL;
	return seal(key, id, counter, pt, WIRE_PT_TOTALS_LEN, out);
}

int wire_seal(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
	      const struct playout_pkt *pkt, uint8_t *out, size_t cap)
{
	uint8_t pt[WIRE_PT_LEN];

	if (cap < WIRE_DATAGRAM_LEN)
		return -ENOSPC;
	if (plaintext(pkt, pt) < 0)
		return -EINVAL;
	return seal(key, id, counter, pt, WIRE_PT_LEN, out);
}

int wire_seal_totals(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
		     const struct playout_pkt *pkt, const uint32_t total[4], uint8_t *out, size_t cap)
{
	uint8_t pt[WIRE_PT_TOTALS_LEN];

	if (cap < WIRE_TOTALS_DATAGRAM_LEN)
		return -ENOSPC;
	if (plaintext(pkt, pt) < 0)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		store32(pt + WIRE_PT_OFF_TOTALS + 4 * i, total[i]);
	return seal(key, id, counter, pt, WIRE_PT_TOTALS_LEN, out);
}
