/* SPDX-License-Identifier: MIT */
/*
 * The command ring (see rx_internal.h): session setup, buttons from the
 * control channel and stop requests travel on it from other threads to the
 * loop. Neither side ever blocks the other: the producer stores a command
 * and the tail, the consumer loads the tail and stores results and the head.
 *
 * The consumer peeks at a command and marks it done after running it,
 * instead of handing the ring a callback: the loop keeps its own control
 * flow (it stops at RX_OP_STOP) and the ring knows nothing about commands.
 *
 * Results live in the command's slot, so they outlive their command only
 * until the slot is reused, REMOLO_RX_CMDQ_CAP commands later. Each result
 * is stored together with the sequence number it belongs to, in one 64-bit
 * word: a reader either finds its own number there, or knows the slot has
 * moved on (-ESTALE), and can never pair its number with another command's
 * result (two separate stores could be seen torn, one from each command).
 *
 * Waiting is a futex (futex(2)) on gen, a 32-bit word the loop bumps after
 * each batch of commands it ran and once more when it closes the ring.
 * Waiters count themselves in waiters, so the loop makes the FUTEX_WAKE
 * system call only when someone sleeps: a batch nobody waits for costs it
 * two atomic operations and no syscall.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "rx_internal.h"

#define CMD_MASK (REMOLO_RX_CMDQ_CAP - 1)

_Static_assert(REMOLO_RX_CMDQ_CAP <= (1u << 30), "seq - head fits int32 with room to spare");
_Static_assert(sizeof(((struct rx_cmdq *)0)->done[0]) == 2 * sizeof(uint32_t),
	       "a result and its sequence number share one word");

static uint64_t pack(uint32_t seq, int32_t result)
{
	return (uint64_t)seq << 32 | (uint32_t)result;
}

int64_t rx_cmdq_push(struct rx_cmdq *q, const struct rx_cmd *c)
{
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	if (__builtin_expect(tail - head >= REMOLO_RX_CMDQ_CAP, 0))
		return -EAGAIN;
	q->cmd[tail & CMD_MASK] = *c;
	/* Release: the consumer that sees the new tail sees the command. */
	__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	return (int64_t)tail;
}

int rx_cmdq_result(const struct rx_cmdq *q, uint32_t seq, int32_t *result)
{
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
	uint64_t w;

	/* Free-running u32 indices: "seq < head" modulo 2^32. */
	if ((int32_t)(head - seq) <= 0)
		return 0;
	/* head > seq was stored after command seq's word (release, acquire
	 * here): the slot holds seq's word or a later command's, never an
	 * earlier one. The word is read once: number and result together. */
	w = __atomic_load_n(&q->done[seq & CMD_MASK], __ATOMIC_ACQUIRE);
	if (__builtin_expect((uint32_t)(w >> 32) != seq, 0))
		return -ESTALE;
	*result = (int32_t)(uint32_t)w;
	return 1;
}

bool rx_cmdq_room(const struct rx_cmdq *q)
{
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	return tail - head < REMOLO_RX_CMDQ_CAP;
}

const struct rx_cmd *rx_cmdq_peek(struct rx_cmdq *q)
{
	/* head is written by this thread only: a plain load is enough. */
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);

	if (q->head == tail)
		return NULL;
	return &q->cmd[q->head & CMD_MASK];
}

void rx_cmdq_done(struct rx_cmdq *q, int32_t result)
{
	uint32_t head = q->head;

	/* Keys do not outlive their command in the ring. */
	explicit_bzero(q->cmd[head & CMD_MASK].key, sizeof(q->cmd[0].key));
	/* Release: whoever reads this word sees what the command did. */
	__atomic_store_n(&q->done[head & CMD_MASK], pack(head, result), __ATOMIC_RELEASE);
	/* Release: a producer that sees head sees the result, and may reuse
	 * the slot. */
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELEASE);
}

