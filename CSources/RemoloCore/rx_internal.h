/* SPDX-License-Identifier: MIT */
/*
 * The receive loop's insides (see remolo_rx.h for the public side), shared
 * by rxloop.c, rxring.c, rxcmd.c, rxstats.c and rxtouch.c only. Outside include/: no
 * Swift module sees this header, so the layout of struct rx_loop can change
 * without touching any caller.
 *
 * Each part keeps its own counters, as struct wire does (w->stats): the ring
 * in r->stats, the loop in l->st. The loop gathers them into one struct
 * rx_stats when it publishes.
 *
 * Still free of liburing (platform notes: include it only from .c files),
 * so that of the files here only rxring.c compiles with it: the ring lives
 * in opaque byte arrays that rxring.c casts and checks the sizes of.
 */
#ifndef REMOLO_RX_INTERNAL_H
#define REMOLO_RX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "remolo_rx.h"

/* ---- sizes derived from the capacities (remolo_limits.h) ---------------- */
/* One buffer holds struct io_uring_recvmsg_out (16), the source address
 * (sockaddr_in6, 28) and the payload. 128 leaves 84 payload bytes: any
 * datagram longer than WIRE_DATAGRAM_LEN is still seen as too long. */
#define RX_BUF_SIZE              128u
#define RX_NAME_LEN              28u
#define RX_OUT_HDR               16u
/* Submission queue entries: recvmsg, timer read and wake read are the only
 * requests in flight, re-arms included. */
#define RX_SQ_ENTRIES            8u
/* Completion queue entries: every provided buffer can hold a completed
 * datagram at once, plus the timer and wake reads. When the CQ is full a
 * multishot request cannot post and ends (without IORING_CQE_F_MORE). */
#define RX_CQ_ENTRIES            (2u * REMOLO_RX_BUFS)
/* Ticks a session's end may take to play out what it still holds: every
 * queued button or key event can be one transition of the same button or
 * key, one per tick (a click never becomes down and up in one frame), then
 * the release of every key, REMOLO_KEYS_PER_TICK a tick. */
#define RX_FLUSH_TICKS           (REMOLO_BTNQ_CAP + REMOLO_KEYQ_CAP + \
				  PLAYOUT_KEY_LIMIT / REMOLO_KEYS_PER_TICK + 2u)
/* Opaque room for struct io_uring (216 bytes in liburing 2.3). */
#define RX_URING_BYTES           320u
/* Opaque room for struct msghdr (56 bytes on LP64), so that this header
 * needs no <sys/socket.h>. */
#define RX_MSGHDR_BYTES          64u
/* The buffer group id of the provided-buffer ring. */
#define RX_BGID                  7u

_Static_assert(RX_BUF_SIZE > RX_OUT_HDR + RX_NAME_LEN + WIRE_DATAGRAM_LEN,
	       "a buffer holds a datagram and one byte more (to see over-long ones)");
_Static_assert((RX_CQ_ENTRIES & (RX_CQ_ENTRIES - 1)) == 0 &&
	       RX_CQ_ENTRIES >= REMOLO_RX_BUFS + 2, "CQ: power of two, a CQE per buffer");

/* ---- io_uring side (rxring.c) ------------------------------------------- */
/* The ring's own counters; the loop copies them when it publishes. */
struct rx_ring_stats {
	uint64_t truncated;             /* MSG_TRUNC: longer than a buffer */
	uint64_t enobufs;               /* the buffer ring ran dry */
	uint64_t recv_arms;             /* multishot recvmsg (re-)armed */
	uint64_t recv_errors;           /* other recvmsg failures */
};

struct rx_ring {
	_Alignas(16) uint8_t uring[RX_URING_BYTES]; /* struct io_uring */
	uint8_t *map;                   /* buffer ring + buffers, page aligned */
	size_t map_len;
	uint8_t *bufs;                  /* REMOLO_RX_BUFS * RX_BUF_SIZE */
	uint64_t timer_val;             /* the timerfd read lands here */
	uint64_t wake_val;              /* the eventfd read lands here */
	uint64_t timer_first_ns;        /* CLOCK_MONOTONIC of the first expiry
					 * since the timer last started: they
					 * follow every period after */
	_Alignas(8) uint8_t msg[RX_MSGHDR_BYTES]; /* struct msghdr: the
					 * multishot template, name only */
	struct rx_ring_stats stats;     /* loop thread only */
	int sock, timer_fd, wake_fd;
	uint32_t flags;                 /* IORING_SETUP_* in use */
	bool up;                        /* io_uring set up (on the loop thread) */
	bool recv_armed, timer_read_armed, wake_read_armed;
};

