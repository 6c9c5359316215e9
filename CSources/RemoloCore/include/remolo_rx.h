/* SPDX-License-Identifier: MIT */
/*
 * The receiver's hot loop: UDP datagrams in through io_uring, opened
 * (remolo_wire.h), played out per session (remolo_playout.h) and drained by
 * a 480 Hz timerfd into one output frame per tick (remolo_ptrdev.h).
 *
 *   socket --multishot recvmsg, provided buffers--> wire_open --> playout_push
 *   timerfd --read, re-armed--> playout_tick per session --> merge --> 1 write()
 *   eventfd --read, re-armed--> command ring (sessions, buttons, stop)
 *
 * One thread runs rx_loop_run and owns everything in struct rx_loop except
 * the command ring's producer side and the published statistics, which
 * other threads reach only through rx_cmd_* and rx_stats_read (no locks on
 * the loop's side). All memory is the caller's struct plus one mapping made
 * by rx_loop_init; nothing is allocated once the loop runs.
 *
 * This header stays free of liburing (Swift imports it; liburing.h defines
 * _XOPEN_SOURCE and breaks Swift's Glibc module, see the platform notes): the
 * ring lives in an opaque, size-checked byte array.
 */
#ifndef REMOLO_RX_H
#define REMOLO_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/input.h>
#include "remolo_playout.h"
#include "remolo_ptrdev.h"
#include "remolo_wire.h"

/* ---- capacities --------------------------------------------------------- */
/* Provided receive buffers: a power of two (the kernel's buffer ring indexes
 * with a mask). 256 covers a burst of ~2 ms at loopback line rate. */
#define REMOLO_RX_BUFS           256u
/* One buffer holds struct io_uring_recvmsg_out (16), the source address
 * (sockaddr_in6, 28) and the payload. 128 leaves 84 payload bytes: any
 * datagram longer than WIRE_DATAGRAM_LEN is still seen as too long. */
#define REMOLO_RX_BUF_SIZE       128u
#define REMOLO_RX_NAME_LEN       28u
#define REMOLO_RX_OUT_HDR        16u
/* Submission queue entries: recvmsg, timer read and wake read are the only
 * requests in flight, re-arms included. */
#define REMOLO_RX_SQ_ENTRIES     8u
/* Completion queue entries: every provided buffer can hold a completed
 * datagram at once, plus the timer and wake reads. When the CQ is full a
 * multishot request cannot post and ends (without IORING_CQE_F_MORE). */
#define REMOLO_RX_CQ_ENTRIES     (2u * REMOLO_RX_BUFS)
/* Commands queued from other threads and not yet run by the loop. */
#define REMOLO_RX_CMDQ_CAP       64u
/* Ticks a session's end may take to play out what it still holds: every
 * queued button event can be one transition of the same button, one per
 * tick (a click never becomes down and up in one frame). */
#define REMOLO_RX_FLUSH_TICKS    (REMOLO_BTNQ_CAP + 2u)
/* Opaque room for struct io_uring (216 bytes in liburing 2.3). */
#define REMOLO_RX_URING_BYTES    320u
/* Opaque room for struct msghdr (56 bytes on LP64); kept out of this
 * header so that Swift's Glibc module alone owns <sys/socket.h>. */
#define REMOLO_RX_MSGHDR_BYTES   64u
/* The buffer group id of the provided-buffer ring. */
#define REMOLO_RX_BGID           7u

_Static_assert((REMOLO_RX_BUFS & (REMOLO_RX_BUFS - 1)) == 0, "buffer ring: power of two");
_Static_assert(REMOLO_RX_BUFS <= 32768, "buffer ring entries: kernel limit 32768");
_Static_assert(REMOLO_RX_BUF_SIZE > REMOLO_RX_OUT_HDR + REMOLO_RX_NAME_LEN + WIRE_DATAGRAM_LEN,
	       "a buffer holds a datagram and one byte more (to see over-long ones)");