/* ---- waiting ------------------------------------------------------------ */

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	/* glibc has no wrapper (futex(2), NOTES). FUTEX_BITSET_MATCH_ANY
	 * matters only to FUTEX_WAIT_BITSET; FUTEX_WAKE ignores val3. */
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* The waker's half of the kernel's own ordering (kernel/futex/waitwake.c,
 * "Basic futex operation and ordering guarantees"): the new value is
 * stored before waiters is read, and a waiter counts itself before the
 * kernel compares the value, both sequentially consistent. Either this
 * sees the waiter and wakes it, or the waiter's FUTEX_WAIT sees the new
 * value and returns EAGAIN at once: no wake-up is lost. */
void rx_cmdq_signal(struct rx_cmdq *q)
{
	uint32_t g = __atomic_load_n(&q->gen, __ATOMIC_RELAXED); /* one writer */

	__atomic_store_n(&q->gen, g + 1, __ATOMIC_SEQ_CST);
	if (__builtin_expect(__atomic_load_n(&q->waiters, __ATOMIC_SEQ_CST) != 0, 0))
		(void)futex(&q->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

void rx_cmdq_close(struct rx_cmdq *q)
{
	__atomic_store_n(&q->closed, 1, __ATOMIC_RELEASE);
	rx_cmdq_signal(q);
}

/* Sleeps until gen moves on from g, or the deadline (CLOCK_MONOTONIC, ns)
 * passes. 0 (look again), -ETIMEDOUT, or -errno. FUTEX_WAIT_BITSET takes
 * an absolute CLOCK_MONOTONIC time (since Linux 2.6.25), so retries after
 * a spurious wake-up or a signal keep the caller's deadline. */
static int sleep_on(struct rx_cmdq *q, uint32_t g, uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};
	long ret;
	int err;

	__atomic_fetch_add(&q->waiters, 1, __ATOMIC_SEQ_CST);
	ret = futex(&q->gen, FUTEX_WAIT_BITSET_PRIVATE, g, &ts);
	err = errno;
	__atomic_fetch_sub(&q->waiters, 1, __ATOMIC_SEQ_CST);
	if (ret == 0 || err == EAGAIN || err == EINTR)
		return 0;
	return -err;
}

/* What a waiter waits for: command seq's result, or room for a command.
 * 1 when it has it, 0 while it is still to come, -ESTALE. */
static int look(const struct rx_cmdq *q, bool room, uint32_t seq, int32_t *result)
{
	if (room)
		return rx_cmdq_room(q) ? 1 : 0;
	return rx_cmdq_result(q, seq, result);
}

static int wait_for(struct rx_cmdq *q, bool room, uint32_t seq, int32_t *result, uint64_t deadline_ns)
{
	for (;;) {
		/* gen first (acquire: it was stored after the head it
		 * covers), then the ring: a batch that ends after the look
		 * has moved gen, and the futex will not sleep on it. */
		uint32_t g = __atomic_load_n(&q->gen, __ATOMIC_ACQUIRE);
		int ret = look(q, room, seq, result);

		if (ret != 0)
			return ret;
		/* Closed after its last batch: what has not run never will. */
		if (__builtin_expect(__atomic_load_n(&q->closed, __ATOMIC_ACQUIRE), 0)) {
			ret = look(q, room, seq, result);
			return ret != 0 ? ret : -ECANCELED;
		}
		if (rx_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		ret = sleep_on(q, g, deadline_ns);
		if (ret == -ETIMEDOUT) {
			ret = look(q, room, seq, result);
			return ret != 0 ? ret : -ETIMEDOUT;
		}
		if (ret < 0)
			return ret;
	}
}

int rx_cmdq_wait(struct rx_cmdq *q, uint32_t seq, int32_t *result, uint64_t deadline_ns)
{
	return wait_for(q, false, seq, result, deadline_ns);
}

int rx_cmdq_wait_room(struct rx_cmdq *q, uint64_t deadline_ns)
{
	return wait_for(q, true, 0, NULL, deadline_ns);
}

void rx_cmdq_wipe(struct rx_cmdq *q)
{
	explicit_bzero(q->cmd, sizeof(q->cmd));
}
