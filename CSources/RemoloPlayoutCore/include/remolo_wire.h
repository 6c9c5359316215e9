/* SPDX-License-Identifier: MIT */
/*
 * Sealed pointer datagrams (design note, part 2): seal on the sender, open on the
 * receiver's hot path. ChaCha20-Poly1305 as specified by RFC 8439 (the
 * IETF variant: 256-bit key, 96-bit nonce, 128-bit tag), from libsodium.
 *
 * ---- Datagram layout (one UDP payload, exactly 49 bytes) ----------------
 *
 * All integers little-endian. Offsets in bytes.
 *
 *   off len  field
 *     0   8  session id      cleartext; the 8 random bytes the receiver
 *                            handed out in the handshake, as given
 *     8   8  counter         cleartext; u64, starts at 0, +1 per datagram
 *    16  17  ciphertext      ChaCha20 encryption of the 17-byte plaintext:
 *                              pt[0]      kind   u8
 *                              pt[1..4]   a      i32
 *                              pt[5..8]   b      i32
 *                              pt[9..16]  tx_us  u64, sender clock, us
 *    33  16  tag             Poly1305 tag
 *
 *   key   = the 32-byte datagram key (sender -> receiver) of the session
 *   nonce = 00 00 00 00 || counter as u64 LE   (12 bytes; RFC 8439 2.8
 *           builds the 96-bit nonce from a 32-bit constant, here zero,
 *           and a 64-bit IV, here the counter)
 *   aad   = bytes 0..15 (session id || counter), so neither can be
 *           changed or moved to another session without failing the tag
 *   ciphertext || tag = AEAD_CHACHA20_POLY1305(key, nonce, plaintext, aad)
 *                       (RFC 8439 2.8; Python: ChaCha20Poly1305(key)
 *                       .encrypt(nonce, plaintext, aad))
 *
 * Kinds and their fields (Q8 = 256 units per pixel, or per 1/120 notch):
 *   1 motion     a = dx, b = dy, Q8 pixels (x right, y down)
 *   2 scroll     a = vertical, b = horizontal, Q8 hi-res wheel units
 *                (positive = up / right, as REL_WHEEL / REL_HWHEEL)
 *   3 button     a = Linux BTN_* code (0..65535), b = 1 down / 0 up
 *   4 heartbeat  a = b = 0; keeps the sender's radio awake, feeds the
 *                clock estimate, moves nothing
 * Anything else after a valid tag is dropped as WIRE_DROP_BAD_KIND; a
 * known kind with out-of-range fields as WIRE_DROP_BAD_FIELD.
 *
 * ---- The redundant layout (65 bytes; feature bit 1, `redundancy`) -------
 *
 * Only on a session whose hello granted the redundancy feature (README,
 * Protocol, "Extensions and the keyboard"): every datagram of any kind
 * may then be 65 bytes, the same header and sealing over a 33-byte
 * plaintext, the 17 above followed by the session's running totals:
 *
 *    17   4  motion x total    u32: the sum, modulo 2^32, of the a of every
 *    21   4  motion y total         motion datagram the sender sealed in this
 *                                   session, this one included (b for y)
 *    25   4  scroll v total    the same over scroll datagrams' a (vertical)
 *    29   4  scroll h total    ... and b (horizontal)
 *
 * The receiver keeps the same sums over what it opened (a 49-byte datagram
 * adds its own motion; a 65-byte one sets them to its totals). When a
 * 65-byte datagram's counter skips n datagrams, the totals minus the sums
 * minus its own motion are the motion of those n: the playout plays it
 * once, spread over the gap (pkt.lost, remolo_playout.h), instead of
 * losing it. Never twice: the strict counter refuses every replayed or
 * late datagram before its totals are read, and the sums move only with an
 * opened datagram. Where the counter skips nothing the totals can only
 * agree; if they do not (a broken sender), nothing is played for them and
 * the sums follow the totals.
 *
 * Elsewhere a 65-byte datagram is too long (WIRE_DROP_LONG), as it always
 * was: a receiver that never granted the feature, or one written before
 * it, refuses it the same way. A sender uses the layout only once the
 * receiver's hello granted it; a receiver that granted it still opens
 * 49-byte datagrams of the session (those sealed before the answer came).
 *
 * ---- The gesture layout (65 bytes; feature bit 3, `gestures`) -----------
 *
 * Only on a session whose hello granted the gestures feature: a datagram
 * of kind 6 (gesture) is 65 bytes, the same header and sealing over a
 * 33-byte plaintext, the 17 base bytes (kind 6; a, b = the centroid's
 * offset since the gesture began, micrometres, x right, y down; tx_us)
 * followed by the gesture's state instead of totals:
 *
 *    17   1  id       the sender's number for this gesture (+1 each, mod 256)
 *    18   1  type     1 swipe (3 or 4 fingers), 2 pinch (2 to 4 fingers)
 *    19   1  fingers
 *    20   1  flags    bit 0: the gesture's last state; others zero
 *    21   4  scale    i32, Q16 (65536 = 1); a swipe's is exactly 65536
 *    25   4  angle    i32, microradians, counter-clockwise; a swipe's is 0
 *    29   4  zero     reserved
 *
 * Every state is absolute (since the gesture began), so a lost datagram
 * costs a step, never a drift. A gesture datagram carries no motion and no
 * totals: the session's sums do not move, and on a redundant session the
 * datagrams the counter skipped before it are owed to the next datagram
 * that carries totals (wire_session.owed). Its a, b are bounded by
 * REMOLO_GESTURE_MAX_UM, the scale and angle by REMOLO_GESTURE_SCALE_* and
 * REMOLO_GESTURE_ANGLE_MAX (remolo_limits.h); anything else is
 * WIRE_DROP_BAD_FIELD. Kind 6 in 49 bytes, or on a session without the
 * feature, is WIRE_DROP_BAD_KIND; any other kind in 65 bytes on a session
 * that granted gestures but not redundancy is WIRE_DROP_BAD_KIND too.
 *
 * ---- Replay rule: strictly increasing counter ---------------------------
 *
 * A session accepts a datagram only if its counter is greater than every
 * counter that session has accepted so far. Gaps are allowed (lost
 * datagrams cost nothing); a late datagram older than the newest accepted
 * one is dropped as WIRE_DROP_REPLAY, even if it was never seen. RFC 6479
 * would keep a bitmap and accept such a late, unseen datagram; we do not:
 *  - the design note fixes it ("a late, older datagram is rejected as a replay");
 *  - the playout clock already treats a datagram that misses its slot as
 *    lost motion, and at 120 Hz one lost delta is invisible;
 *  - a late button event applied after a newer one could invert press and
 *    release and leave a button stuck;
 *  - the state is one u64 per session, checked before any crypto, with no
 *    bitmap to get wrong.
 * The newest counter moves only after the tag verifies: a forged datagram
 * (any counter) cannot push the window forward and block the real sender.
 * A datagram with a valid tag but a bad kind or field still consumes its
 * counter: it came from the key holder, and replaying it must not count
 * twice.
 *
 * Style: caller-owned structs, no allocation, no locks. One thread owns a
 * struct wire (the receive loop); wire_seal is stateless.
 */