_Static_assert((REMOLO_RX_CQ_ENTRIES & (REMOLO_RX_CQ_ENTRIES - 1)) == 0 &&
	       REMOLO_RX_CQ_ENTRIES >= REMOLO_RX_BUFS + 2, "CQ: power of two, a CQE per buffer");
_Static_assert((REMOLO_RX_CMDQ_CAP & (REMOLO_RX_CMDQ_CAP - 1)) == 0, "command ring: power of two");

/* ---- configuration ------------------------------------------------------ */
struct rx_config {
	struct playout_config playout;  /* per session; playout_config_default */
	int sock;                       /* bound UDP socket; the caller owns it */
	struct ptrdev *dev;             /* output: the uinput device, or NULL ... */
	int sink_fd;                    /* ... this fd gets the same encoded frames */
	int rt_priority;                /* SCHED_FIFO priority on the loop thread; 0 = off */
	int record_fd;                  /* arrival records (struct rx_record): the
					 * write end of a pipe opened O_NONBLOCK;
					 * -1 = off. 0 is off too, so that a zeroed
					 * config records nothing (a pipe's write end
					 * is never fd 0: pipe() hands out the read
					 * end first, at the lowest free number). */
};

/* ---- arrival records (remolo receive --record-arrivals) ----------------- */
/* One per datagram that opened for a live session, written whole by one
 * non-blocking write() on the loop thread. Fixed size and at most PIPE_BUF,
 * so a pipe never splits or interleaves one; a full pipe loses the record
 * (counted in record_dropped), never the loop's time. */
struct rx_record {
	uint64_t tx_us;                 /* sender clock, as sealed */
	uint64_t rx_us;                 /* arrival, rx_now_us() (CLOCK_MONOTONIC) */
	int32_t a;                      /* the wire's a: motion dx, scroll vertical
					 * (Q8), button BTN_* code, heartbeat 0 */
	int32_t b;                      /* the wire's b: motion dy, scroll
					 * horizontal (Q8), button 1/0, heartbeat 0 */
	uint32_t session;               /* the loop's serial number of the session
					 * (1 = first added): a reused slot is
					 * told apart */
	uint8_t kind;                   /* enum playout_kind (the wire's kind) */
	uint8_t slot;                   /* session slot, 0 .. REMOLO_SESSIONS_MAX-1 */
	uint8_t pad[2];                 /* zero */
};
#define REMOLO_RX_RECORD_LEN     32u
_Static_assert(sizeof(struct rx_record) == REMOLO_RX_RECORD_LEN, "record: fixed size, no hidden padding");
_Static_assert(REMOLO_SESSIONS_MAX <= 256, "record: a slot fits in a byte");

/* ---- commands (any thread -> loop) -------------------------------------- */
enum rx_op {
	RX_OP_ADD_SESSION = 1,          /* id, key; result: the session's slot */
	RX_OP_REMOVE_SESSION = 2,       /* id: flush, release buttons, forget */
	RX_OP_PUSH = 3,                 /* id, pkt from the control channel: a
					 * button, or fallback motion/scroll */
	RX_OP_STOP = 4,                 /* end rx_loop_run */
};

struct rx_cmd {
	struct playout_pkt pkt;
	uint8_t key[WIRE_KEY_LEN];
	uint8_t id[WIRE_ID_LEN];
	uint8_t op;
};

/* Single producer, single consumer. Indices are free-running and accessed
 * only with atomic builtins; result[seq & mask] holds the outcome of command
 * seq once head > seq (until command seq + REMOLO_RX_CMDQ_CAP runs). */
struct rx_cmdq {
	struct rx_cmd cmd[REMOLO_RX_CMDQ_CAP];
	int32_t result[REMOLO_RX_CMDQ_CAP];
	uint32_t head;                  /* next to run; written by the loop */
	uint32_t tail;                  /* next free; written by the producer */
};

