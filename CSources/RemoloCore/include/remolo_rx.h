/* SPDX-License-Identifier: MIT */
/*
 * The receiver's hot loop: UDP datagrams in through io_uring, opened
 * (remolo_wire.h), played out per session (remolo_playout.h) and drained by
 * a timerfd (480 Hz unless rx_config.tick_ns says otherwise) into one
 * output frame per tick (remolo_ptrdev.h).
 *
 *   socket --multishot recvmsg, provided buffers--> wire_open --> playout_push
 *   timerfd --read, re-armed--> playout_tick per session --> merge --> 1 write()
 *   eventfd --read, re-armed--> command ring (sessions, buttons, stop)
 *
 * One thread runs rx_loop_run and owns everything in struct rx_loop except
 * the command ring's producer side and the published statistics, which
 * other threads reach only through rx_cmd_* and rx_stats_read (no locks on
 * the loop's side). All memory is the caller's (rx_loop_size bytes, aligned
 * to REMOLO_RX_LOOP_ALIGN) plus one mapping made by rx_loop_init; nothing is
 * allocated once the loop runs.
 *
 * struct rx_loop is opaque here: its insides (the io_uring side, the
 * command ring, the stats seqlock) are in rx_internal.h, next to the code.
 * This header stays free of liburing (Swift imports it; liburing.h defines
 * _XOPEN_SOURCE and breaks Swift's Glibc module, see the platform notes).
 */
#ifndef REMOLO_RX_H
#define REMOLO_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "remolo_kbddev.h"
#include "remolo_playout.h"
#include "remolo_ptrdev.h"
#include "remolo_tpdev.h"
#include "remolo_wire.h"

/* Capacities (REMOLO_SESSIONS_MAX, REMOLO_RX_BUFS, REMOLO_RX_CMDQ_CAP) are
 * in remolo_limits.h. */

/* ---- configuration ------------------------------------------------------ */
struct rx_config {
	struct playout_config playout;  /* per session; playout_config_default */
	int sock;                       /* bound UDP socket; the caller owns it */
	struct ptrdev *dev;             /* output, initialised by the caller (uinput,
					 * or ptrdev_init_fd); the loop thread alone
					 * writes to it while the loop runs */
	struct kbddev *kbd;             /* keyboard output (uinput, or kbddev_init_fd
					 * on the pointer's fd), or NULL: keys are
					 * then refused with -ENODEV. The loop
					 * thread alone writes to it while it runs */
	int rt_priority;                /* SCHED_FIFO priority on the loop thread; 0 = off */
	int record_fd;                  /* arrival records (struct rx_record): the
					 * write end of a pipe opened O_NONBLOCK;
					 * -1 = off. 0 is off too, so that a zeroed
					 * config records nothing (a pipe's write end
					 * is never fd 0: pipe() hands out the read
					 * end first, at the lowest free number). */
	uint32_t tick_ns;               /* drain period, REMOLO_TICK_NS_MIN ..
					 * REMOLO_TICK_NS_MAX; 0 = REMOLO_TICK_NS
					 * (480 Hz), so a zeroed config keeps it */
};

/* ---- arrival records (remolo receive --record-arrivals) ----------------- */
/* One per datagram that opened for a live session, written whole by one
 * non-blocking write() on the loop thread. Fixed size and at most PIPE_BUF,
 * so a pipe never splits or interleaves one; a full pipe loses the record
 * (counted in record_dropped), never the loop's time. */
struct rx_record {
	uint64_t tx_us;                 /* sender clock, as sealed */
	uint64_t rx_us;                 /* arrival, CLOCK_MONOTONIC (the playout's clock) */
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
	RX_OP_ADD_SESSION = 1,          /* id, key, recall; result: the session's slot */
	RX_OP_REMOVE_SESSION = 2,       /* id: flush, release buttons, forget */
	RX_OP_PUSH = 3,                 /* id, pkt from the control channel: a
					 * button, or fallback motion/scroll */
	RX_OP_STOP = 4,                 /* end rx_loop_run */
	RX_OP_KEYS = 5,                 /* id, pkt.tx_us, keys[0..nkeys): key
					 * changes at one sender time, played in
					 * order (playout_push_keys) */
	RX_OP_REDUNDANCY = 6,           /* id: the session's hello granted the
					 * redundancy feature; its 65-byte datagrams
					 * open from now on (wire_set_totals) */
	RX_OP_GESTURES = 7,             /* id: the session's hello granted the
					 * gestures feature; its gesture datagrams
					 * open from now on (wire_set_gestures).
					 * -ENODEV when the loop has no touchpad */
	RX_OP_TOUCHPAD = 8,             /* tp: the touchpad gestures play into,
					 * initialised by the caller and kept alive
					 * until the loop has stopped; the loop
					 * thread alone writes to it from then on.
					 * -EEXIST when the loop has one already */
};

/*
 * A text becomes hundreds of key changes at one sender time (up to
 * REMOLO_KEYQ_TEXT_EVENTS), and the ring holds REMOLO_RX_CMDQ_CAP commands.
 * One command per key would need the ring 25 times over, with the caller
 * waiting on the loop for each. So a command carries REMOLO_RX_KEYS_PER_CMD
 * changes: a whole key queue's worth fits in the ring at once
 * (remolo_limits.h), the loop runs a full command in a few microseconds,
 * and the caller waits only when the ring is full, for about one command's
 * time.
 */