#ifndef REMOLO_WIRE_H
#define REMOLO_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "remolo_playout.h"

/* ---- sizes -------------------------------------------------------------- */
#define WIRE_ID_LEN          8u
#define WIRE_KEY_LEN         32u     /* crypto_aead_chacha20poly1305_ietf_KEYBYTES */
#define WIRE_TAG_LEN         16u     /* crypto_aead_chacha20poly1305_ietf_ABYTES */
#define WIRE_NONCE_LEN       12u     /* crypto_aead_chacha20poly1305_ietf_NPUBBYTES */
#define WIRE_HDR_LEN         16u     /* session id + counter, the aad */
#define WIRE_PT_LEN          17u     /* kind + a + b + tx_us */
#define WIRE_DATAGRAM_LEN    49u     /* header + plaintext + tag */

#define WIRE_OFF_ID          0u
#define WIRE_OFF_COUNTER     8u
#define WIRE_OFF_CT          16u
#define WIRE_OFF_TAG         33u

#define WIRE_PT_OFF_KIND     0u
#define WIRE_PT_OFF_A        1u
#define WIRE_PT_OFF_B        5u
#define WIRE_PT_OFF_TX       9u

/* The redundant layout. */
#define WIRE_TOTALS_LEN      16u     /* four u32 running totals */
#define WIRE_PT_TOTALS_LEN   33u     /* plaintext + totals */
#define WIRE_TOTALS_DATAGRAM_LEN 65u /* header + plaintext + totals + tag */
#define WIRE_PT_OFF_TOTALS   17u

/* The gesture layout: the same sizes, a gesture block in the totals' place. */
#define WIRE_KIND_GESTURE    6u
#define WIRE_PT_OFF_GESTURE  17u
#define WIRE_G_OFF_ID        0u
#define WIRE_G_OFF_TYPE      1u
#define WIRE_G_OFF_FINGERS   2u
#define WIRE_G_OFF_FLAGS     3u
#define WIRE_G_OFF_SCALE     4u
#define WIRE_G_OFF_ANGLE     8u
#define WIRE_G_OFF_ZERO      12u
#define WIRE_G_LEN           16u

/* The 32-bit constant part of the nonce (RFC 8439 2.8) for datagrams. */
#define WIRE_NONCE_FIXED     0u

