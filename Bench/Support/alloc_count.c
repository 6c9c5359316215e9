/* SPDX-License-Identifier: MIT */
/*
 * Counts heap allocations for Bench by interposing malloc and friends in
 * the executable itself: the dynamic linker resolves every library's
 * malloc (libswiftCore, Foundation, libc's own callers) to these, and they
 * forward to glibc's __libc_* entry points. Only Bench links this.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_support.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static uint64_t allocations;

uint64_t bench_allocations(void)
{
	return __atomic_load_n(&allocations, __ATOMIC_RELAXED);
}

static void count(void)
{
	__atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	count();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	count();
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	count();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

void *memalign(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	count();
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
