/* SPDX-License-Identifier: MIT */
/*
 * The C core's self-test for receiver boards: built by Tests/Boards/run with
 * each cross compiler (arm64, armhf) and run under qemu-user, so that a
 * Raspberry-Pi-class receiver is checked, not assumed. Plain C against the
 * public headers; it repeats, case for case, the host suites whose
 * results could differ on another ABI:
 *
 *   1xx  ChaCha20-Poly1305 (RFC 8439 2.8.2) through wire_aead_*, as wire.c
 *        calls libsodium                            (Tests/WireTests/AEADTests)
 *   2xx  docs/protocol.md's 49-byte datagram through wire_seal/wire_open, a flipped
 *        bit, a replay                          (Tests/WireTests/DatagramTests)
 *   3xx  drain conservation: emitted * 256 + remainder == input, exactly
 *                                            (Tests/RemoloCoreTests/DrainTests)
 *   4xx  hostile time: backwards, far ahead, int32/int64 extremes
 *                                      (Tests/RemoloCoreTests/HostileTimeTests)
 *   5xx  the portable parts of the receive side: uinput frames (the kernel's
 *        struct input_event) of the pointer and the keyboard, the command
 *        ring across u32 wrap-around, the statistics seqlock over u64 words,
 *        the monotonic clock
 *   6xx  the key queue: a text in order, one change per key per tick, a
 *        full queue refusing presses and taking releases, the flush releasing every key (its
 *        state is 64-bit words)           (Tests/RemoloCoreTests/KeyQueueTests)
 *
 * What does not run here: io_uring (rxring.c, rxloop.c) and uinput
 * (ptrdev_init/ptrdev_write) need a kernel that qemu-user does not emulate;
 * they are compiled with -Werror and linked against each architecture's
 * liburing and libevdev, and run for real in Tests/VM.
 *
 * Output: one line per failed check, "case N (name): ...", then
 * "selftest: N passed, M failed"; exit status 1 on any failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sodium.h>

#include "remolo_kbddev.h"
#include "remolo_playout.h"
#include "remolo_ptrdev.h"
#include "remolo_rx.h"
#include "rx_internal.h"     /* the command ring and the stats seqlock, tested on their own */
#include "remolo_wire.h"

/* ---- layouts that leave the process ------------------------------------ */
/*
 * The datagram itself is built byte by byte (wire.c), so no struct layout
 * reaches the network. What does: frames written to uinput (the kernel's
 * struct input_event), arrival records written to a pipe and read back by
 * offset (Receiver.swift), and u64 words copied with atomics.
 */
/* linux/input.h: two longs of time, then type, code, value. On 32-bit ARM
 * that is 16 bytes even with a 64-bit time_t (__USE_TIME_BITS64 switches
 * to __kernel_ulong_t fields since Linux 5.0); 24 on 64-bit. A header that
 * sized it by time_t would make every uinput write -EINVAL. */
_Static_assert(sizeof(struct input_event) == 2 * sizeof(long) + 8, "input_event: the kernel's layout");
_Static_assert(offsetof(struct input_event, type) == 2 * sizeof(long), "input_event: type after the time");
_Static_assert(offsetof(struct rx_record, tx_us) == 0 && offsetof(struct rx_record, rx_us) == 8 &&
	       offsetof(struct rx_record, a) == 16 && offsetof(struct rx_record, b) == 20 &&
	       offsetof(struct rx_record, session) == 24 && offsetof(struct rx_record, kind) == 28 &&
	       offsetof(struct rx_record, slot) == 29 && offsetof(struct rx_record, pad) == 30,
	       "rx_record: the same offsets on every ABI");
/* ldrexd/strexd (ARMv7) fault on a u64 that is not 8-aligned. */
_Static_assert(_Alignof(uint64_t) == 8, "u64 is 8-aligned (AAPCS, LP64)");
_Static_assert(offsetof(struct rx_stats_pub, s) % 8 == 0, "published stats: aligned u64 words");
_Static_assert(offsetof(struct rx_cmdq, head) % 4 == 0 && offsetof(struct rx_cmdq, tail) % 4 == 0,
	       "command ring indices: aligned u32");
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "u64 atomics without locks");
_Static_assert(sizeof(struct playout_pkt) == 56 && offsetof(struct playout_pkt, g) == 40,
	       "playout_pkt: u64 + 2 i32 + u16 + 2 u8 + u32 + 4 i32 (lost motion), then the gesture's 2 i32 + "
	       "4 u8, padded to the u64's 8: the same layout on every ABI");
_Static_assert(sizeof(struct rx_stats) % 8 == 0, "stats: whole u64 words");
/* Datagram offsets as docs/protocol.md's table has them. */
_Static_assert(WIRE_OFF_ID == 0 && WIRE_OFF_COUNTER == 8 && WIRE_OFF_CT == 16 && WIRE_OFF_TAG == 33 &&
	       WIRE_DATAGRAM_LEN == 49, "datagram layout");

/* ---- reporting ---------------------------------------------------------- */

static int cur_no;
static const char *cur_name;
static int cur_fails;

__attribute__((format(printf, 3, 4)))
static void fail_at(int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	printf("case %d (%s): FAIL at selftest.c:%d: %s", cur_no, cur_name, line, expr);
	/* fmt starts with the space CHECK puts in front of its message. */
	if (fmt[1]) {
		printf(":");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	cur_fails++;
}

#define CHECK(cond, ...) \
	do { if (!(cond)) fail_at(__LINE__, #cond, " " __VA_ARGS__); } while (0)

/* ---- helpers ------------------------------------------------------------ */

/* SplitMix64, as Tests/RemoloCoreTests/Support.swift: the same streams. */
static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static size_t unhex(uint8_t *out, size_t cap, const char *s)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			if (n < cap)
				out[n] = (uint8_t)(hi << 4 | v);
			n++;
			hi = -1;
		}
	}
	return n;
}

static int64_t i64abs(int64_t v) { return v < 0 ? -v : v; }

#define TICK_US ((uint64_t)REMOLO_TICK_NS / 1000u)

static void config(struct playout_config *cfg, bool dflt)
{
	if (dflt)
		playout_config_default(cfg);
	else
		playout_config_seed(cfg);
}

static int push(struct playout *p, uint64_t rx, uint64_t tx, uint8_t kind, int32_t a, int32_t b,
		uint16_t code, bool down)
{
	struct playout_pkt pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.tx_us = tx;
	pkt.kind = kind;
	pkt.a = a;
	pkt.b = b;
	pkt.code = code;
	pkt.down = down ? 1 : 0;
	return playout_push(p, rx, &pkt);
}

static uint32_t queued(const struct playout *p) { return p->q.tail - p->q.head; }

/* A playout is ~30 kB; one static instance serves every case in turn. */
static struct playout po;