/* ---- capacity ----------------------------------------------------------- */
/* The table holds REMOLO_SESSIONS_MAX sessions (remolo_limits.h). Its
 * open-addressing index: a power of two, at least twice the capacity so
 * probe runs stay short. */
#define WIRE_INDEX_SLOTS     64u

_Static_assert(WIRE_DATAGRAM_LEN == WIRE_HDR_LEN + WIRE_PT_LEN + WIRE_TAG_LEN, "datagram: 8 + 8 + 17 + 16");
_Static_assert(WIRE_OFF_TAG == WIRE_OFF_CT + WIRE_PT_LEN, "tag follows the ciphertext");
_Static_assert(WIRE_PT_OFF_TX + 8 == WIRE_PT_LEN, "plaintext ends with tx_us");
_Static_assert(WIRE_PT_OFF_TOTALS == WIRE_PT_LEN && WIRE_PT_TOTALS_LEN == WIRE_PT_LEN + WIRE_TOTALS_LEN,
	       "the totals follow the plaintext");
_Static_assert(WIRE_TOTALS_DATAGRAM_LEN == WIRE_HDR_LEN + WIRE_PT_TOTALS_LEN + WIRE_TAG_LEN,
	       "redundant datagram: 8 + 8 + 33 + 16");
_Static_assert(WIRE_PT_OFF_GESTURE + WIRE_G_LEN == WIRE_PT_TOTALS_LEN && WIRE_G_OFF_ZERO + 4 == WIRE_G_LEN,
	       "the gesture block fills the totals' place exactly");
_Static_assert(WIRE_KIND_GESTURE == PLAYOUT_KIND_GESTURE, "the wire's gesture kind is the playout's");
_Static_assert((WIRE_INDEX_SLOTS & (WIRE_INDEX_SLOTS - 1)) == 0, "index: power of two");
_Static_assert(WIRE_INDEX_SLOTS >= 2 * REMOLO_SESSIONS_MAX, "index load <= 1/2");
_Static_assert(REMOLO_SESSIONS_MAX <= 255, "index entries are u8 (slot + 1)");

/* ---- drop reasons ------------------------------------------------------- */
/* wire_open returns the slot (>= 0) or minus one of these (not errno). */
enum wire_drop {
	WIRE_DROP_SHORT = 1,           /* fewer than WIRE_DATAGRAM_LEN bytes */
	WIRE_DROP_LONG = 2,            /* more than WIRE_DATAGRAM_LEN bytes, other
					* than the redundant layout on a session
					* that granted it */
	WIRE_DROP_UNKNOWN_SESSION = 3, /* no live session has this id */
	WIRE_DROP_REPLAY = 4,          /* counter <= newest accepted counter */
	WIRE_DROP_BAD_TAG = 5,         /* forged, corrupted or wrong key */
	WIRE_DROP_BAD_KIND = 6,        /* authentic, kind not 1..4 (or 6 in the
					* gesture layout where granted) */
	WIRE_DROP_BAD_FIELD = 7,       /* authentic, fields invalid for the kind */
	WIRE_DROP_COUNT = 8,           /* array size; index 0 unused */
};

struct wire_stats {
	uint64_t opened;
	uint64_t drop[WIRE_DROP_COUNT];  /* by enum wire_drop */
};

/* ---- sessions ----------------------------------------------------------- */
struct wire_session {
	uint8_t key[WIRE_KEY_LEN];
	uint8_t id[WIRE_ID_LEN];
	uint64_t newest;               /* newest accepted counter, if any_seen */
	uint64_t opened;               /* datagrams accepted */
	uint64_t rejected;             /* replays and bad tags for this id */
	uint64_t recovered;            /* datagrams whose totals recovered motion */
	uint32_t total[4];             /* running sums of what was opened (the
					* redundant layout): motion x, y, scroll v, h */
	uint64_t owed;                 /* datagrams skipped before gesture
					* datagrams since the last one that
					* carried totals: its gap includes them */
	uint8_t any_seen;
	uint8_t live;
	uint8_t totals;                /* the redundant layout is granted */
	uint8_t gestures;              /* the gesture layout is granted */
};

struct wire {
	struct wire_session sess[REMOLO_SESSIONS_MAX];
	uint8_t index[WIRE_INDEX_SLOTS]; /* 0 = empty, else slot + 1 */
	uint32_t nsessions;
	struct wire_stats stats;
};

/* What an opened datagram yields. */
struct wire_rx {
	struct playout_pkt pkt;        /* ready for playout_push */
	uint64_t counter;
	uint8_t id[WIRE_ID_LEN];
	uint32_t slot;
};

/* Initialises libsodium (picks the fast ChaCha20/Poly1305 code); 0 or -1.
 * wire_init calls it; a sender that only seals calls it once itself. */
