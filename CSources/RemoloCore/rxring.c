/* SPDX-License-Identifier: MIT */
/*
 * The receiver's io_uring (see rx_internal.h): one ring, three requests in
 * flight at any time, in the manner of liburing's examples/io_uring-udp.c.
 *
 *   TAG_RECV   multishot recvmsg on the UDP socket (Linux 6.0), buffers
 *              picked by the kernel from a registered buffer ring (5.19)
 *   TAG_TIMER  read of the drain timerfd; liburing 2.3 has no multishot
 *              read, so it is re-armed after each completion
 *   TAG_WAKE   read of the eventfd that other threads write after queueing
 *              a command
 *
 * Re-arming only prepares an SQE; it goes to the kernel with the next
 * rx_ring_wait, so a batch of completions costs one io_uring_enter.
 *
 * The ring counts its own receive events in r->stats (as wire.c counts in
 * w->stats); the loop copies them when it publishes. The loop's clock lives
 * here too: the timerfd that paces the drain runs on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <time.h>
#include <netinet/in.h>
#include <liburing.h>

#include "rx_internal.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

enum { TAG_RECV = 1, TAG_TIMER = 2, TAG_WAKE = 3 };

#define BUF_MASK (REMOLO_RX_BUFS - 1)
/* The probe's throwaway ring, and the longest /proc/self/status line read. */
#define PROBE_ENTRIES 2u
#define STATUS_LINE 256

_Static_assert(sizeof(struct io_uring) <= RX_URING_BYTES, "struct io_uring fits its room");
_Static_assert(_Alignof(struct io_uring) <= 16, "struct io_uring alignment");
_Static_assert(sizeof(struct msghdr) <= RX_MSGHDR_BYTES, "struct msghdr fits its room");
_Static_assert(sizeof(struct io_uring_recvmsg_out) == RX_OUT_HDR, "recvmsg_out header");
_Static_assert(sizeof(struct sockaddr_in6) == RX_NAME_LEN, "room for an IPv6 source");
_Static_assert(REMOLO_RX_BUFS <= 65536, "buffer ids are u16");

static struct io_uring *uring(struct rx_ring *r)
{
	return (struct io_uring *)(void *)r->uring;
}

static struct msghdr *msg(struct rx_ring *r)
{
	return (struct msghdr *)(void *)r->msg;
}

static struct io_uring_buf_ring *buf_ring(struct rx_ring *r)
{
	return (struct io_uring_buf_ring *)(void *)r->map;
}

static size_t ring_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = REMOLO_RX_BUFS * sizeof(struct io_uring_buf);

	return (n + page - 1) & ~(page - 1);
}

/* ---- probe -------------------------------------------------------------- */

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int seccomp_mode(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[STATUS_LINE];
	int v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Seccomp: %d", &v) == 1)
			break;
	}
	fclose(f);
	return v;
}

int rx_probe(struct rx_probe_result *out)
{
	struct io_uring ring;
	int ret;

	memset(out, 0, sizeof(*out));
	/* Since Linux 6.6: 0 allowed, 1 only for io_uring_group, 2 nobody. */
	out->disabled = read_int_file("/proc/sys/kernel/io_uring_disabled");
	out->seccomp = seccomp_mode();
	ret = io_uring_queue_init(PROBE_ENTRIES, &ring, 0);
	if (ret < 0) {
		out->setup_errno = -ret;
		return ret;
	}
	io_uring_queue_exit(&ring);
	return 0;
}

/* ---- setup -------------------------------------------------------------- */

int rx_ring_init(struct rx_ring *r, int sock)
{
	size_t rb = ring_bytes();
	int ret;

	memset(r, 0, sizeof(*r));
	r->sock = sock;
	r->timer_fd = -1;
	r->wake_fd = -1;
	r->map = MAP_FAILED;

	/* The buffer ring must be page aligned (io_uring_register_buf_ring;
	 * liburing 2.3 has no io_uring_setup_buf_ring to do it for us). The
	 * buffers follow it in the same mapping. */
	r->map_len = rb + (size_t)REMOLO_RX_BUFS * RX_BUF_SIZE;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	r->bufs = r->map + rb;

	/* Blocking fds: io_uring waits on them itself, by poll where the file
	 * supports non-blocking reads (eventfd; timerfd once it gained
	 * read_iter in recent kernels), else in an io-wq worker. With
	 * O_NONBLOCK on a file without that support, a read could complete
	 * with -EAGAIN at once instead of waiting. */
	r->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (r->timer_fd < 0) {
		ret = -errno;
		goto fail;
	}
	r->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (r->wake_fd < 0) {
		ret = -errno;
		goto fail;
	}
	/* Only the source address is asked for: no control data. Kernel
	 * receive timestamps (SO_TIMESTAMPNS) are CLOCK_REALTIME, which steps
	 * with NTP and settimeofday, while the playout schedules on the
	 * monotonic clock the timerfd runs on; converting would take a
	 * realtime-monotonic offset sampled at another moment and break on
	 * every step. The loop reads CLOCK_MONOTONIC (vDSO, tens of ns) as it
	 * reaps each completion instead: the error is the loop's wake-up
	 * latency (~60 us p99 under SCHED_FIFO here), well inside the 6 ms
	 * minimum delay, and the clock estimate keeps the fastest trip. */
	msg(r)->msg_namelen = RX_NAME_LEN;
	msg(r)->msg_controllen = 0;
	return 0;

fail:
	rx_ring_deinit(r);
	return ret;
}