/* ---- 1xx: RFC 8439 2.8.2 ------------------------------------------------ */

static const char rfc_key[] =
	"80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f 90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f";
static const char rfc_aad[] = "50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7";
static const char rfc_pt[] = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
			     "for the future, sunscreen would be it.";
static const char rfc_ct[] =
	"d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2 a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6"
	"3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b 1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36"
	"92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58 fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc"
	"3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b 61 16";
static const char rfc_tag[] = "1a e1 0b 59 4f 09 e2 6a 7e 90 2e cb d0 60 06 91";
/* The nonce 07 00 00 00 40 41 42 43 44 45 46 47: fixed 7, IV as u64 LE. */
#define RFC_FIXED 7u
#define RFC_IV    0x4746454443424140ull
#define RFC_PT_LEN 114u

struct rfc {
	uint8_t key[32], aad[12], sealed[RFC_PT_LEN + 16];
	size_t aadlen, sealedlen;
	uint32_t fixed;
	uint64_t iv;
};

static void rfc_load(struct rfc *v)
{
	unhex(v->key, sizeof(v->key), rfc_key);
	v->aadlen = unhex(v->aad, sizeof(v->aad), rfc_aad);
	unhex(v->sealed, RFC_PT_LEN, rfc_ct);
	unhex(v->sealed + RFC_PT_LEN, 16, rfc_tag);
	v->sealedlen = sizeof(v->sealed);
	v->fixed = RFC_FIXED;
	v->iv = RFC_IV;
}

static void t_rfc_seal(const void *arg)
{
	struct rfc v;
	uint8_t out[RFC_PT_LEN + 16];
	int n;

	rfc_load(&v);
	CHECK(strlen(rfc_pt) == RFC_PT_LEN);
	n = wire_aead_seal(out, (const uint8_t *)rfc_pt, RFC_PT_LEN, v.aad, v.aadlen, v.fixed, v.iv, v.key);
	CHECK(n == (int)sizeof(out), "returned %d", n);
	CHECK(memcmp(out, v.sealed, RFC_PT_LEN) == 0, "ciphertext differs from RFC 8439 2.8.2");
	CHECK(memcmp(out + RFC_PT_LEN, v.sealed + RFC_PT_LEN, 16) == 0, "tag differs from RFC 8439 2.8.2");
}

static void t_rfc_open(const void *arg)
{
	struct rfc v;
	uint8_t out[RFC_PT_LEN];
	int n;

	rfc_load(&v);
	n = wire_aead_open(out, v.sealed, v.sealedlen, v.aad, v.aadlen, v.fixed, v.iv, v.key);
	CHECK(n == (int)RFC_PT_LEN, "returned %d", n);
	CHECK(memcmp(out, rfc_pt, RFC_PT_LEN) == 0, "plaintext differs");
}

/* Each changes one input of the vector; open must refuse it. */
enum tamper { T_CT_BIT, T_TAG_BIT, T_AAD_BIT, T_FIXED, T_IV, T_KEY_BIT, T_TAG_SHORT, T_NO_AAD };

static void t_rfc_tamper(const void *arg)
{
	enum tamper t = *(const enum tamper *)arg;
	struct rfc v;
	uint8_t out[RFC_PT_LEN + 16];
	int n;

	rfc_load(&v);
	switch (t) {
	case T_CT_BIT: v.sealed[0] ^= 1; break;
	case T_TAG_BIT: v.sealed[129] ^= 0x80; break;
	case T_AAD_BIT: v.aad[11] ^= 4; break;
	case T_FIXED: v.fixed = 0; break;
	case T_IV: v.iv++; break;
	case T_KEY_BIT: v.key[31] ^= 1; break;
	case T_TAG_SHORT: v.sealedlen--; break;
	case T_NO_AAD: v.aadlen = 0; break;
	}
	n = wire_aead_open(out, v.sealed, v.sealedlen, v.aad, v.aadlen, v.fixed, v.iv, v.key);
	CHECK(n == -1, "returned %d", n);
}

/* ---- 2xx: docs/protocol.md's datagram ---------------------------------- */

/* docs/protocol.md, Pointer datagrams: key 00..1f, id "remolo-A",
 * counter 0, motion dx 785 dy -1280, tx_us 1000000. */
static const char readme_dgram[] =
	"72 65 6d 6f 6c 6f 2d 41  00 00 00 00 00 00 00 00"
	"19 a9 41 31 ad e6 5d 2e ec 21 1e 6e af 43 4e 27 f8"
	"ec 8a 9d ac 59 b9 a2 59 5b 10 2e 12 e4 25 6c ae";
static const uint8_t id_a[WIRE_ID_LEN] = { 'r', 'e', 'm', 'o', 'l', 'o', '-', 'A' };
static struct wire wire_tbl;

static void key_a(uint8_t key[WIRE_KEY_LEN])
{
	for (unsigned i = 0; i < WIRE_KEY_LEN; i++)
		key[i] = (uint8_t)i;
}

static void readme_pkt(struct playout_pkt *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->kind = PLAYOUT_KIND_MOTION;
	pkt->a = 785;
	pkt->b = -1280;
	pkt->tx_us = 1000000;
}

/* A table with session A only. */
static bool wire_fresh(void)
{
	uint8_t key[WIRE_KEY_LEN];

	key_a(key);
	CHECK(wire_init(&wire_tbl) == 0, "libsodium did not initialise");
	CHECK(wire_add_session(&wire_tbl, id_a, key) == 0);
	return cur_fails == 0;
}

static void t_dgram_seal(const void *arg)
{
	uint8_t key[WIRE_KEY_LEN], want[WIRE_DATAGRAM_LEN], got[64];
	struct playout_pkt pkt;
	int n;

	key_a(key);
	readme_pkt(&pkt);
	CHECK(unhex(want, sizeof(want), readme_dgram) == WIRE_DATAGRAM_LEN);
	n = wire_seal(key, id_a, 0, &pkt, got, sizeof(got));
	CHECK(n == (int)WIRE_DATAGRAM_LEN, "returned %d", n);
	for (unsigned i = 0; i < WIRE_DATAGRAM_LEN; i++)
		CHECK(got[i] == want[i], "byte %u: 0x%02x, docs/protocol.md has 0x%02x", i, got[i], want[i]);
}