struct rx_cmd {
	struct playout_pkt pkt;
	struct tpdev *tp;               /* RX_OP_TOUCHPAD */
	/* RX_OP_ADD_SESSION: NULL, or this sender's memory from its earlier
	 * sessions on this network (chooser_recall; recall_valid checked by
	 * the caller). The loop reads it before the session's first packet
	 * and writes over it, when the session ends (removed, or the loop
	 * stopping), what the session leaves (chooser_recall_out). So it is
	 * the caller's until the session's removal has run or the loop has
	 * stopped, as a touchpad is; a session refused writes nothing. */
	struct recall *recall;
	uint8_t key[WIRE_KEY_LEN];
	uint8_t id[WIRE_ID_LEN];
	uint8_t op;
	uint8_t nkeys;                  /* RX_OP_KEYS: changes in keys[] */
	/* RX_OP_KEYS: 0, or the changes of the whole batch this command
	 * begins (its own and those of the commands that continue it), and
	 * the room it needs in the session's key queue: 2 per press in it, the
	 * press and the place its release keeps (a release uses the place its
	 * press kept, so it needs none). The batch is refused whole, each of
	 * its changes counted a flood, unless keyq_room covers `need`; one
	 * that fits is refused none of its changes for want of room. */
	uint16_t whole;
	uint16_t need;
	struct playout_key keys[REMOLO_RX_KEYS_PER_CMD];
};
_Static_assert(2u * REMOLO_KEYQ_CAP <= UINT16_MAX, "a batch that can fit has its size and need in rx_cmd");

/*
 * The result of a key command (RX_OP_KEYS, or RX_OP_PUSH of a
 * PLAYOUT_KIND_KEY packet): >= 0, the count of changes refused for each
 * enum playout_key_refusal r in RX_KEYS_RESULT_BITS bits from bit
 * (r - 1) * RX_KEYS_RESULT_BITS; 0 when every change was taken. Or -errno:
 * -ENOENT (no such session), -EINVAL (nkeys 0 or over
 * REMOLO_RX_KEYS_PER_CMD), -ENODEV (the loop has no keyboard).
 */
#define RX_KEYS_RESULT_BITS 7
_Static_assert(REMOLO_RX_KEYS_PER_CMD < (1u << RX_KEYS_RESULT_BITS) &&
	       (PLAYOUT_KEY_REFUSED_COUNT - 1) * RX_KEYS_RESULT_BITS < 31,
	       "a key command's refusals pack into a non-negative int32");

static inline uint32_t rx_keys_refused(int32_t result, uint32_t reason)
{
	if (result < 0 || reason == 0 || reason >= PLAYOUT_KEY_REFUSED_COUNT)
		return 0;
	return ((uint32_t)result >> ((reason - 1) * RX_KEYS_RESULT_BITS)) &
	       ((1u << RX_KEYS_RESULT_BITS) - 1);
}

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
	uint64_t recovered;             /* packets that played the motion of lost
					 * ones (the redundancy feature) */
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
	uint64_t keyboard;              /* 1 when the loop has a keyboard device */
	uint64_t keys;                  /* key changes the sessions let out (a key
					 * two sessions hold changes the device once) */
	uint64_t key_refused[PLAYOUT_KEY_REFUSED_COUNT]; /* key changes refused at
					 * push, by enum playout_key_refusal ([0]
					 * unused) */
	uint64_t keys_folded;           /* releases folded by a full key queue */
	uint64_t key_frames;            /* writes to the keyboard */
	uint64_t key_frames_split;      /* extra writes: over PLAYOUT_KEY_PER_TICK
					 * changes across sessions in one tick */
	uint64_t key_write_errors;
	uint64_t keys_sysrq_dropped;    /* SysRq presses left out (Alt held) */
	uint64_t touchpad;              /* 1 when the loop has a touchpad */
	uint64_t gestures;              /* gestures begun, over the sessions */
	uint64_t gesture_states;        /* gesture states and ends taken */
	uint64_t gesture_refused;       /* states of ended gestures, or no room */
	uint64_t gesture_timeouts;      /* ended by REMOLO_GESTURE_STALE_US */
	uint64_t gesture_blocked;       /* ticks a session's touches waited: another
					 * session's fingers were on the pad */
	uint64_t touch_frames;          /* writes to the touchpad */
	uint64_t touch_write_errors;
	/* Timing, in rx_hist_bucket buckets of microseconds. */
	uint64_t tick_late_hist[REMOLO_HIST_BUCKETS]; /* timer reads by how long
					 * after the latest expiry they report the
					 * loop handled them (wake-up lateness) */
	uint64_t due_write_hist[REMOLO_HIST_BUCKETS]; /* tick frames by the time
					 * from when the earliest segment or button
					 * they let out first was due to the return
					 * of their write() (playout_out.due_us) */
	uint64_t slot_opened[REMOLO_SESSIONS_MAX]; /* datagrams opened per
					 * session slot since its session was
					 * added (the receipts a sender gets) */
};
_Static_assert(sizeof(struct rx_stats) % sizeof(uint64_t) == 0, "stats: whole u64 words");