enum rx_ev_kind {
	RX_EV_NONE = 0,
	RX_EV_DATAGRAM = 1,             /* data, len, bid; give bid back */
	RX_EV_TIMER = 2,                /* expirations */
	RX_EV_WAKE = 3,
	RX_EV_ERROR = 4,                /* counted, nothing to do */
};

struct rx_ev {
	const uint8_t *data;
	uint64_t expirations;
	uint32_t len;
	uint16_t bid;
	uint8_t kind;
	uint8_t truncated;
};

/* The fds and the buffer mapping; not io_uring itself (see rx_ring_up).
 * 0 or -errno; on failure nothing is left to release. */
int rx_ring_init(struct rx_ring *r, int sock);
/* Creates the ring on the calling thread (SINGLE_ISSUER binds it to the
 * creator since Linux 6.1), registers the buffers, arms the three reads. */
int rx_ring_up(struct rx_ring *r);
/* Submits what is pending and waits for at least one completion. */
int rx_ring_wait(struct rx_ring *r);
/* The next completion into *ev; false when none is left. */
bool rx_ring_next(struct rx_ring *r, struct rx_ev *ev);
/* Gives a datagram buffer back to the kernel. */
void rx_ring_recycle(struct rx_ring *r, uint16_t bid);
/* Starts the drain timer with a period of period_ns (on), or stops it.
 * 0 or -errno. */
int rx_ring_timer(struct rx_ring *r, bool on, uint32_t period_ns);
/* Tears the ring down (loop thread). */
void rx_ring_down(struct rx_ring *r);
/* Closes the fds and unmaps. Safe twice. */
void rx_ring_deinit(struct rx_ring *r);
/* Wakes a waiting loop from any thread. 0 or -errno. */
int rx_ring_wake(const struct rx_ring *r);
/* The clock the timerfd runs on (CLOCK_MONOTONIC), in microseconds: the
 * playout's time base and every arrival time. */
uint64_t rx_now_us(void);
/* The same clock in nanoseconds (tick lateness). */
uint64_t rx_now_ns(void);

/* ---- command ring (rxcmd.c) --------------------------------------------- */
/* Single producer, single consumer; any number of waiters. Indices are
 * free-running and accessed only with atomic builtins. done[seq & mask]
 * holds (seq << 32 | (uint32_t)result) once head > seq, until command
 * seq + REMOLO_RX_CMDQ_CAP runs and takes the slot: the number in the
 * word says whose result it is. */
struct rx_cmdq {
	struct rx_cmd cmd[REMOLO_RX_CMDQ_CAP];
	uint64_t done[REMOLO_RX_CMDQ_CAP];
	uint32_t head;                  /* next to run; written by the consumer */
	uint32_t tail;                  /* next free; written by the producer */
	/* The futex word: bumped by the consumer after each batch that ran a
	 * command, and at close. On a cache line of its own with the waiter
	 * count, so that waiters counting themselves do not bounce the line
	 * the consumer reads head and tail from. */
	_Alignas(64) uint32_t gen;
	uint32_t waiters;               /* threads in FUTEX_WAIT on gen */
	uint32_t closed;                /* the consumer runs no more commands */
};

/* Producer: queues a copy of *c. Its sequence number, or -EAGAIN (full). */
int64_t rx_cmdq_push(struct rx_cmdq *q, const struct rx_cmd *c);
/* Any thread: 1 with *result set once command seq has run, 0 before,
 * -ESTALE once its slot holds a later command's result. */
int rx_cmdq_result(const struct rx_cmdq *q, uint32_t seq, int32_t *result);
/* Producer: whether a push would find room. */
bool rx_cmdq_room(const struct rx_cmdq *q);
/* Consumer: the oldest command not yet done, or NULL. It stays in place
 * (the producer cannot reuse its slot) until rx_cmdq_done. */