static void t_dgram_open(const void *arg)
{
	uint8_t d[WIRE_DATAGRAM_LEN];
	struct wire_rx rx;
	uint64_t newest = 99;
	int r;

	if (!wire_fresh())
		return;
	memset(&rx, 0, sizeof(rx));
	unhex(d, sizeof(d), readme_dgram);
	r = wire_open(&wire_tbl, d, sizeof(d), &rx);
	CHECK(r == 0, "returned %d", r);
	CHECK(rx.pkt.kind == PLAYOUT_KIND_MOTION && rx.pkt.a == 785 && rx.pkt.b == -1280,
	      "kind %u a %" PRId32 " b %" PRId32, rx.pkt.kind, rx.pkt.a, rx.pkt.b);
	CHECK(rx.pkt.tx_us == 1000000, "tx_us %" PRIu64, rx.pkt.tx_us);
	CHECK(rx.counter == 0 && rx.slot == 0 && memcmp(rx.id, id_a, WIRE_ID_LEN) == 0);
	CHECK(wire_newest(&wire_tbl, id_a, &newest) == 1 && newest == 0);
	wire_deinit(&wire_tbl);
}

/* One bit flipped: in the header the id no longer matches (or the tag
 * fails for the counter), anywhere else the tag fails; the counter never
 * moves and the original still opens afterwards. */
struct flip { unsigned byte, bit; int want; };

static void t_dgram_flip(const void *arg)
{
	const struct flip *f = arg;
	uint8_t d[WIRE_DATAGRAM_LEN];
	struct wire_rx rx;
	uint64_t newest;
	int r;

	if (!wire_fresh())
		return;
	unhex(d, sizeof(d), readme_dgram);
	d[f->byte] ^= (uint8_t)(1u << f->bit);
	r = wire_open(&wire_tbl, d, sizeof(d), &rx);
	CHECK(r == -f->want, "byte %u bit %u: returned %d, want %d", f->byte, f->bit, r, -f->want);
	CHECK(wire_newest(&wire_tbl, id_a, &newest) == 0, "a refused datagram moved the counter");
	d[f->byte] ^= (uint8_t)(1u << f->bit);
	CHECK(wire_open(&wire_tbl, d, sizeof(d), &rx) == 0, "the original no longer opens");
	wire_deinit(&wire_tbl);
}

static void t_dgram_every_bit(const void *arg)
{
	uint8_t d[WIRE_DATAGRAM_LEN];
	struct wire_rx rx;
	uint64_t newest;
	unsigned refused = 0;

	if (!wire_fresh())
		return;
	unhex(d, sizeof(d), readme_dgram);
	for (unsigned byte = 0; byte < WIRE_DATAGRAM_LEN; byte++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			int want = byte < WIRE_ID_LEN ? WIRE_DROP_UNKNOWN_SESSION : WIRE_DROP_BAD_TAG;
			int r;

			d[byte] ^= (uint8_t)(1u << bit);
			r = wire_open(&wire_tbl, d, sizeof(d), &rx);
			d[byte] ^= (uint8_t)(1u << bit);
			CHECK(r == -want, "byte %u bit %u: returned %d, want %d", byte, bit, r, -want);
			refused += r == -want;
		}
	}
	CHECK(refused == WIRE_DATAGRAM_LEN * 8, "%u of 392 refused", refused);
	CHECK(wire_newest(&wire_tbl, id_a, &newest) == 0);
	CHECK(wire_tbl.stats.drop[WIRE_DROP_UNKNOWN_SESSION] == 64 &&
	      wire_tbl.stats.drop[WIRE_DROP_BAD_TAG] == 41 * 8,
	      "unknown %" PRIu64 " bad tag %" PRIu64, wire_tbl.stats.drop[WIRE_DROP_UNKNOWN_SESSION],
	      wire_tbl.stats.drop[WIRE_DROP_BAD_TAG]);
	wire_deinit(&wire_tbl);
}

static void t_dgram_replay(const void *arg)
{
	uint8_t key[WIRE_KEY_LEN], d[WIRE_DATAGRAM_LEN], d5[WIRE_DATAGRAM_LEN];
	struct playout_pkt pkt;
	struct wire_rx rx;
	uint64_t newest = 0;
	int r;

	if (!wire_fresh())
		return;
	key_a(key);
	readme_pkt(&pkt);
	unhex(d, sizeof(d), readme_dgram);
	CHECK(wire_open(&wire_tbl, d, sizeof(d), &rx) == 0);
	r = wire_open(&wire_tbl, d, sizeof(d), &rx);
	CHECK(r == -WIRE_DROP_REPLAY, "the same datagram again: returned %d", r);
	/* Counters beyond 2^32 compare as u64, not as a 32-bit long. */
	CHECK(wire_seal(key, id_a, (1ull << 32) + 5, &pkt, d5, sizeof(d5)) == (int)WIRE_DATAGRAM_LEN);
	CHECK(wire_open(&wire_tbl, d5, sizeof(d5), &rx) == 0 && rx.counter == (1ull << 32) + 5);
	CHECK(wire_seal(key, id_a, 6, &pkt, d5, sizeof(d5)) == (int)WIRE_DATAGRAM_LEN);
	r = wire_open(&wire_tbl, d5, sizeof(d5), &rx);
	CHECK(r == -WIRE_DROP_REPLAY, "counter 6 after 2^32 + 5: returned %d", r);
	CHECK(wire_newest(&wire_tbl, id_a, &newest) == 1 && newest == (1ull << 32) + 5,
	      "newest %" PRIu64, newest);
	CHECK(wire_tbl.stats.drop[WIRE_DROP_REPLAY] == 2);
	wire_deinit(&wire_tbl);
}

/* ---- 3xx: drain conservation -------------------------------------------- */

struct drain_case { uint64_t seed; bool dflt; };

struct sums { int64_t got[4], notches[2]; };

static void tick_into(struct playout *p, uint64_t now, struct sums *s)
{
	struct playout_out o;

	playout_tick(p, now, &o);
	s->got[0] += o.dx;
	s->got[1] += o.dy;
	s->got[2] += o.wheel_hires;
	s->got[3] += o.hwheel_hires;
	s->notches[0] += o.wheel;
	s->notches[1] += o.hwheel;
}

/* 10^5 random packets (motion, scroll, buttons, heartbeats; jitter, clumps,
 * losses, clock steps) at 480 Hz: emitted integers * 256 plus the carried
 * remainder equal the input exactly, and the remainder is under half a
 * unit, so the total was rounded once. The same stream as DrainTests. */
