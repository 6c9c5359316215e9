/* SPDX-License-Identifier: MIT */
/*
 * What crosses threads (see remolo_rx.h): the command ring that session
 * setup, buttons from the control channel and stop requests travel on, and
 * the seqlock that publishes the loop's statistics. Neither side ever
 * blocks the other: the loop only loads an index and stores results.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "remolo_rx.h"

#define CMD_MASK (REMOLO_RX_CMDQ_CAP - 1)
#define STAT_WORDS (sizeof(struct rx_stats) / sizeof(uint64_t))

/* The seqlock copies u64 words with atomic builtins. Where those are not
 * always lock-free (32-bit ARM before ARMv7, e.g. Debian armel) GCC emits
 * libatomic calls that may take a lock, and the loop could then wait on a
 * reader. ARMv7 (ldrexd/strexd, which fault on a u64 that is not 8-aligned;
 * AAPCS aligns it) and AArch64 are lock-free. */
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "u64 atomics without locks");
_Static_assert(_Alignof(struct rx_stats) == sizeof(uint64_t), "stats words: 8-aligned");

int64_t rx_cmd_push(struct rx_loop *l, const struct rx_cmd *c)
{
	struct rx_cmdq *q = &l->cmdq;
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
	int ret;

	if (tail - head >= REMOLO_RX_CMDQ_CAP)
		return -EAGAIN;
	q->cmd[tail & CMD_MASK] = *c;
	/* Release: the loop that sees the new tail sees the command. */
	__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	ret = rx_ring_wake(&l->ring);
	if (ret < 0)
		return ret;
	return (int64_t)tail;
}

int rx_cmd_result(const struct rx_loop *l, uint32_t seq, int32_t *result)
{
	uint32_t head = __atomic_load_n(&l->cmdq.head, __ATOMIC_ACQUIRE);

	/* Free-running u32 indices: "seq < head" modulo 2^32. */
	if ((int32_t)(head - seq) <= 0)
		return 0;
	*result = __atomic_load_n(&l->cmdq.result[seq & CMD_MASK], __ATOMIC_RELAXED);
	return 1;
}

int rx_cmd_drain(struct rx_loop *l, int32_t (*run)(struct rx_loop *, const struct rx_cmd *, bool *stop))
{
	struct rx_cmdq *q = &l->cmdq;
	uint32_t head = q->head;
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	bool stop = false;

	while (head != tail && !stop) {
		struct rx_cmd *c = &q->cmd[head & CMD_MASK];
		int32_t res = run(l, c, &stop);

		/* Keys do not outlive their command in the ring. */
		explicit_bzero(c->key, sizeof(c->key));
		__atomic_store_n(&q->result[head & CMD_MASK], res, __ATOMIC_RELAXED);
		head++;
		/* Release: a producer that sees head sees the result, and may
		 * reuse the slot. */
		__atomic_store_n(&q->head, head, __ATOMIC_RELEASE);
	}
	return stop ? 1 : 0;
}

/*
 * Seqlock (as the kernel's seqcount, in C11 terms after Boehm, "Can
 * seqlocks get along with programming language memory models?", 2012):
 * odd while writing; every word is an atomic access, so a reader racing the
 * writer sees torn data only between two different sequence values and
 * retries.
 */
void rx_stats_publish(struct rx_loop *l)
{
	const uint64_t *src = (const uint64_t *)(const void *)&l->st;
	uint64_t *dst = (uint64_t *)(void *)&l->pub.s;
	uint32_t seq = l->pub.seq;

	__atomic_store_n(&l->pub.seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t i = 0; i < STAT_WORDS; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
	__atomic_store_n(&l->pub.seq, seq + 2, __ATOMIC_RELEASE);
}

void rx_stats_read(const struct rx_loop *l, struct rx_stats *out)
{
	const uint64_t *src = (const uint64_t *)(const void *)&l->pub.s;
	uint64_t *dst = (uint64_t *)(void *)out;
	uint32_t s1, s2;

	do {
		s1 = __atomic_load_n(&l->pub.seq, __ATOMIC_ACQUIRE);
		for (size_t i = 0; i < STAT_WORDS; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&l->pub.seq, __ATOMIC_RELAXED);
	} while (s1 != s2 || (s1 & 1));
}

uint64_t rx_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