const struct rx_cmd *rx_cmdq_peek(struct rx_cmdq *q);
/* Consumer: the peeked command ran with this result. Wipes its key, makes
 * the result visible, and frees the slot. */
void rx_cmdq_done(struct rx_cmdq *q, int32_t result);
/* Consumer, after a batch of rx_cmdq_done: wakes whoever waits (no system
 * call when nobody does). */
void rx_cmdq_signal(struct rx_cmdq *q);
/* Consumer, when it stops for good: waiters for commands that did not run
 * return -ECANCELED. */
void rx_cmdq_close(struct rx_cmdq *q);
/* Any thread: blocks until command seq has run or the deadline
 * (CLOCK_MONOTONIC ns, rx_now_ns) passes. 1 with *result set, -ESTALE,
 * -ETIMEDOUT, -ECANCELED (closed and not run), or -errno (futex). */
int rx_cmdq_wait(struct rx_cmdq *q, uint32_t seq, int32_t *result, uint64_t deadline_ns);
/* Producer: blocks until a push would find room. 1, -ETIMEDOUT,
 * -ECANCELED, or -errno. */
int rx_cmdq_wait_room(struct rx_cmdq *q, uint64_t deadline_ns);
/* Wipes every key still in the ring (at teardown). */
void rx_cmdq_wipe(struct rx_cmdq *q);

/* ---- published statistics (rxstats.c) ----------------------------------- */
/* Seqlock-published copy: odd seq = being written. */
struct rx_stats_pub {
	uint32_t seq;
	struct rx_stats s;
};

/* Writer (one thread): publishes a copy of *s. */
void rx_stats_pub_write(struct rx_stats_pub *p, const struct rx_stats *s);
/* Any thread: a consistent snapshot, never torn. */
void rx_stats_pub_read(const struct rx_stats_pub *p, struct rx_stats *out);

/* ---- the loop (rxloop.c) ------------------------------------------------ */
struct rx_loop {
	struct rx_ring ring;
	struct wire wire;
	struct playout po[REMOLO_SESSIONS_MAX];
	uint8_t active[REMOLO_SESSIONS_MAX];
	uint32_t session_no[REMOLO_SESSIONS_MAX]; /* serial of the session in a slot */
	/* Where each session's memory goes when it ends (rx_cmd.recall),
	 * NULL = nowhere. */
	struct recall *recall_to[REMOLO_SESSIONS_MAX];
	uint64_t tick_expirations;      /* since the timer last started */
	uint32_t tick_ns;               /* drain period (rx_config.tick_ns) */
	struct playout_config pcfg;
	struct ptrdev *dev;
	struct kbddev *kbd;             /* NULL: no keyboard */
	struct tpdev *tp;               /* NULL: no touchpad (RX_OP_TOUCHPAD) */
	uint8_t touch_owner;            /* slot + 1 of the session whose fingers
					 * are on the pad, 0 = none (rxtouch.c) */
	/* Sessions holding each key: the keyboard sees a press when the
	 * first session presses a key and a release when the last lets go. */
	uint8_t key_holders[PLAYOUT_KEY_LIMIT];
	int record_fd;                  /* -1 = not recording */
	int rt_priority;
	struct rx_cmdq cmdq;
	struct rx_stats st;             /* the loop's own counters; loop thread only */
	struct rx_stats_pub pub;        /* for rx_stats_read */
	int32_t state;                  /* enum rx_state, atomic */
	int32_t run_error;              /* why run failed, atomic (-errno) */
};

/* ---- the touchpad (rxtouch.c) ------------------------------------------ */
/* Takes the caller's touchpad: 0, -EEXIST (one already), -EINVAL. */
int rx_touch_adopt(struct rx_loop *l, struct tpdev *tp);
/* One session's tick: its touches onto the pad, if the pad is free or its. */
void rx_touch_tick(struct rx_loop *l, uint32_t slot, const struct playout_out *o);
/* Lifts the fingers of a session that has ended (its last lift failed);
 * true while they are still down (the timer must keep running). */
bool rx_touch_orphan(struct rx_loop *l);

_Static_assert(_Alignof(struct rx_loop) <= REMOLO_RX_LOOP_ALIGN, "callers align to REMOLO_RX_LOOP_ALIGN");
_Static_assert(REMOLO_SESSIONS_MAX < 256, "a key's holders fit a byte");

#endif
