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
 */
#include <errno.h>
#include <string.h>

#include "rx_internal.h"

#define CMD_MASK (REMOLO_RX_CMDQ_CAP - 1)

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

bool rx_cmdq_result(const struct rx_cmdq *q, uint32_t seq, int32_t *result)
{
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	/* Free-running u32 indices: "seq < head" modulo 2^32. */
	if ((int32_t)(head - seq) <= 0)
		return false;
	*result = __atomic_load_n(&q->result[seq & CMD_MASK], __ATOMIC_RELAXED);
	return true;
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
	__atomic_store_n(&q->result[head & CMD_MASK], result, __ATOMIC_RELAXED);
	/* Release: a producer that sees head sees the result, and may reuse
	 * the slot. */
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELEASE);
}

void rx_cmdq_wipe(struct rx_cmdq *q)
{
	explicit_bzero(q->cmd, sizeof(q->cmd));
}