static void t_drain(const void *arg)
{
	const struct drain_case *c = arg;
	struct playout_config cfg;
	struct sums s;
	int64_t want[4] = { 0 };
	uint64_t rng = c->seed, tx = 1000000, rx = 50000000, next_tick;

	memset(&s, 0, sizeof(s));
	config(&cfg, c->dflt);
	CHECK(playout_init(&po, &cfg) == 0);
	next_tick = rx;
	for (int k = 0; k < 100000; k++) {
		uint64_t clump, arrival;
		int32_t a, b;

		tx += 2000 + splitmix(&rng) % 14000;
		if (splitmix(&rng) % 1000 == 0)
			tx += 3600000000ull;          /* clock step ahead */
		if (splitmix(&rng) % 1000 == 0)
			tx -= 10000000;               /* and back (mod 2^64) */
		clump = splitmix(&rng) % 50 == 0 ? splitmix(&rng) % 200000 : 0;
		rx += 2000 + splitmix(&rng) % 14000;
		arrival = rx + clump;
		while (next_tick <= arrival) {
			tick_into(&po, next_tick, &s);
			next_tick += TICK_US;
		}
		if (splitmix(&rng) % 100 == 0)
			continue;                     /* lost */
		a = (int32_t)((int64_t)(splitmix(&rng) % 80001) - 40000);
		b = (int32_t)((int64_t)(splitmix(&rng) % 80001) - 40000);
		switch (k % 10) {
		case 0:
			push(&po, arrival, tx, PLAYOUT_KIND_SCROLL, a / 8, b / 8, 0, false);
			want[2] += a / 8;
			want[3] += b / 8;
			break;
		case 1:
			push(&po, arrival, tx, PLAYOUT_KIND_HEARTBEAT, 0, 0, 0, false);
			break;
		case 2:
			push(&po, arrival, tx, PLAYOUT_KIND_BUTTON, 0, 0, 0x110, k % 20 == 2);
			break;
		default:
			push(&po, arrival, tx, PLAYOUT_KIND_MOTION, a, b, 0, false);
			want[0] += a;
			want[1] += b;
		}
	}
	for (int i = 0; i < 2000; i++) {
		tick_into(&po, next_tick, &s);
		next_tick += TICK_US;
	}
	CHECK(queued(&po) == 0, "%" PRIu32 " segments left", queued(&po));
	for (int i = 0; i < 4; i++) {
		CHECK(s.got[i] * 256 + po.acc[i] == want[i],
		      "axis %d: emitted %" PRId64 " * 256 + remainder %" PRId64 " != input %" PRId64,
		      i, s.got[i], po.acc[i], want[i]);
		CHECK(i64abs(po.acc[i]) <= 128, "axis %d: remainder %" PRId64, i, po.acc[i]);
	}
	CHECK(s.notches[0] * 120 + po.notch_acc[0] == s.got[2], "vertical notches");
	CHECK(s.notches[1] * 120 + po.notch_acc[1] == s.got[3], "horizontal notches");
	CHECK(po.stats.packets > 90000, "%" PRIu64 " packets", po.stats.packets);
	CHECK(po.stats.late > 0, "the run exercised no late replay");
	CHECK(po.stats.clock_steps > 0, "the run exercised no clock step");
}

/* ---- 4xx: hostile time -------------------------------------------------- */

/* (sender time, dx in Q8) of packet k; arrivals every 8.333 ms. */
typedef void (*stream_fn)(int k, uint64_t *tx, int32_t *dx);

static void s_backwards(int k, uint64_t *tx, int32_t *dx)
{ *tx = 10000000000ull - (uint64_t)k * 8333; *dx = 256; }
static void s_hours_ahead(int k, uint64_t *tx, int32_t *dx)
{ *tx = (uint64_t)k * 8333 + (k % 50 == 49 ? 5 * 3600000000ull : 0); *dx = 512; }
static void s_duplicate(int k, uint64_t *tx, int32_t *dx)
{ *tx = 42; *dx = 300; }
static void s_int32_max(int k, uint64_t *tx, int32_t *dx)
{ *tx = (uint64_t)k * 8333; *dx = INT32_MAX; }
static void s_int32_min(int k, uint64_t *tx, int32_t *dx)
{ *tx = (uint64_t)k * 8333; *dx = INT32_MIN; }
static void s_zero_max(int k, uint64_t *tx, int32_t *dx)
{ *tx = k % 2 == 0 ? 0 : UINT64_MAX; *dx = -700; }
static void s_random(int k, uint64_t *tx, int32_t *dx)
{
	uint64_t r = (uint64_t)k;

	*tx = splitmix(&r);
	*dx = (int32_t)(uint32_t)splitmix(&r);
}
static void s_step_back(int k, uint64_t *tx, int32_t *dx)
{ *tx = k < 100 ? (uint64_t)k * 8333 : (uint64_t)k * 8333 - 5000000; *dx = 256; }
/* Arrivals are 1 000 000 + 8 333 k: these hold the sample (arrival -
 * sender time) at the ends of int64 for the whole run. */
static void s_int64_max(int k, uint64_t *tx, int32_t *dx)
{ *tx = 1000000 + (uint64_t)k * 8333 - (uint64_t)INT64_MAX; *dx = 256; }
static void s_int64_min(int k, uint64_t *tx, int32_t *dx)
{ *tx = 1000000 + (uint64_t)k * 8333 + (1ull << 63); *dx = 256; }
static void s_int64_both(int k, uint64_t *tx, int32_t *dx)
{ *tx = 1000000 + (uint64_t)k * 8333 + (k % 2 == 0 ? (1ull << 63) : 1); *dx = -256; }

struct hostile_case { stream_fn packet; int count; bool dflt; };

/* Defined behaviour and no multi-screen jump: clamped motion conserved,
 * no tick near a screen, the delay inside its clamp. */
static void t_hostile(const void *arg)
{
	const struct hostile_case *c = arg;
	const int64_t bound = REMOLO_MAX_MOTION_Q8;
	struct playout_config cfg;
	struct playout_out o;
	int64_t want = 0, got = 0, worst = 0;
	uint64_t rx = 1000000, t = rx;

	config(&cfg, c->dflt);
	CHECK(playout_init(&po, &cfg) == 0);
	for (int k = 0; k < c->count; k++) {
		uint64_t tx;
		int32_t dx;

		c->packet(k, &tx, &dx);
		push(&po, rx, tx, PLAYOUT_KIND_MOTION, dx, 0, 0, false);
		want += dx < -bound ? -bound : dx > bound ? bound : dx;
		for (; t < rx + 8333; t += TICK_US) {
			playout_tick(&po, t, &o);
			got += o.dx;
			worst = i64abs(o.dx) > worst ? i64abs(o.dx) : worst;
		}
		rx += 8333;
	}
	for (int i = 0; i < 2000; i++, t += TICK_US) {
		playout_tick(&po, t, &o);
		got += o.dx;
		worst = i64abs(o.dx) > worst ? i64abs(o.dx) : worst;
	}
	CHECK(queued(&po) == 0, "not drained: %" PRIu32 " segments", queued(&po));
	CHECK(got * 256 + po.acc[0] == want, "emitted %" PRId64 " * 256 + %" PRId64 " != clamped input %" PRId64,
	      got, po.acc[0], want);
	CHECK(worst <= 3 * 1024, "worst tick %" PRId64 " px", worst);
	/* Inside the policy's own clamp (the seed's is 6..60 ms, the default's lower). */
	CHECK(po.delay.delay_us >= po.cfg.delay_min_us && po.delay.delay_us <= po.cfg.delay_max_us,
	      "delay %" PRIu32 " us outside %" PRIu32 "..%" PRIu32, po.delay.delay_us, po.cfg.delay_min_us, po.cfg.delay_max_us);
}

