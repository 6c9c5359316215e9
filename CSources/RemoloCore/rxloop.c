/* SPDX-License-Identifier: MIT */
/*
 * The receiver's loop (see remolo_rx.h, rx_internal.h): datagrams into
 * per-session playouts, a timerfd drain (480 Hz by default, rx_config.tick_ns)
 * into one output frame per tick,
 * commands from the control plane in between. Single-threaded and allocation-free once
 * rx_loop_run has set up its ring.
 *
 * The timer runs only while some session has something to play: it starts
 * with the first movement or button after a quiet spell and stops once every
 * session is quiet again (design note, part 5: an idle trackpad costs nothing).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "rx_internal.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

_Static_assert(WIRE_DROP_COUNT == sizeof(((struct rx_stats *)0)->drop) / sizeof(uint64_t),
	       "a drop counter per wire reason");
_Static_assert(sizeof(struct rx_record) <= PIPE_BUF, "a record is one atomic pipe write");

size_t rx_loop_size(void)
{
	return sizeof(struct rx_loop);
}

static int load_state(const int32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

int rx_loop_state(const struct rx_loop *l)
{
	return load_state(&l->state);
}

int rx_loop_run_error(const struct rx_loop *l)
{
	return load_state(&l->run_error);
}

/* The record fd must be a pipe's write end in non-blocking mode: records
 * stay whole only through atomic pipe writes, and a full pipe must fail at
 * once instead of stalling the drain. Checked here, off the loop thread. */
