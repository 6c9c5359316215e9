/* SPDX-License-Identifier: MIT */
/*
 * The loop's statistics, published for other threads (see rx_internal.h).
 *
 * Seqlock (as the kernel's seqcount, in C11 terms after Boehm, "Can
 * seqlocks get along with programming language memory models?", 2012):
 * odd while writing; every word is an atomic access, so a reader racing the
 * writer sees torn data only between two different sequence values and
 * retries. The writer never waits for readers.
 */
#include "rx_internal.h"

#define STAT_WORDS (sizeof(struct rx_stats) / sizeof(uint64_t))

/* The seqlock copies u64 words with atomic builtins. Where those are not
 * always lock-free (32-bit ARM before ARMv7, e.g. Debian armel) GCC emits
 * libatomic calls that may take a lock, and the loop could then wait on a
 * reader. ARMv7 (ldrexd/strexd, which fault on a u64 that is not 8-aligned;
 * AAPCS aligns it) and AArch64 are lock-free. */
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "u64 atomics without locks");
_Static_assert(_Alignof(struct rx_stats) == sizeof(uint64_t), "stats words: 8-aligned");

void rx_stats_pub_write(struct rx_stats_pub *p, const struct rx_stats *s)
{
	const uint64_t *src = (const uint64_t *)(const void *)s;
	uint64_t *dst = (uint64_t *)(void *)&p->s;
	uint32_t seq = p->seq;

	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t i = 0; i < STAT_WORDS; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

void rx_stats_pub_read(const struct rx_stats_pub *p, struct rx_stats *out)
{
	const uint64_t *src = (const uint64_t *)(const void *)&p->s;
	uint64_t *dst = (uint64_t *)(void *)out;
	uint32_t s1, s2;

	do {
		s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
		for (size_t i = 0; i < STAT_WORDS; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
	} while (s1 != s2 || (s1 & 1));
}

/* ---- timing histograms -------------------------------------------------- */

/* Log-linear, as HdrHistogram with two significant bits: the octave of a
 * value picks a group of REMOLO_HIST_SUB buckets, the two bits below its
 * top bit the bucket in it. */
uint32_t rx_hist_bucket(uint64_t us)
{
	uint32_t e, b;

	if (us < REMOLO_HIST_LINEAR)
		return (uint32_t)us;
	e = 63u - (uint32_t)__builtin_clzll(us);        /* >= 3 */
	b = REMOLO_HIST_LINEAR + (e - 3u) * REMOLO_HIST_SUB +
	    (uint32_t)((us >> (e - 2u)) & (REMOLO_HIST_SUB - 1u));
	return b < REMOLO_HIST_BUCKETS ? b : REMOLO_HIST_BUCKETS - 1u;
}

uint64_t rx_hist_lower_us(uint32_t bucket)
{
	uint32_t i;

	if (bucket < REMOLO_HIST_LINEAR)
		return bucket;
	if (bucket > REMOLO_HIST_BUCKETS)
		bucket = REMOLO_HIST_BUCKETS;
	i = bucket - REMOLO_HIST_LINEAR;
	return (uint64_t)(REMOLO_HIST_SUB + i % REMOLO_HIST_SUB) << (1u + i / REMOLO_HIST_SUB);
}