/* One INT32_MAX/INT32_MIN packet moves exactly the bound, not at once. */
static void t_huge_packet(const void *arg)
{
	struct playout_out o;
	int64_t x = 0, y = 0, biggest = 0;
	uint64_t t = 1000000;

	CHECK(playout_init(&po, NULL) == 0);
	push(&po, 1000000, 0, PLAYOUT_KIND_HEARTBEAT, 0, 0, 0, false);
	push(&po, 1008333, 8333, PLAYOUT_KIND_MOTION, INT32_MAX, INT32_MIN, 0, false);
	for (int i = 0; i < 100; i++, t += TICK_US) {
		playout_tick(&po, t, &o);
		x += o.dx;
		y += o.dy;
		biggest = i64abs(o.dx) > biggest ? i64abs(o.dx) : biggest;
	}
	CHECK(x == 1024 && y == -1024, "x %" PRId64 " y %" PRId64, x, y);
	CHECK(biggest < 1024, "one tick carried %" PRId64 " px", biggest);
	CHECK(po.stats.clamped == 2, "clamped %" PRIu64, po.stats.clamped);
}

/* Huge scroll deltas: at most 10 notches per packet. */
static void t_huge_scroll(const void *arg)
{
	struct playout_out o;
	int64_t v = 0, h = 0, notches = 0;
	uint64_t t = 1000000;

	CHECK(playout_init(&po, NULL) == 0);
	push(&po, 1000000, 0, PLAYOUT_KIND_SCROLL, INT32_MIN, INT32_MAX, 0, false);
	for (int i = 0; i < 100; i++, t += TICK_US) {
		playout_tick(&po, t, &o);
		v += o.wheel_hires;
		h += o.hwheel_hires;
		notches += o.wheel;
	}
	CHECK(v == -1200 && h == 1200 && notches == -10,
	      "v %" PRId64 " h %" PRId64 " notches %" PRId64, v, h, notches);
}

/* Receiver time an hour ahead, then back to 5 us: the drain holds, and
 * motion is not lost while the clock stands still. */
static void t_receiver_jumps(const void *arg)
{
	const uint64_t far = 1000000 + 3600000000ull;
	struct playout_out o;
	int64_t total = 0;

	CHECK(playout_init(&po, NULL) == 0);
	push(&po, 1000000, 0, PLAYOUT_KIND_MOTION, 10 * 256, 0, 0, false);
	playout_tick(&po, far, &o);
	CHECK(o.dx == 10, "an hour ahead: dx %" PRId32, o.dx);
	playout_tick(&po, 5, &o);
	CHECK(o.dx == 0 && o.idle, "back to 5 us: dx %" PRId32 " idle %d", o.dx, o.idle);
	push(&po, 2000000, 1000000, PLAYOUT_KIND_MOTION, 256, 0, 0, false);
	for (uint64_t i = 0; i < 100; i++) {
		playout_tick(&po, far + i, &o);
		total += o.dx;
	}
	CHECK(total == 1, "total %" PRId64, total);
}

/* Times near the top of u64 (a receiver clock that wrapped): ticks keep
 * their order modulo 2^64. */
static void t_clock_wrap(const void *arg)
{
	const uint64_t start = UINT64_MAX - 50000;
	struct playout_out o;
	int64_t total = 0;
	uint64_t t = start;

	CHECK(playout_init(&po, NULL) == 0);
	push(&po, start, 0, PLAYOUT_KIND_HEARTBEAT, 0, 0, 0, false);
	push(&po, start + 8333, 8333, PLAYOUT_KIND_MOTION, 40 * 256, 0, 0, false);
	for (int i = 0; i < 200; i++, t += TICK_US) {
		playout_tick(&po, t, &o);
		total += o.dx;
	}
	CHECK(total == 40, "across the wrap: %" PRId64 " px of 40", total);
	CHECK(queued(&po) == 0);
}

/* ---- 5xx: portable parts of the receive side ---------------------------- */

static void t_encode_motion(const void *arg)
{
	struct input_event ev[REMOLO_PTRDEV_FRAME_MAX];
	struct playout_out out;
	uint8_t held = 0;
	int n;

	memset(&out, 0, sizeof(out));
	out.dx = 3;
	out.dy = -2;
	out.wheel_hires = 60;
	n = ptrdev_encode(ev, REMOLO_PTRDEV_FRAME_MAX, &out, &held);
	CHECK(n == 4, "%d events", n);
	if (n != 4)
		return;
	CHECK(ev[0].type == EV_REL && ev[0].code == REL_X && ev[0].value == 3);
	CHECK(ev[1].type == EV_REL && ev[1].code == REL_Y && ev[1].value == -2);
	CHECK(ev[2].type == EV_REL && ev[2].code == REL_WHEEL_HI_RES && ev[2].value == 60);
	CHECK(ev[3].type == EV_SYN && ev[3].code == SYN_REPORT && ev[3].value == 0);
	/* The kernel stamps the time: the bytes before type are zero. */
	for (int i = 0; i < n; i++) {
		static const uint8_t zero[2 * sizeof(long)];

		CHECK(memcmp(&ev[i], zero, sizeof(zero)) == 0, "event %d carries a time", i);
	}
}

/* A click inside one tick becomes two frames; the held mask follows. */
static void t_encode_click(const void *arg)
{
	struct input_event ev[REMOLO_PTRDEV_FRAME_MAX];
	struct playout_out out;
	uint8_t held = 0;
	int n;

	memset(&out, 0, sizeof(out));
	ptrdev_out_set_btn(&out, 0, BTN_LEFT, 1);
	ptrdev_out_set_btn(&out, 1, BTN_LEFT, 0);
	ptrdev_out_set_btn(&out, 2, BTN_TASK, 1);
	out.nbtn = 3;
	n = ptrdev_encode(ev, REMOLO_PTRDEV_FRAME_MAX, &out, &held);
	CHECK(n == 5, "%d events", n);
	if (n != 5)
		return;
	CHECK(ev[0].type == EV_KEY && ev[0].code == BTN_LEFT && ev[0].value == 1);
	CHECK(ev[1].type == EV_SYN);
	CHECK(ev[2].type == EV_KEY && ev[2].code == BTN_LEFT && ev[2].value == 0);
	CHECK(ev[3].type == EV_KEY && ev[3].code == BTN_TASK && ev[3].value == 1);
	CHECK(ev[4].type == EV_SYN);
	CHECK(held == 0x80, "held 0x%02x", held);
	out.nbtn = 1;
	ptrdev_out_set_btn(&out, 0, BTN_TASK + 1, 1);
	CHECK(ptrdev_encode(ev, REMOLO_PTRDEV_FRAME_MAX, &out, &held) == -EINVAL, "BTN_TASK + 1 accepted");
}