/* ---- timing histograms (rxstats.c) ------------------------------------- */
/* The bucket of a time in microseconds (0 .. REMOLO_HIST_BUCKETS-1). */
uint32_t rx_hist_bucket(uint64_t us);
/* The smallest time a bucket holds, and the next bucket's (its end). */
uint64_t rx_hist_lower_us(uint32_t bucket);

/* ---- can io_uring be used here (rxring.c) ------------------------------ */
/* What rx_probe found. */
struct rx_probe_result {
	int setup_errno;                /* io_uring_queue_init: 0 or errno */
	int disabled;                   /* /proc/sys/kernel/io_uring_disabled, -1 if absent */
	int seccomp;                    /* Seccomp: from /proc/self/status, -1 if absent */
};

/* Tries a small ring: 0, or -errno with *out saying what is in the way. */
int rx_probe(struct rx_probe_result *out);

/* ---- the loop (rxloop.c) ------------------------------------------------ */
enum rx_state {
	RX_STATE_IDLE = 0,              /* initialised, not running */
	RX_STATE_RUNNING = 1,
	RX_STATE_STOPPED = 2,           /* rx_loop_run returned */
};

/* Opaque: rx_loop_size() bytes at REMOLO_RX_LOOP_ALIGN, owned by the
 * caller, zeroed or not (rx_loop_init sets every field). */
struct rx_loop;
#define REMOLO_RX_LOOP_ALIGN     64  /* a plain number, so Swift can import it */

/* The bytes a struct rx_loop takes (~900 KB, mostly playout rings: 32 sessions of ~27 KB). */
size_t rx_loop_size(void);
/* Sets up the loop on the caller's thread (fds, buffers, sessions table).
 * 0 or -errno (-EINVAL: bad config, no output device, a keyboard that is
 * not initialised, a record_fd that is not a pipe's non-blocking write
 * end). */
int rx_loop_init(struct rx_loop *l, const struct rx_config *cfg);
/* Runs until RX_OP_STOP, on the thread that will own the ring. Returns 0, or
 * -errno when the ring cannot be set up (also left in run_error). */
int rx_loop_run(struct rx_loop *l);
/* Releases everything (after rx_loop_run returned, or instead of it). */
void rx_loop_deinit(struct rx_loop *l);
/* enum rx_state, from any thread. */
int rx_loop_state(const struct rx_loop *l);
int rx_loop_run_error(const struct rx_loop *l);

/* ---- across threads ---------------------------------------------------- */
/* Queues a command and wakes the loop (one producer at a time: callers on
 * several threads serialise among themselves). Returns its sequence number
 * (0 .. 2^32-1), or -EAGAIN when the ring is full. */
int64_t rx_cmd_push(struct rx_loop *l, const struct rx_cmd *c);
/* rx_cmd_push that, while the ring is full, blocks until the loop frees a
 * slot instead of failing: the sequence number, -ETIMEDOUT (still full
 * after timeout_ns), -ECANCELED (full and the loop has stopped), or -errno.
 * The same producer rule holds. */
int64_t rx_cmd_push_wait(struct rx_loop *l, const struct rx_cmd *c, uint64_t timeout_ns);
/* Command seq's result, without blocking:
 *    1  *result set (>= 0 or -errno, the command's own outcome);
 *    0  not run yet;
 *   -ESTALE  it ran, but its result is gone.
 * A result lives in its command's slot of the ring, so it can be read
 * until command seq + REMOLO_RX_CMDQ_CAP runs; after that the slot holds
 * that command's result, and handing it out would tell the caller, say,
 * another session's slot number. The slot keeps the sequence number
 * beside the result (one atomic word), so expiry is detected, never
 * guessed. -ESTALE, like NFS's stale handle: what it named is gone. A
 * seq 2^31 or more behind the loop reads as not run yet. */
int rx_cmd_result(const struct rx_loop *l, uint32_t seq, int32_t *result);
/* Blocks until command seq has run, at most timeout_ns (0: look once;
 * UINT64_MAX: no limit):
 *    1  *result set, as rx_cmd_result;
 *   -ESTALE  as rx_cmd_result (the caller slept through
 *            REMOLO_RX_CMDQ_CAP later commands);
 *   -ETIMEDOUT  not run in time (a loop not yet started runs it later);
 *   -ECANCELED  the loop has stopped and will never run it;
 *   -errno  the futex failed.
 * A futex (futex(2)) the loop signals after each batch of commands, not a
 * poll: the caller sleeps until the loop has news. Any thread, any number
 * of them (l is not const: a waiter counts itself in, so that the loop
 * makes the wake-up system call only when someone waits). */
int rx_cmd_wait(struct rx_loop *l, uint32_t seq, int32_t *result, uint64_t timeout_ns);
/* A consistent snapshot of the loop's statistics, from any thread. */
void rx_stats_read(const struct rx_loop *l, struct rx_stats *out);

#endif