static int check_record_fd(int fd)
{
	struct stat sb;
	int fl;

	if (fstat(fd, &sb) < 0)
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (!S_ISFIFO(sb.st_mode) || !(fl & O_NONBLOCK) || (fl & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	return 0;
}

/* ---- statistics --------------------------------------------------------- */

/* The wire and the ring keep their own counters; the published snapshot
 * gathers them with the loop's. */
static void publish(struct rx_loop *l)
{
	const struct rx_ring_stats *rs = &l->ring.stats;

	l->st.opened = l->wire.stats.opened;
	memcpy(l->st.drop, l->wire.stats.drop, sizeof(l->st.drop));
	l->st.truncated = rs->truncated;
	l->st.enobufs = rs->enobufs;
	l->st.recv_arms = rs->recv_arms;
	l->st.recv_errors = rs->recv_errors;
	l->st.setup_flags = l->ring.flags;
	if (l->kbd)
		l->st.keys_sysrq_dropped = l->kbd->sysrq_dropped;
	rx_stats_pub_write(&l->pub, &l->st);
}

void rx_stats_read(const struct rx_loop *l, struct rx_stats *out)
{
	rx_stats_pub_read(&l->pub, out);
}

int rx_loop_init(struct rx_loop *l, const struct rx_config *cfg)
{
	int ret;

	memset(l, 0, sizeof(*l));
	l->record_fd = -1;
	/* One output path: a ptrdev, over uinput or over the caller's fd. */
	if (!cfg || cfg->sock < 0 || !cfg->dev || cfg->dev->fd < 0 || (cfg->kbd && cfg->kbd->fd < 0) ||
	    cfg->rt_priority < 0 || cfg->record_fd < -1 || playout_config_check(&cfg->playout) < 0)
		return -EINVAL;
	if (cfg->tick_ns && (cfg->tick_ns < REMOLO_TICK_NS_MIN || cfg->tick_ns > REMOLO_TICK_NS_MAX))
		return -EINVAL;
	l->tick_ns = cfg->tick_ns ? cfg->tick_ns : REMOLO_TICK_NS;
	if (cfg->record_fd > 0) {
		ret = check_record_fd(cfg->record_fd);
		if (ret < 0)
			return ret;
		l->record_fd = cfg->record_fd;
	}
	l->pcfg = cfg->playout;
	l->dev = cfg->dev;
	l->kbd = cfg->kbd;
	l->st.keyboard = cfg->kbd != NULL;
	l->rt_priority = cfg->rt_priority;
	if (wire_init(&l->wire) < 0)
		return -EIO;
	ret = rx_ring_init(&l->ring, cfg->sock);
	if (ret < 0) {
		wire_deinit(&l->wire);
		return ret;
	}
	publish(l);
	return 0;
}

void rx_loop_deinit(struct rx_loop *l)
{
	rx_ring_deinit(&l->ring);
	wire_deinit(&l->wire);
	rx_cmdq_wipe(&l->cmdq);
}

/* ---- output ------------------------------------------------------------- */

static bool empty(const struct playout_out *o)
{
	return !(o->dx | o->dy | o->wheel | o->hwheel | o->wheel_hires | o->hwheel_hires) && !o->nbtn;
}

/* Writes a frame; true when a frame went out. */
static bool emit(struct rx_loop *l, const struct playout_out *o)
{
	int ret;

	if (empty(o))
		return false;
	/* A failed write is counted here; ptrdev itself restores the buttons
	 * on its next write. */
	ret = ptrdev_write(l->dev, o);
	if (unlikely(ret < 0)) {
		l->st.write_errors++;
		l->st.last_write_errno = (uint64_t)-ret;
		return false;
	}
	l->st.frames++;
	l->st.sum_dx += (uint64_t)(int64_t)o->dx;
	l->st.sum_dy += (uint64_t)(int64_t)o->dy;
	l->st.sum_wheel_hires += (uint64_t)(int64_t)o->wheel_hires;
	l->st.sum_hwheel_hires += (uint64_t)(int64_t)o->hwheel_hires;
	return true;
}

/* Writes the keyboard's frame; true when one went out. */
static bool emit_keys(struct rx_loop *l, const struct playout_out *o)
{
	int ret;

	if (!o->nkey || !l->kbd)
		return false;
	/* kbddev restores the keys asked for on its next write. */
	ret = kbddev_write(l->kbd, o);
	if (unlikely(ret < 0)) {
		l->st.key_write_errors++;
		l->st.last_write_errno = (uint64_t)-ret;
		return false;
	}
	if (ret > 0)
		l->st.key_frames++;
	return ret > 0;
}

/* Adds one session's key changes to the frame through the hold counts:
 * the device sees a key go down when the first session presses it and up
 * when the last one releases it, so a session's end (or a session's
 * release) never lifts a key another session still holds. */
static void merge_keys(struct rx_loop *l, struct playout_out *m, const struct playout_out *o)
{
	l->st.keys += o->nkey;
	for (uint32_t i = 0; i < o->nkey; i++) {
		uint16_t c = o->key[i].code;

		/* keyq lets out codes below PLAYOUT_KEY_LIMIT only, and each
		 * session's changes of a key alternate, so a count never
		 * passes REMOLO_SESSIONS_MAX nor drops below 0. */
		if (o->key[i].down ? l->key_holders[c]++ != 0 : --l->key_holders[c] != 0)
			continue;
		if (unlikely(m->nkey == PLAYOUT_KEY_PER_TICK)) {
			(void)emit_keys(l, m);
			l->st.key_frames_split++;
			m->nkey = 0;
		}
		m->key[m->nkey++] = o->key[i];
	}
}

/* Leaves the keys of a frame, drops the pointer's part (written). */
static void clear_pointer(struct playout_out *m)
{
	m->dx = m->dy = 0;
	m->wheel = m->hwheel = m->wheel_hires = m->hwheel_hires = 0;
	m->nbtn = 0;
	m->due_us = 0;
}

/* Adds one session's tick to the frame. More than PLAYOUT_BTN_PER_TICK
 * button changes across sessions (several senders clicking in the same
 * 2 ms) cannot share one frame: the frame so far goes out first. */
static void merge(struct rx_loop *l, struct playout_out *m, const struct playout_out *o)
{
	if (unlikely(m->nbtn + o->nbtn > PLAYOUT_BTN_PER_TICK)) {
		(void)emit(l, m);
		l->st.frames_split++;
		clear_pointer(m);
	}
	if (o->due_us && (!m->due_us || (int64_t)(o->due_us - m->due_us) < 0))
		m->due_us = o->due_us;
	m->dx += o->dx;
	m->dy += o->dy;
	m->wheel += o->wheel;
	m->hwheel += o->hwheel;
	m->wheel_hires += o->wheel_hires;
	m->hwheel_hires += o->hwheel_hires;
	for (uint32_t i = 0; i < o->nbtn; i++)
		m->btn[m->nbtn++] = o->btn[i];
	merge_keys(l, m, o);
}

/* Writes a tick: the pointer's frame, then the keyboard's (playout_tick
 * orders buttons and keys for that). True when something went out. */
static bool emit_tick(struct rx_loop *l, const struct playout_out *m)
{
	bool wrote = emit(l, m);

	return emit_keys(l, m) || wrote;
}

/* ---- the timer ---------------------------------------------------------- */

static void timer_set(struct rx_loop *l, bool on)
{
	if ((l->st.timer_armed != 0) == on)
		return;
	if (unlikely(rx_ring_timer(&l->ring, on, l->tick_ns) < 0))
		return;
	l->st.timer_armed = on;
	l->tick_expirations = 0;
	if (on)
		l->st.timer_starts++;
	else
		l->st.timer_stops++;
}

static void count(uint64_t *hist, uint64_t us)
{
	hist[rx_hist_bucket(us)]++;
}

/* How long after its latest expiry a timer read is handled. Expiry n
 * (from 1) of a run of the timer is due at timer_first_ns + (n - 1) ticks.
 * A read of the timer's previous run that completes after a restart would
 * seem early: the count is then set again from the clock. */
static void tick_lateness(struct rx_loop *l, uint64_t expirations)
{
	uint64_t now = rx_now_ns(), first = l->ring.timer_first_ns;
	int64_t late;

	if (unlikely((int64_t)(now - first) < 0))
		return;         /* not a read of this run: its first expiry is ahead */
	l->tick_expirations += expirations;
	late = (int64_t)(now - first) - (int64_t)((l->tick_expirations - 1) * l->tick_ns);
	if (unlikely(late < 0)) {
		l->tick_expirations = (now - first) / l->tick_ns + 1;
		late = (int64_t)((now - first) % l->tick_ns);
	}
	count(l->st.tick_late_hist, (uint64_t)late / 1000u);
}

static void on_tick(struct rx_loop *l, uint64_t expirations)
{
	struct playout_out m, o;
	uint64_t now = rx_now_us();
	bool all_quiet = true;

	/* A read that completed just before the timer stopped. */
	if (!l->st.timer_armed)
		return;
	l->st.ticks++;
	tick_lateness(l, expirations);
	if (unlikely(expirations > 1)) {
		l->st.late_ticks++;
		l->st.missed_ticks += expirations - 1;
	}
	memset(&m, 0, sizeof(m));
	/* One tick at now covers missed expirations too: segments integrate
	 * up to now, so late ticks move the same total, in fewer steps. */
	for (uint32_t s = 0; s < REMOLO_SESSIONS_MAX; s++) {
		if (!l->active[s])
			continue;
		playout_tick(&l->po[s], now, &o);
		merge(l, &m, &o);
		rx_touch_tick(l, s, &o);
		l->st.gesture_timeouts += o.touch_timed_out;
		/* The playout's own idle signal: nothing queued and no motion or
		 * button for idle_us (heartbeats do not count). */
		if (!o.idle)
			all_quiet = false;
	}
	if (rx_touch_orphan(l))
		all_quiet = false;
	if (emit_tick(l, &m) && m.due_us)
		count(l->st.due_write_hist, rx_now_us() - m.due_us);
	if (all_quiet)
		timer_set(l, false);
}

/* ---- packets ------------------------------------------------------------ */

static int push(struct rx_loop *l, uint32_t slot, uint64_t now, const struct playout_pkt *pkt)
{
	uint64_t clamped = l->po[slot].stats.clamped, folded = l->po[slot].stats.key_folded;
	uint64_t recovered = l->po[slot].stats.recovered;
	uint64_t gestures = l->po[slot].stats.gestures;
	int res = playout_push(&l->po[slot], now, pkt);

	if (pkt->kind == PLAYOUT_KIND_GESTURE) {
		l->st.gestures += l->po[slot].stats.gestures - gestures;
		l->st.gesture_states += res != PLAYOUT_PUSH_REJECTED;
		l->st.gesture_refused += res == PLAYOUT_PUSH_REJECTED;
		/* An ended gesture's late state is the sender's to send, not an
		 * error of the command or the datagram. */
		if (res == PLAYOUT_PUSH_REJECTED)
			return 0;
	}
	l->st.clamped += l->po[slot].stats.clamped - clamped;
	l->st.recovered += l->po[slot].stats.recovered - recovered;
	l->st.keys_folded += l->po[slot].stats.key_folded - folded;
	/* A key command's result: its refusals, packed (remolo_rx.h). */
	if (pkt->kind == PLAYOUT_KIND_KEY && res > PLAYOUT_PUSH_REJECTED) {
		l->st.key_refused[res - PLAYOUT_PUSH_REJECTED]++;
		return 1 << ((res - PLAYOUT_PUSH_REJECTED - 1) * RX_KEYS_RESULT_BITS);
	}
	l->st.delay_us = l->po[slot].delay.delay_us;
	switch (res) {
	case PLAYOUT_PUSH_LATE:
		l->st.pushed_late++;
		break;
	case PLAYOUT_PUSH_MERGED:
		l->st.pushed_merged++;
		break;
	case PLAYOUT_PUSH_FORCED:
		l->st.pushed_forced++;
		break;
	case PLAYOUT_PUSH_REJECTED:
		l->st.pushed_rejected++;
		return -EINVAL;
	default:
		break;
	}
	/* Heartbeats feed the clock estimate and move nothing: they neither
	 * start the timer nor keep it running. Unless one recovered the motion
	 * of lost datagrams (the end of a stroke: the redundancy feature). */
	if (pkt->kind == PLAYOUT_KIND_HEARTBEAT && l->po[slot].stats.recovered == recovered)
		return 0;
	if (pkt->kind == PLAYOUT_KIND_BUTTON)
		l->st.buttons++;
	timer_set(l, true);
	return 0;
}

/* A batch of key changes at one sender time (RX_OP_KEYS). */
static int push_keys(struct rx_loop *l, uint32_t slot, uint64_t now, const struct rx_cmd *c)
{
	uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT] = { 0 };
	uint64_t folded = l->po[slot].stats.key_folded;
	int32_t result = 0;

	/* A text is played whole or refused whole: its first command carries
	 * its size. The result packs this command's changes (at most
	 * REMOLO_RX_KEYS_PER_CMD); the counter takes the whole text's. */
	if (c->whole && !playout_keys_fit(&l->po[slot], c->need, c->whole, NULL)) {
		l->st.key_refused[PLAYOUT_KEY_REFUSED_FLOOD] += c->whole;
		return (int32_t)((uint32_t)c->nkeys << ((PLAYOUT_KEY_REFUSED_FLOOD - 1) * RX_KEYS_RESULT_BITS));
	}
	if (playout_push_keys(&l->po[slot], now, c->pkt.tx_us, c->keys, c->nkeys, refused)) {
		l->st.delay_us = l->po[slot].delay.delay_us;
		timer_set(l, true);
	}
	l->st.keys_folded += l->po[slot].stats.key_folded - folded;
	for (uint32_t r = 1; r < PLAYOUT_KEY_REFUSED_COUNT; r++) {
		l->st.key_refused[r] += refused[r];
		result |= (int32_t)(refused[r] << ((r - 1) * RX_KEYS_RESULT_BITS));
	}
	return result;
}

/* One record, one write(), never waiting: the pipe is non-blocking, so a
 * reader that fell behind costs a record (counted), not a tick. No retry
 * on EINTR: a non-blocking pipe write does not sleep, so it is not
 * interrupted. */
static void record(struct rx_loop *l, uint32_t slot, uint64_t now, const struct playout_pkt *pkt)
{
	struct rx_record rec;
	ssize_t w;

	memset(&rec, 0, sizeof(rec));
	rec.tx_us = pkt->tx_us;
	rec.rx_us = now;
	/* Buttons travel as code and state in the packet; the record keeps
	 * the wire's a and b for every kind. */
	if (pkt->kind == PLAYOUT_KIND_BUTTON) {
		rec.a = pkt->code;
		rec.b = pkt->down;
	} else {
		rec.a = pkt->a;
		rec.b = pkt->b;
	}
	rec.session = l->session_no[slot];
	rec.kind = pkt->kind;
	rec.slot = (uint8_t)slot;
	w = write(l->record_fd, &rec, sizeof(rec));
	if (likely(w == (ssize_t)sizeof(rec)))
		l->st.records++;
	else if (w < 0 && errno == EAGAIN)
		l->st.record_dropped++;
	else
		l->st.record_errors++;
}

static void on_datagram(struct rx_loop *l, const struct rx_ev *ev)
{
	/* The arrival time, on the playout's clock (see rx_ring_init for why
	 * not a kernel timestamp). */
	uint64_t now = rx_now_us();
	struct wire_rx rx;
	int r;

	l->st.datagrams++;
	r = wire_open(&l->wire, ev->data, ev->len, &rx);
	if (unlikely(r < 0))
		return;         /* counted by reason in l->wire.stats */
	if (unlikely(!l->active[r])) {
		l->st.drop_no_slot++;
		return;
	}
	l->st.slot_opened[r]++;
	/* Off: one branch on a field that never changes while the loop runs. */
	if (l->record_fd >= 0)
		record(l, (uint32_t)r, now, &rx.pkt);
	(void)push(l, (uint32_t)r, now, &rx.pkt);
}

/* ---- sessions and commands ---------------------------------------------- */

/* Plays out what the session still holds at once and releases its buttons,
 * so nothing is lost and no button sticks when a sender goes away; hands
 * what it learned of its network to the caller's memory, if it has one. */
static void end_session(struct rx_loop *l, uint32_t slot, uint64_t now)
{
	struct playout_out o;

	playout_flush(&l->po[slot], now);
	for (uint32_t i = 0; i < RX_FLUSH_TICKS; i++) {
		struct playout_out m;

		playout_tick(&l->po[slot], now, &o);
		rx_touch_tick(l, slot, &o);
		if (empty(&o) && !o.nkey)
			break;
		memset(&m, 0, sizeof(m));
		merge(l, &m, &o);
		(void)emit_tick(l, &m);
	}
	if (l->recall_to[slot]) {
		chooser_recall_out(&l->po[slot].delay.chooser, l->recall_to[slot]);
		l->recall_to[slot] = NULL;
	}
	l->active[slot] = 0;
}

static int32_t run_cmd(struct rx_loop *l, const struct rx_cmd *c, bool *stop)
{
	uint64_t now = rx_now_us();
	struct playout_pkt pkt;
	int r;

	l->st.commands++;
	switch (c->op) {
	case RX_OP_ADD_SESSION:
		r = wire_add_session(&l->wire, c->id, c->key);
		if (r < 0)
			break;
		if (playout_init(&l->po[r], &l->pcfg) < 0) {
			(void)wire_remove_session(&l->wire, c->id);
			r = -EINVAL;
			break;
		}
		/* Before any packet: the held delay is the session's first. */
		if (c->recall)
			chooser_recall(&l->po[r].delay.chooser, &l->pcfg, c->recall);
		l->recall_to[r] = c->recall;
		l->active[r] = 1;
		l->st.slot_opened[r] = 0;
		l->st.sessions_added++;
		l->session_no[r] = (uint32_t)l->st.sessions_added;
		break;
	case RX_OP_REMOVE_SESSION:
		r = wire_lookup(&l->wire, c->id);
		if (r < 0)
			break;
		if (l->active[r])
			end_session(l, (uint32_t)r, now);
		r = wire_remove_session(&l->wire, c->id);
		l->st.sessions_removed++;
		break;
	case RX_OP_PUSH:
		r = wire_lookup(&l->wire, c->id);
		if (r < 0)
			break;
		/* Heartbeats are datagrams only: the control channel has pings.
		 * Gesture states too: the control channel ends gestures. */
		if ((c->pkt.kind != PLAYOUT_KIND_BUTTON && c->pkt.kind != PLAYOUT_KIND_MOTION &&
		     c->pkt.kind != PLAYOUT_KIND_SCROLL && c->pkt.kind != PLAYOUT_KIND_KEY &&
		     !(c->pkt.kind == PLAYOUT_KIND_GESTURE && c->pkt.g.type == PLAYOUT_GESTURE_END)) ||
		    !l->active[r]) {
			r = -EINVAL;
			break;
		}
		if ((c->pkt.kind == PLAYOUT_KIND_KEY && !l->kbd) || (c->pkt.kind == PLAYOUT_KIND_GESTURE && !l->tp)) {
			r = -ENODEV;
			break;
		}
		pkt = c->pkt;
		/* Recovered motion comes only with a datagram's running totals. */
		pkt.lost_n = 0;
		memset(pkt.lost, 0, sizeof(pkt.lost));
		r = push(l, (uint32_t)r, now, &pkt);
		break;
	case RX_OP_KEYS:
		r = wire_lookup(&l->wire, c->id);
		if (r < 0)
			break;
		if (!l->active[r] || c->nkeys == 0 || c->nkeys > REMOLO_RX_KEYS_PER_CMD) {
			r = -EINVAL;
			break;
		}
		if (!l->kbd) {
			r = -ENODEV;
			break;
		}
		r = push_keys(l, (uint32_t)r, now, c);
		break;
	case RX_OP_REDUNDANCY:
		r = wire_set_totals(&l->wire, c->id, 1);
		break;
	case RX_OP_GESTURES:
		r = l->tp ? wire_set_gestures(&l->wire, c->id, 1) : -ENODEV;
		break;
	case RX_OP_TOUCHPAD:
		r = rx_touch_adopt(l, c->tp);
		break;
	case RX_OP_STOP:
		*stop = true;
		r = 0;
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r < 0)
		l->st.command_errors++;
	l->st.sessions_live = l->wire.nsessions;
	/* An added session's slot tells the caller where its receipts are; a
	 * key command's result its refusals. */
	if (r < 0 || c->op == RX_OP_ADD_SESSION || c->op == RX_OP_KEYS ||
	    (c->op == RX_OP_PUSH && c->pkt.kind == PLAYOUT_KIND_KEY))
		return r;
	return 0;
}

/* Runs every queued command; true when one of them asks to stop (the rest
 * stay queued and are never run). Waiters hear of the batch once, after
 * its last result. */
static bool run_cmds(struct rx_loop *l)
{
	const struct rx_cmd *c;
	bool stop = false, ran = false;

	while (!stop && (c = rx_cmdq_peek(&l->cmdq)) != NULL) {
		int r = run_cmd(l, c, &stop);

		/* The statistics first: a caller that sees its command's result
		 * and then reads them sees what the command did (sessions_live
		 * after an add), not the loop's previous snapshot. Commands are
		 * the control plane: one snapshot each costs nothing here. */
		publish(l);
		rx_cmdq_done(&l->cmdq, r);
		ran = true;
	}
	if (ran)
		rx_cmdq_signal(&l->cmdq);
	return stop;
}

/* timeout_ns from now on CLOCK_MONOTONIC, saturating: UINT64_MAX waits
 * as good as forever. */
static uint64_t deadline(uint64_t timeout_ns)
{
	uint64_t now = rx_now_ns();

	return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

int64_t rx_cmd_push(struct rx_loop *l, const struct rx_cmd *c)
{
	int64_t seq = rx_cmdq_push(&l->cmdq, c);
	int ret;

	if (seq < 0)
		return seq;
	ret = rx_ring_wake(&l->ring);
	return ret < 0 ? ret : seq;
}

int64_t rx_cmd_push_wait(struct rx_loop *l, const struct rx_cmd *c, uint64_t timeout_ns)
{
	uint64_t until = deadline(timeout_ns);
	int64_t seq;
	int ret;

	while ((seq = rx_cmd_push(l, c)) == -EAGAIN) {
		ret = rx_cmdq_wait_room(&l->cmdq, until);
		if (ret < 0)
			return ret;
	}
	return seq;
}

int rx_cmd_result(const struct rx_loop *l, uint32_t seq, int32_t *result)
{
	return rx_cmdq_result(&l->cmdq, seq, result);
}

int rx_cmd_wait(struct rx_loop *l, uint32_t seq, int32_t *result, uint64_t timeout_ns)
{
	return rx_cmdq_wait(&l->cmdq, seq, result, deadline(timeout_ns));
}

/* ---- the loop ----------------------------------------------------------- */

/* Scheduling for the drain thread. Timer slack 1 ns: the default 50 us
 * slack delays every wake-up that goes through a sleeping wait. SCHED_FIFO
 * (needs CAP_SYS_NICE) took p99 tick lateness from ~3.9 ms to ~60 us on a
 * busy 2-core machine; the loop always blocks in io_uring_enter, so it
 * never starves the rest of the system. */
static void tune_thread(struct rx_loop *l)
{
	struct sched_param sp;

	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (l->rt_priority <= 0)
		return;
	memset(&sp, 0, sizeof(sp));
	sp.sched_priority = l->rt_priority;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
		l->st.rt = 1;
}

int rx_loop_run(struct rx_loop *l)
{
	struct rx_ev ev;
	bool stop = false;
	int ret;

	tune_thread(l);
	ret = rx_ring_up(&l->ring);
	if (ret < 0)
		goto out;
	publish(l);
	__atomic_store_n(&l->state, RX_STATE_RUNNING, __ATOMIC_RELEASE);

	while (!stop) {
		ret = rx_ring_wait(&l->ring);
		if (unlikely(ret < 0))
			break;
		/* Commands first: a session added before its first datagram
		 * was sent is live before that datagram is opened, even when
		 * both complete in the same batch. */
		stop = run_cmds(l);
		while (!stop && rx_ring_next(&l->ring, &ev)) {
			switch (ev.kind) {
			case RX_EV_DATAGRAM:
				on_datagram(l, &ev);
				rx_ring_recycle(&l->ring, ev.bid);
				break;
			case RX_EV_TIMER:
				on_tick(l, ev.expirations);
				break;
			case RX_EV_WAKE:
				stop = run_cmds(l);
				break;
			default:
				break;
			}
		}
		publish(l);
	}

	/* Shutting down: every session ends as if removed. */
	for (uint32_t s = 0; s < REMOLO_SESSIONS_MAX; s++) {
		if (l->active[s])
			end_session(l, s, rx_now_us());
	}
	/* Every session ended; whatever a failed write left down goes up. */
	if (l->kbd)
		(void)kbddev_release(l->kbd);
	if (l->tp)
		(void)tpdev_lift(l->tp);
	timer_set(l, false);
	rx_ring_down(&l->ring);
out:
	if (ret > 0)
		ret = 0;
	__atomic_store_n(&l->run_error, ret, __ATOMIC_RELEASE);
	publish(l);
	__atomic_store_n(&l->state, RX_STATE_STOPPED, __ATOMIC_RELEASE);
	/* Whoever still waits for a command hears that it never runs. */
	rx_cmdq_close(&l->cmdq);
	return ret;
}