/* A keyboard frame: a key's second change starts a new SYN frame; a key
 * the device does not have is refused. */
static void t_encode_keys(const void *arg)
{
	struct input_event ev[REMOLO_KBDDEV_FRAME_MAX];
	const struct playout_key keys[] = { { KEY_A, 1 }, { KEY_MICMUTE, 1 }, { KEY_A, 0 } };
	const struct playout_key power[] = { { KEY_POWER, 1 } };
	uint64_t held[PLAYOUT_KEY_WORDS] = { 0 };
	int n = kbddev_encode(ev, REMOLO_KBDDEV_FRAME_MAX, keys, 3, held);

	CHECK(n == 5, "%d events", n);
	if (n != 5)
		return;
	CHECK(ev[0].type == EV_KEY && ev[0].code == KEY_A && ev[0].value == 1);
	CHECK(ev[1].type == EV_KEY && ev[1].code == KEY_MICMUTE && ev[1].value == 1);
	CHECK(ev[2].type == EV_SYN && ev[2].code == SYN_REPORT);
	CHECK(ev[3].type == EV_KEY && ev[3].code == KEY_A && ev[3].value == 0);
	CHECK(ev[4].type == EV_SYN && ev[4].code == SYN_REPORT);
	CHECK(held[KEY_MICMUTE / 64] == 1ull << (KEY_MICMUTE % 64) && held[0] == 0, "held words");
	CHECK(kbddev_encode(ev, REMOLO_KBDDEV_FRAME_MAX, power, 1, held) == -EINVAL, "KEY_POWER accepted");
	CHECK(kbddev_has_key(KEY_ESC) && kbddev_has_key(KEY_F24) && !kbddev_has_key(0) && !kbddev_has_key(BTN_LEFT));
}

/* ---- 6xx: the key queue ------------------------------------------------- */

static uint32_t key_tick(uint64_t t, struct playout_key *out, uint32_t *n, uint32_t max)
{
	struct playout_out o;
	uint64_t seen[PLAYOUT_KEY_WORDS] = { 0 };

	playout_tick(&po, t, &o);
	for (uint32_t i = 0; i < o.nkey; i++) {
		CHECK(!(seen[o.key[i].code / 64] >> (o.key[i].code % 64) & 1), "key %u twice in one tick",
		      o.key[i].code);
		seen[o.key[i].code / 64] |= 1ull << (o.key[i].code % 64);
		if (*n < max)
			out[(*n)++] = o.key[i];
	}
	return o.nkey;
}

/* "Ab" at one sender time: in order, a press and its release never in one
 * tick, at most REMOLO_KEYS_PER_TICK (2) changes a tick, every key up at
 * the end: Shift+ A+ | A- Shift- | B+ | B-. */
static void t_keys_text(const void *arg)
{
	static const struct playout_key text[] = {
		{ KEY_LEFTSHIFT, 1 }, { KEY_A, 1 }, { KEY_A, 0 }, { KEY_LEFTSHIFT, 0 }, { KEY_B, 1 }, { KEY_B, 0 },
	};
	uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT] = { 0 };
	struct playout_key out[8];
	uint32_t n = 0, ticks = 0;
	uint64_t t = 1000000;

	CHECK(playout_init(&po, NULL) == 0);
	CHECK(playout_push_keys(&po, t, 0, text, 6, refused) == 6);
	for (int i = 0; i < 20; i++, t += TICK_US)
		ticks += key_tick(t, out, &n, 8) ? 1 : 0;
	CHECK(n == 6 && memcmp(out, text, sizeof(text)) == 0, "%" PRIu32 " changes, out of order", n);
	_Static_assert(REMOLO_KEYS_PER_TICK == 2, "the tick count below is for 2 changes a tick");
	CHECK(ticks == 4, "%" PRIu32 " ticks with keys, want 4", ticks);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_A, false) == PLAYOUT_PUSH_KEY_NOT_HELD);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_POWER, true) == PLAYOUT_PUSH_KEY_UNKNOWN);
}

/* A full queue: every press keeps a place for its release, so presses are
 * refused and releases are taken (none folded); a flush then releases
 * whatever is still down, the keys above 64 (a second state word) included. */
static void t_keys_overflow_flush(const void *arg)
{
	struct playout_key out[1];
	uint32_t n = 0, changes = 0;
	uint64_t t = 1000000;

	CHECK(playout_init(&po, NULL) == 0);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_F13, true) == PLAYOUT_PUSH_ON_TIME);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_MICMUTE, true) == PLAYOUT_PUSH_ON_TIME);
	/* Two queued, two places kept: room for REMOLO_KEYQ_CAP - 4 more. */
	for (uint32_t i = 0; i < REMOLO_KEYQ_CAP - 4; i++)
		CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_A, i % 2 == 0) == PLAYOUT_PUSH_ON_TIME, "push %u", i);
	CHECK(keyq_room(&po.k) == 0);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_B, true) == PLAYOUT_PUSH_KEY_FLOOD);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_F13, false) == PLAYOUT_PUSH_ON_TIME);
	CHECK(push(&po, t, 0, PLAYOUT_KIND_KEY, 0, 0, KEY_A, true) == PLAYOUT_PUSH_KEY_FLOOD);
	for (int i = 0; i < 10; i++, t += TICK_US)
		changes += key_tick(t, out, &n, 0);
	playout_flush(&po, t);
	for (uint32_t i = 0; i < REMOLO_KEYQ_CAP + 40; i++)
		changes += key_tick(t, out, &n, 0);
	/* Every queued change, and the flush's release of KEY_MICMUTE. */
	CHECK(changes == REMOLO_KEYQ_CAP, "%" PRIu32 " changes", changes);
	for (int w = 0; w < PLAYOUT_KEY_WORDS; w++)
		CHECK(po.k.state[w] == 0 && po.k.want[w] == 0, "word %d still down: %" PRIx64, w, po.k.state[w]);
	CHECK(po.stats.key_folded == 0 && po.stats.key_refused[PLAYOUT_KEY_REFUSED_FLOOD] == 2);
}

static struct rx_cmdq cmdq;
static struct rx_stats_pub pub;

/* The command ring with free-running u32 indices about to wrap: push until
 * full, then peek/done every command in order, results by sequence. */