static int arm_recv(struct rx_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(uring(r));

	if (unlikely(!sqe))
		return -EBUSY;
	io_uring_prep_recvmsg_multishot(sqe, r->sock, msg(r), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = RX_BGID;
	io_uring_sqe_set_data64(sqe, TAG_RECV);
	r->recv_armed = true;
	return 0;
}

static int arm_read(struct rx_ring *r, int fd, uint64_t *val, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(uring(r));

	if (unlikely(!sqe))
		return -EBUSY;
	io_uring_prep_read(sqe, fd, val, sizeof(*val), 0);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

/* Flag sets to try, best first. DEFER_TASKRUN (6.1) needs SINGLE_ISSUER
 * (6.0) and runs completions only when this thread waits, so nothing
 * interrupts the loop; COOP_TASKRUN (5.19) is the next best: no IPI per
 * completion. Older kernels say -EINVAL to flags they do not know. */
static const uint32_t setup_flags[] = {
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_COOP_TASKRUN,
	0,
};

int rx_ring_up(struct rx_ring *r)
{
	struct io_uring_buf_reg reg;
	struct io_uring_buf_ring *br;
	unsigned int i;
	int ret = -EINVAL;

	for (i = 0; i < sizeof(setup_flags) / sizeof(setup_flags[0]); i++) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		p.flags = setup_flags[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = RX_CQ_ENTRIES;
		ret = io_uring_queue_init_params(RX_SQ_ENTRIES, uring(r), &p);
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		return ret;
	r->flags = setup_flags[i];
	r->up = true;

	br = buf_ring(r);
	io_uring_buf_ring_init(br);
	for (i = 0; i < REMOLO_RX_BUFS; i++)
		io_uring_buf_ring_add(br, r->bufs + (size_t)i * RX_BUF_SIZE, RX_BUF_SIZE,
				      (unsigned short)i, BUF_MASK, (int)i);
	io_uring_buf_ring_advance(br, REMOLO_RX_BUFS);
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (unsigned long)(uintptr_t)br;
	reg.ring_entries = REMOLO_RX_BUFS;
	reg.bgid = RX_BGID;
	ret = io_uring_register_buf_ring(uring(r), &reg, 0);
	if (ret < 0)
		goto fail;

	ret = arm_recv(r);
	if (ret == 0)
		ret = arm_read(r, r->timer_fd, &r->timer_val, TAG_TIMER);
	if (ret == 0)
		ret = arm_read(r, r->wake_fd, &r->wake_val, TAG_WAKE);
	if (ret < 0)
		goto fail;
	ret = io_uring_submit(uring(r));
	if (ret < 0)
		goto fail;
	/* The first arm; rx_ring_wait counts the re-arms. */
	r->stats.recv_arms = 1;
	return 0;

fail:
	rx_ring_down(r);
	return ret;
}

/* ---- the wait and the completions --------------------------------------- */

int rx_ring_wait(struct rx_ring *r)
{
	int ret;

	if (unlikely(!r->recv_armed)) {
		ret = arm_recv(r);
		if (ret < 0)
			return ret;
		r->stats.recv_arms++;
	}
	ret = io_uring_submit_and_wait(uring(r), 1);
	if (unlikely(ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY))
		return ret;
	return 0;
}

static void on_recv(struct rx_ring *r, const struct io_uring_cqe *cqe, struct rx_ev *ev)
{
	struct rx_ring_stats *st = &r->stats;
	struct io_uring_recvmsg_out *o;
	uint8_t *buf;
	uint16_t bid;

	/* Without F_MORE the multishot request has ended (ring dry, error,
	 * or the kernel's own limit): arm it again before the next wait. */
	if (!(cqe->flags & IORING_CQE_F_MORE))
		r->recv_armed = false;
	if (unlikely(cqe->res < 0)) {
		if (cqe->res == -ENOBUFS)
			st->enobufs++;
		else
			st->recv_errors++;
		ev->kind = RX_EV_ERROR;
		return;
	}
	if (unlikely(!(cqe->flags & IORING_CQE_F_BUFFER))) {
		st->recv_errors++;
		ev->kind = RX_EV_ERROR;
		return;
	}
	bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
	buf = r->bufs + (size_t)(bid & BUF_MASK) * RX_BUF_SIZE;
	o = io_uring_recvmsg_validate(buf, cqe->res, msg(r));
	ev->bid = bid;
	if (unlikely(!o)) {
		st->recv_errors++;
		rx_ring_recycle(r, bid);
		ev->kind = RX_EV_ERROR;
		return;
	}
	ev->kind = RX_EV_DATAGRAM;
	ev->data = io_uring_recvmsg_payload(o, msg(r));
	ev->len = io_uring_recvmsg_payload_length(o, cqe->res, msg(r));
	/* A datagram longer than the buffer arrives cut: what is left is
	 * still longer than any valid one, and the flag says so. */
	ev->truncated = (o->flags & MSG_TRUNC) != 0;
	if (ev->truncated)
		st->truncated++;
}

bool rx_ring_next(struct rx_ring *r, struct rx_ev *ev)
{
	struct io_uring_cqe *cqe;
	uint64_t tag;

	if (io_uring_peek_cqe(uring(r), &cqe) != 0 || !cqe)
		return false;
	memset(ev, 0, sizeof(*ev));
	tag = io_uring_cqe_get_data64(cqe);
	switch (tag) {
	case TAG_RECV:
		on_recv(r, cqe, ev);
		break;
	case TAG_TIMER:
		/* A read of a stopped (disarmed) timer just waits; -ECANCELED
		 * and friends are re-armed the same way. */
		ev->kind = cqe->res == (int)sizeof(uint64_t) ? RX_EV_TIMER : RX_EV_ERROR;
		ev->expirations = r->timer_val;
		if (arm_read(r, r->timer_fd, &r->timer_val, TAG_TIMER) < 0)
			ev->kind = RX_EV_ERROR;
		break;
	case TAG_WAKE:
		ev->kind = RX_EV_WAKE;
		(void)arm_read(r, r->wake_fd, &r->wake_val, TAG_WAKE);
		break;
	default:
		ev->kind = RX_EV_ERROR;
		break;
	}
	io_uring_cqe_seen(uring(r), cqe);
	return true;
}

void rx_ring_recycle(struct rx_ring *r, uint16_t bid)
{
	struct io_uring_buf_ring *br = buf_ring(r);

	io_uring_buf_ring_add(br, r->bufs + (size_t)(bid & BUF_MASK) * RX_BUF_SIZE,
			      RX_BUF_SIZE, bid, BUF_MASK, 0);
	io_uring_buf_ring_advance(br, 1);
}

int rx_ring_timer(struct rx_ring *r, bool on, uint32_t period_ns)
{
	struct itimerspec its;

	uint64_t first = 0;

	memset(&its, 0, sizeof(its));
	if (on) {
		/* First expiry one period from now, as an absolute time so that
		 * the loop knows every expiry's due time (tick lateness); the
		 * kernel then keeps the period without drift (hrtimer
		 * forwarding steps the expiry by whole periods). */
		first = rx_now_ns() + period_ns;
		its.it_value.tv_sec = (time_t)(first / 1000000000u);
		its.it_value.tv_nsec = (long)(first % 1000000000u);
		its.it_interval.tv_nsec = period_ns;
	}
	if (timerfd_settime(r->timer_fd, on ? TFD_TIMER_ABSTIME : 0, &its, NULL) < 0)
		return -errno;
	r->timer_first_ns = first;
	return 0;
}

int rx_ring_wake(const struct rx_ring *r)
{
	uint64_t one = 1;

	/* Never blocks: the loop drains the counter long before 2^64 - 2. */
	if (write(r->wake_fd, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

void rx_ring_down(struct rx_ring *r)
{
	if (!r->up)
		return;
	/* Exiting the ring cancels the reads and drops the buffer ring
	 * registration; the mapping stays ours until deinit. */
	io_uring_queue_exit(uring(r));
	r->up = false;
	r->recv_armed = false;
}

void rx_ring_deinit(struct rx_ring *r)
{
	rx_ring_down(r);
	if (r->timer_fd >= 0)
		close(r->timer_fd);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->map_len);
	r->timer_fd = -1;
	r->wake_fd = -1;
	r->map = NULL;
	r->bufs = NULL;
}

uint64_t rx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rx_now_us(void)
{
	struct timespec ts;

	/* vDSO, tens of ns: cheap enough to read once per completion. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