/* ---- statistics --------------------------------------------------------- */
/* All u64 so a snapshot can be copied word by word. */
struct rx_stats {
	uint64_t datagrams;             /* recvmsg completions with a payload */
	uint64_t opened;                /* datagrams that wire_open accepted */
	uint64_t drop[WIRE_DROP_COUNT]; /* by enum wire_drop */
	uint64_t drop_no_slot;          /* opened for a slot without a playout */
	uint64_t truncated;             /* MSG_TRUNC: longer than a buffer */
	uint64_t enobufs;               /* the buffer ring ran dry */
	uint64_t recv_arms;             /* multishot recvmsg (re-)armed */
	uint64_t recv_errors;           /* other recvmsg failures */
	uint64_t pushed_late;           /* playout: missed their slot */
	uint64_t pushed_merged;
	uint64_t pushed_forced;
	uint64_t pushed_rejected;
	uint64_t delay_us;              /* the playout delay of the session that
					 * last received a packet */
	uint64_t clamped;               /* packets over the single-packet bound
					 * (REMOLO_MAX_MOTION_Q8, REMOLO_MAX_SCROLL_Q8) */
	uint64_t ticks;                 /* timer completions handled */
	uint64_t missed_ticks;          /* expirations beyond one per read */
	uint64_t late_ticks;            /* reads that found more than one */
	uint64_t frames;                /* writes to the output */
	uint64_t frames_split;          /* extra writes: > 8 button changes in a tick */
	uint64_t write_errors;
	uint64_t last_write_errno;
	uint64_t timer_starts;
	uint64_t timer_stops;
	uint64_t commands;
	uint64_t command_errors;
	uint64_t sessions_added;
	uint64_t sessions_removed;
	uint64_t sessions_live;
	uint64_t buttons;               /* button events pushed (datagram or command) */
	uint64_t sum_dx;                /* output totals, two's complement i64 */
	uint64_t sum_dy;
	uint64_t sum_wheel_hires;
	uint64_t sum_hwheel_hires;
	uint64_t rt;                    /* 1 when SCHED_FIFO took effect */
	uint64_t setup_flags;           /* io_uring setup flags in use */
	uint64_t timer_armed;           /* 1 while the drain timer runs */
	uint64_t records;               /* arrival records written (record_fd) */
	uint64_t record_dropped;        /* not written: the pipe was full */
	uint64_t record_errors;         /* not written: any other failure */
	uint64_t slot_opened[REMOLO_SESSIONS_MAX]; /* datagrams opened per
					 * session slot since its session was
					 * added (the receipts a sender gets) */
};
_Static_assert(sizeof(struct rx_stats) % sizeof(uint64_t) == 0, "stats: whole u64 words");

/* Seqlock-published copy: odd seq = being written. */
struct rx_stats_pub {
	uint32_t seq;
	struct rx_stats s;
};