static void t_cmd_ring(const void *arg)
{
	const uint32_t start = UINT32_MAX - 9;
	struct rx_cmd c;
	int32_t res;
	int64_t seq[REMOLO_RX_CMDQ_CAP];
	const struct rx_cmd *got;
	int i = 0;

	memset(&cmdq, 0, sizeof(cmdq));
	cmdq.head = cmdq.tail = start;
	memset(&c, 0, sizeof(c));
	c.op = RX_OP_PUSH;
	for (i = 0; i < (int)REMOLO_RX_CMDQ_CAP; i++) {
		c.pkt.a = i;
		seq[i] = rx_cmdq_push(&cmdq, &c);
		CHECK(seq[i] == (int64_t)(uint32_t)(start + (uint32_t)i),
		      "push %d: seq %" PRId64, i, seq[i]);
	}
	CHECK(rx_cmdq_push(&cmdq, &c) == -EAGAIN, "a full ring took one more");
	CHECK(!rx_cmdq_result(&cmdq, (uint32_t)seq[0], &res), "a result before the command ran");
	i = 0;
	while ((got = rx_cmdq_peek(&cmdq)) != NULL) {
		CHECK(got->pkt.a == i, "command %d came as %" PRId32, i, got->pkt.a);
		rx_cmdq_done(&cmdq, got->pkt.a * 2);
		i++;
	}
	CHECK(i == (int)REMOLO_RX_CMDQ_CAP, "%d commands ran", i);
	for (i = 0; i < (int)REMOLO_RX_CMDQ_CAP; i++) {
		res = -1;
		CHECK(rx_cmdq_result(&cmdq, (uint32_t)seq[i], &res) && res == 2 * i,
		      "command %d (seq %" PRId64 "): result %" PRId32, i, seq[i], res);
	}
	CHECK(cmdq.head == start + REMOLO_RX_CMDQ_CAP, "head %" PRIu32, cmdq.head);
}

/* Statistics above 2^32 survive the seqlock's word copy. */
static void t_stats_words(const void *arg)
{
	struct rx_stats st, got;

	memset(&st, 0, sizeof(st));
	memset(&pub, 0, sizeof(pub));
	st.datagrams = (1ull << 32) + 7;
	st.sum_dx = (uint64_t)-5;
	st.record_errors = UINT64_MAX;
	st.drop[WIRE_DROP_COUNT - 1] = 0x0123456789abcdefull;
	st.slot_opened[REMOLO_SESSIONS_MAX - 1] = (1ull << 40) + 3;
	rx_stats_pub_write(&pub, &st);
	rx_stats_pub_read(&pub, &got);
	CHECK(memcmp(&got, &st, sizeof(got)) == 0, "snapshot differs");
	CHECK(pub.seq == 2, "seq %" PRIu32, pub.seq);
	CHECK((int64_t)got.sum_dx == -5);
}

/* rx_now_us over time_t, 32- or 64-bit: microseconds, monotonic. */
static void t_now(const void *arg)
{
	struct timespec ts = { 0, 3000000 };
	uint64_t a = rx_now_us(), b;

	nanosleep(&ts, NULL);
	b = rx_now_us();
	CHECK(a > 0 && b >= a + 2500 && b < a + 10000000, "a %" PRIu64 " b %" PRIu64, a, b);
}

/* ---- the table ---------------------------------------------------------- */

static const enum tamper tampers[] = { T_CT_BIT, T_TAG_BIT, T_AAD_BIT, T_FIXED, T_IV, T_KEY_BIT,
				       T_TAG_SHORT, T_NO_AAD };
static const struct flip flips[] = {
	{ 0, 0, WIRE_DROP_UNKNOWN_SESSION },   /* session id */
	{ 8, 0, WIRE_DROP_BAD_TAG },           /* counter: the nonce and the aad */
	{ 16, 7, WIRE_DROP_BAD_TAG },          /* ciphertext */
	{ 48, 0, WIRE_DROP_BAD_TAG },          /* tag */
};
static const struct drain_case drains[] = { { 1, false }, { 2, false }, { 3, true }, { 4, true } };
static const struct hostile_case hostile[] = {
	{ s_backwards, 500, false }, { s_backwards, 500, true },
	{ s_hours_ahead, 500, false }, { s_hours_ahead, 500, true },
	{ s_duplicate, 500, false }, { s_duplicate, 500, true },
	{ s_int32_max, 50, false }, { s_int32_max, 50, true },
	{ s_int32_min, 50, false }, { s_int32_min, 50, true },
	{ s_zero_max, 500, false }, { s_zero_max, 500, true },
	{ s_random, 2000, false }, { s_random, 2000, true },
	{ s_step_back, 300, false }, { s_step_back, 300, true },
	{ s_int64_max, 300, false }, { s_int64_max, 300, true },
	{ s_int64_min, 300, false }, { s_int64_min, 300, true },
	{ s_int64_both, 300, false }, { s_int64_both, 300, true },
};

/* A gesture's states sealed, opened on a session granted gestures,
 * played: fingers down, the last offset shown, then lifted. */
static void t_gesture(const void *arg)
{
	uint8_t key[WIRE_KEY_LEN], d[WIRE_TOTALS_DATAGRAM_LEN];
	struct playout_out o;
	struct wire_rx rx;
	int32_t last_x = -1;
	uint64_t t;
	bool down = false, lifted = false;

	if (!wire_fresh())
		return;
	key_a(key);
	CHECK(wire_set_gestures(&wire_tbl, id_a, 1) == 0);
	CHECK(playout_init(&po, NULL) == 0);
	for (int i = 1; i <= 10; i++) {
		struct playout_pkt pkt;

		memset(&pkt, 0, sizeof(pkt));
		pkt.kind = PLAYOUT_KIND_GESTURE;
		pkt.tx_us = 1000000 + (uint64_t)i * 8333;
		pkt.a = i * 1000;
		pkt.g.id = 4;
		pkt.g.type = PLAYOUT_GESTURE_SWIPE;
		pkt.g.fingers = 3;
		pkt.g.scale_q16 = REMOLO_GESTURE_SCALE_ONE;
		pkt.g.flags = i == 10 ? PLAYOUT_GESTURE_FLAG_LAST : 0;
		CHECK(wire_seal_gesture(key, id_a, (uint64_t)i, &pkt, d, sizeof(d)) == (int)WIRE_TOTALS_DATAGRAM_LEN);
		CHECK(wire_open(&wire_tbl, d, sizeof(d), &rx) == 0, "gesture %d not opened", i);
		CHECK(rx.pkt.kind == PLAYOUT_KIND_GESTURE && rx.pkt.a == i * 1000 && rx.pkt.g.fingers == 3);
		CHECK(playout_push(&po, 5000000 + (uint64_t)i * 8333, &rx.pkt) != PLAYOUT_PUSH_REJECTED);
	}
	for (t = 5000000; t < 5300000; t += 2083) {
		playout_tick(&po, t, &o);
		if (o.touch.fingers) {
			down = true;
			CHECK(o.touch.fingers == 3 && o.touch.x_um >= last_x, "x %d after %d", o.touch.x_um, last_x);
			last_x = o.touch.x_um;
		} else if (down) {
			lifted = true;
		}
	}
	CHECK(down && lifted && last_x == 10000, "down %d lifted %d last x %d", down, lifted, last_x);
	wire_deinit(&wire_tbl);
}