int wire_crypto_init(void);

/* Empties the table. 0, or -1 when libsodium cannot initialise. */
int wire_init(struct wire *w);
/* Wipes every key (sodium_memzero) and empties the table. */
void wire_deinit(struct wire *w);

/* Adds a session; returns its slot (>= 0), -EEXIST if the id is live,
 * -ENOSPC when REMOLO_SESSIONS_MAX sessions are live. Counters start fresh. */
int wire_add_session(struct wire *w, const uint8_t id[WIRE_ID_LEN], const uint8_t key[WIRE_KEY_LEN]);
/* Wipes and removes a session: 0 or -ENOENT. */
int wire_remove_session(struct wire *w, const uint8_t id[WIRE_ID_LEN]);
/* The slot of a live id, or -ENOENT. */
int wire_lookup(const struct wire *w, const uint8_t id[WIRE_ID_LEN]);
/* The newest counter the session accepted: 1 with *out set, 0 if it has
 * accepted none yet (*out untouched), -ENOENT if the id is not live. Exists
 * so callers never copy a struct wire_session (and with it the key) out of
 * the table just to read one field. */
int wire_newest(const struct wire *w, const uint8_t id[WIRE_ID_LEN], uint64_t *out);

/* The session's hello granted the redundancy feature (on = 1) or not:
 * 0, or -ENOENT if the id is not live. */
int wire_set_totals(struct wire *w, const uint8_t id[WIRE_ID_LEN], int on);

/* The session's hello granted the gestures feature (on = 1) or not: 0, or
 * -ENOENT if the id is not live. */
int wire_set_gestures(struct wire *w, const uint8_t id[WIRE_ID_LEN], int on);

/* Opens one datagram: the slot (>= 0) with *out filled, or -enum wire_drop
 * (counted in w->stats; *out untouched). A redundant datagram's recovered
 * motion is in out->pkt.lost and lost_n. */
int wire_open(struct wire *w, const uint8_t *buf, size_t len, struct wire_rx *out);

/* Adds a datagram's own motion to running totals (motion x, y, scroll v,
 * h; modulo 2^32): what a sender does for every datagram it seals, before
 * sealing it, and a receiver for every 49-byte datagram it opens. */
void wire_totals_add(uint32_t total[4], const struct playout_pkt *pkt);

/* Seals pkt in the redundant layout with these totals (this datagram's
 * own motion included) into out: WIRE_TOTALS_DATAGRAM_LEN, or as
 * wire_seal. Only for a session whose hello granted the feature. */
int wire_seal_totals(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
		     const struct playout_pkt *pkt, const uint32_t total[4], uint8_t *out, size_t cap);

/* Seals a gesture state (kind PLAYOUT_KIND_GESTURE, type swipe or pinch,
 * a/b the offset in micrometres, pkt->g the rest) in the gesture layout:
 * WIRE_TOTALS_DATAGRAM_LEN, -ENOSPC, or -EINVAL when a field is outside
 * what wire_open accepts. Only for a session whose hello granted it. */
int wire_seal_gesture(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
		      const struct playout_pkt *pkt, uint8_t *out, size_t cap);

/* Seals pkt (kind, a/b or code/down, tx_us) as the datagram with this
 * counter into out. Returns WIRE_DATAGRAM_LEN, -ENOSPC if cap is too small,
 * -EINVAL for an unknown kind or a button with down > 1. The caller never
 * reuses a counter under one key (that would reuse the nonce). */
int wire_seal(const uint8_t key[WIRE_KEY_LEN], const uint8_t id[WIRE_ID_LEN], uint64_t counter,
	      const struct playout_pkt *pkt, uint8_t *out, size_t cap);

/* ---- the AEAD itself (RFC 8439 2.8), as wire_open/wire_seal use it ------ */
/* nonce = fixed (u32 LE) || iv (u64 LE). Seal writes ptlen + WIRE_TAG_LEN
 * bytes (ciphertext || tag) to out and returns that count. Open checks the
 * tag over ct (ctlen >= WIRE_TAG_LEN, tag last) before decrypting anything;
 * it returns ctlen - WIRE_TAG_LEN with the plaintext in out, or -1 with out
 * unspecified (never trust it). */
int wire_aead_seal(uint8_t *out, const uint8_t *pt, size_t ptlen, const uint8_t *ad, size_t adlen,
		   uint32_t fixed, uint64_t iv, const uint8_t key[WIRE_KEY_LEN]);
int wire_aead_open(uint8_t *out, const uint8_t *ct, size_t ctlen, const uint8_t *ad, size_t adlen,
		   uint32_t fixed, uint64_t iv, const uint8_t key[WIRE_KEY_LEN]);

#endif