/* ---- io_uring side (rxring.c) ------------------------------------------- */
struct rx_ring {
	_Alignas(16) uint8_t uring[REMOLO_RX_URING_BYTES]; /* struct io_uring */
	uint8_t *map;                   /* buffer ring + buffers, page aligned */
	size_t map_len;
	uint8_t *bufs;                  /* REMOLO_RX_BUFS * REMOLO_RX_BUF_SIZE */
	uint64_t timer_val;             /* the timerfd read lands here */
	uint64_t wake_val;              /* the eventfd read lands here */
	_Alignas(8) uint8_t msg[REMOLO_RX_MSGHDR_BYTES]; /* struct msghdr: the
					 * multishot template, name only */
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

/* What rx_probe found. */
struct rx_probe_result {
	int setup_errno;                /* io_uring_queue_init: 0 or errno */
	int disabled;                   /* /proc/sys/kernel/io_uring_disabled, -1 if absent */
	int seccomp;                    /* Seccomp: from /proc/self/status, -1 if absent */
};

/* Tries a small ring: 0, or -errno with *out saying what is in the way. */
int rx_probe(struct rx_probe_result *out);

/* The fds and the buffer mapping; not io_uring itself (see rx_ring_up).
 * 0 or -errno; on failure nothing is left to release. */
int rx_ring_init(struct rx_ring *r, int sock);
/* Creates the ring on the calling thread (SINGLE_ISSUER binds it to the
 * creator since Linux 6.1), registers the buffers, arms the three reads. */
int rx_ring_up(struct rx_ring *r);
/* Submits what is pending and waits for at least one completion. */
int rx_ring_wait(struct rx_ring *r, struct rx_stats *st);
/* The next completion, or 0 when none is left. */
int rx_ring_next(struct rx_ring *r, struct rx_ev *ev, struct rx_stats *st);
/* Gives a datagram buffer back to the kernel. */
void rx_ring_recycle(struct rx_ring *r, uint16_t bid);
/* Starts (1) or stops (0) the 480 Hz timer. 0 or -errno. */
int rx_ring_timer(struct rx_ring *r, bool on);
/* Tears the ring down (loop thread). */
void rx_ring_down(struct rx_ring *r);
/* Closes the fds and unmaps. Safe twice. */
void rx_ring_deinit(struct rx_ring *r);
/* Wakes a waiting loop from any thread. 0 or -errno. */
int rx_ring_wake(const struct rx_ring *r);

/* ---- the loop (rxloop.c) ------------------------------------------------ */
enum rx_state {
	RX_STATE_IDLE = 0,              /* initialised, not running */
	RX_STATE_RUNNING = 1,
	RX_STATE_STOPPED = 2,           /* rx_loop_run returned */
};

struct rx_loop {
	struct rx_ring ring;
	struct wire wire;
	struct playout po[REMOLO_SESSIONS_MAX];
	uint8_t active[REMOLO_SESSIONS_MAX];
	uint32_t session_no[REMOLO_SESSIONS_MAX]; /* serial of the session in a slot */
	struct playout_config pcfg;
	struct ptrdev *dev;
	int sink_fd;
	int record_fd;                  /* -1 = not recording */
	int rt_priority;
	uint8_t held;                   /* buttons down at the output (fd sink) */
	struct input_event frame[REMOLO_PTRDEV_FRAME_MAX];
	struct rx_cmdq cmdq;
	struct rx_stats st;             /* loop thread only */
	struct rx_stats_pub pub;        /* for rx_stats_read */
	int32_t state;                  /* enum rx_state, atomic */
	int32_t run_error;              /* why run failed, atomic (-errno) */
};

/* Sets up the loop on the caller's thread (fds, buffers, sessions table).
 * 0 or -errno (-EINVAL: bad config, both or neither output, a record_fd
 * that is not a pipe's non-blocking write end). */
int rx_loop_init(struct rx_loop *l, const struct rx_config *cfg);
/* Runs until RX_OP_STOP, on the thread that will own the ring. Returns 0, or
 * -errno when the ring cannot be set up (also left in run_error). */
int rx_loop_run(struct rx_loop *l);
/* Releases everything (after rx_loop_run returned, or instead of it). */
void rx_loop_deinit(struct rx_loop *l);
/* enum rx_state, from any thread. */
int rx_loop_state(const struct rx_loop *l);
int rx_loop_run_error(const struct rx_loop *l);

/* ---- across threads (rxcmd.c) ------------------------------------------ */
/* Queues a command and wakes the loop (one producer at a time: callers on
 * several threads serialise among themselves). Returns its sequence number
 * (0 .. 2^32-1), or -EAGAIN when the ring is full. */
int64_t rx_cmd_push(struct rx_loop *l, const struct rx_cmd *c);
/* 1 with *result set (>= 0 or -errno) once command seq has run, else 0. */
int rx_cmd_result(const struct rx_loop *l, uint32_t seq, int32_t *result);
/* Loop thread: runs every queued command through run(); stops early and
 * returns 1 when one of them asks to stop. */
int rx_cmd_drain(struct rx_loop *l, int32_t (*run)(struct rx_loop *, const struct rx_cmd *, bool *stop));

/* Loop thread: publishes l->st for readers. */
void rx_stats_publish(struct rx_loop *l);
/* A consistent snapshot of the loop's statistics, from any thread. */
void rx_stats_read(const struct rx_loop *l, struct rx_stats *out);

/* The monotonic clock in microseconds (the playout's time base). */
uint64_t rx_now_us(void);

#endif