struct tcase {
	int no;
	const char *name;
	void (*run)(const void *arg);
	const void *arg;
};

static const struct tcase cases[] = {
	{ 101, "RFC 8439 2.8.2 seal", t_rfc_seal, NULL },
	{ 102, "RFC 8439 2.8.2 open", t_rfc_open, NULL },
	{ 103, "RFC vector, ciphertext bit flipped", t_rfc_tamper, &tampers[0] },
	{ 104, "RFC vector, tag bit flipped", t_rfc_tamper, &tampers[1] },
	{ 105, "RFC vector, aad bit flipped", t_rfc_tamper, &tampers[2] },
	{ 106, "RFC vector, nonce constant changed", t_rfc_tamper, &tampers[3] },
	{ 107, "RFC vector, nonce IV changed", t_rfc_tamper, &tampers[4] },
	{ 108, "RFC vector, key bit flipped", t_rfc_tamper, &tampers[5] },
	{ 109, "RFC vector, tag truncated", t_rfc_tamper, &tampers[6] },
	{ 110, "RFC vector, aad dropped", t_rfc_tamper, &tampers[7] },
	{ 201, "protocol.md datagram, sealed byte for byte", t_dgram_seal, NULL },
	{ 202, "protocol.md datagram, opened", t_dgram_open, NULL },
	{ 203, "protocol.md datagram, session id bit flipped", t_dgram_flip, &flips[0] },
	{ 204, "protocol.md datagram, counter bit flipped", t_dgram_flip, &flips[1] },
	{ 205, "protocol.md datagram, ciphertext bit flipped", t_dgram_flip, &flips[2] },
	{ 206, "protocol.md datagram, tag bit flipped", t_dgram_flip, &flips[3] },
	{ 207, "protocol.md datagram, each of 392 bits flipped", t_dgram_every_bit, NULL },
	{ 208, "replays, counters beyond 2^32", t_dgram_replay, NULL },
	{ 301, "drain conservation, seed policy, stream 1", t_drain, &drains[0] },
	{ 302, "drain conservation, seed policy, stream 2", t_drain, &drains[1] },
	{ 303, "drain conservation, default policy, stream 3", t_drain, &drains[2] },
	{ 304, "drain conservation, default policy, stream 4", t_drain, &drains[3] },
	{ 401, "sender time runs backwards, seed", t_hostile, &hostile[0] },
	{ 402, "sender time runs backwards, default", t_hostile, &hostile[1] },
	{ 403, "sender time hours ahead every 50 packets, seed", t_hostile, &hostile[2] },
	{ 404, "sender time hours ahead every 50 packets, default", t_hostile, &hostile[3] },
	{ 405, "duplicate timestamps, seed", t_hostile, &hostile[4] },
	{ 406, "duplicate timestamps, default", t_hostile, &hostile[5] },
	{ 407, "deltas of INT32_MAX, seed", t_hostile, &hostile[6] },
	{ 408, "deltas of INT32_MAX, default", t_hostile, &hostile[7] },
	{ 409, "deltas of INT32_MIN, seed", t_hostile, &hostile[8] },
	{ 410, "deltas of INT32_MIN, default", t_hostile, &hostile[9] },
	{ 411, "sender time alternates 0 and UINT64_MAX, seed", t_hostile, &hostile[10] },
	{ 412, "sender time alternates 0 and UINT64_MAX, default", t_hostile, &hostile[11] },
	{ 413, "sender time random over u64, seed", t_hostile, &hostile[12] },
	{ 414, "sender time random over u64, default", t_hostile, &hostile[13] },
	{ 415, "sender time steps back 5 s, seed", t_hostile, &hostile[14] },
	{ 416, "sender time steps back 5 s, default", t_hostile, &hostile[15] },
	{ 417, "sample held at INT64_MAX, seed", t_hostile, &hostile[16] },
	{ 418, "sample held at INT64_MAX, default", t_hostile, &hostile[17] },
	{ 419, "sample held at INT64_MIN, seed", t_hostile, &hostile[18] },
	{ 420, "sample held at INT64_MIN, default", t_hostile, &hostile[19] },
	{ 421, "sample alternates between the ends of int64, seed", t_hostile, &hostile[20] },
	{ 422, "sample alternates between the ends of int64, default", t_hostile, &hostile[21] },
	{ 423, "one INT32_MAX/INT32_MIN packet", t_huge_packet, NULL },
	{ 424, "one INT32_MIN/INT32_MAX scroll", t_huge_scroll, NULL },
	{ 425, "receiver time an hour ahead, then back", t_receiver_jumps, NULL },
	{ 426, "receiver time across 2^64", t_clock_wrap, NULL },
	{ 501, "uinput frame: motion and hi-res wheel", t_encode_motion, NULL },
	{ 502, "uinput frame: a click inside one tick", t_encode_click, NULL },
	{ 503, "command ring across u32 wrap-around", t_cmd_ring, NULL },
	{ 504, "statistics seqlock over u64 words", t_stats_words, NULL },
	{ 505, "monotonic clock in microseconds", t_now, NULL },
	{ 506, "keyboard frame: a key's two changes in one tick", t_encode_keys, NULL },
	{ 601, "key queue: a text in order, a tick per change of a key", t_keys_text, NULL },
	{ 602, "key queue: full, presses refused, releases kept, flush releases all", t_keys_overflow_flush, NULL },
	{ 701, "gesture: sealed, opened where granted, played and lifted", t_gesture, NULL },
};

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wire_crypto_init() != 0) {
		printf("selftest: libsodium did not initialise (sodium_init < 0)\n");
		return 1;
	}
	/* The figures a port cares about, in one line. */
	printf("selftest: long %zu, time_t %zu, input_event %zu, playout %zu, wire %zu, rx_loop %zu, "
	       "rx_record %zu bytes\n", sizeof(long), sizeof(time_t), sizeof(struct input_event),
	       sizeof(struct playout), sizeof(struct wire), rx_loop_size(), sizeof(struct rx_record));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cur_no = cases[i].no;
		cur_name = cases[i].name;
		cur_fails = 0;
		cases[i].run(cases[i].arg);
		if (cur_fails)
			failed++;
		else
			passed++;
	}
	printf("selftest: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
