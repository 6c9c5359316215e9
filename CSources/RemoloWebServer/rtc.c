// The data-channel endpoint (remolo_rtc.h): one UDP socket, one thread in
// poll(2), the peer table, the relay. Each datagram is demultiplexed by
// its first byte (RFC 7983 section 7): STUN checks are answered for
// registered peers only, DTLS is taken only from an address that passed
// a check for a peer, and each channel message that is one of the
// session's sealed datagrams is sent on, unopened, to the receiver's own
// datagram port, whose opener, replay window and playout judge it as
// they judge a native sender's.
//
// The public functions take rtc->lock; the endpoint thread holds it for
// everything it does but poll. Resources of a peer (SSL, SCTP socket)
// are made and freed by the thread alone: remolo_rtc_remove_peer marks
// the slot and waits until the thread has freed it.
#define _GNU_SOURCE
#include "rtc_internal.h"
#include "dcep.h"
#include "stun.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

_Static_assert(REMOLO_RTC_UFRAG_LEN >= 4 && REMOLO_RTC_PWD_LEN >= 22, "RFC 8839 section 5.4 minimums");
_Static_assert(REMOLO_RTC_MAX_PACKET >= REMOLO_RTC_DTLS_MTU, "our own DTLS datagrams fit a read");
_Static_assert(REMOLO_RTC_DATAGRAM_REDUNDANT_LEN <= REMOLO_RTC_MAX_MESSAGE, "a datagram fits a message");
_Static_assert(REMOLO_RTC_FLOOD_BURST >= REMOLO_RTC_FLOOD_RATE, "the burst holds a second's worth");

enum { STUN_USERNAME_SEP = ':' };

int64_t rtc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_ice_char(char c)   // RFC 8839 section 5.4: ALPHA / DIGIT / "+" / "/"
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

static int ice_chars(char *out, size_t n)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t r[REMOLO_RTC_PWD_LEN];

	_Static_assert(sizeof(alphabet) - 1 == 64, "six bits a character");
	if (n > sizeof(r) || RAND_bytes(r, (int)n) != 1)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[r[i] & 63];
	out[n] = 0;
	OPENSSL_cleanse(r, sizeof(r));
	return 0;
}

static int valid_chars(const char *s, size_t min, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n < min || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_ice_char(s[i]))
			return 0;
	return 1;
}

static int live(const struct rtc_peer *p)
{
	return p->used && p->st.state < REMOLO_RTC_PEER_CLOSED;
}

static int same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
}

int rtc_send(struct rtc_peer *p, const uint8_t *buf, size_t len)
{
	ssize_t n = sendto(p->rtc->fd, buf, len, MSG_DONTWAIT, (const struct sockaddr *)&p->addr, p->addr_len);

	return n < 0 ? -errno : (int)n;
}

void rtc_peer_end(struct rtc_peer *p, int state, int reason)
{
	struct remolo_rtc *rtc = p->rtc;

	rtc_sctp_close(p);   // first: its ABORT goes out through DTLS
	rtc_dtls_close(p);
	if (live(p))
		rtc->st.peers_live--;
	p->st.state = state;
	p->st.reason = reason;
	p->n_checked = 0;
	p->channel_sid = p->ack_sid = -1;
	p->refuse = 0;
	p->partial = p->end_state = p->end_reason = 0;
	OPENSSL_cleanse(p->pwd, sizeof(p->pwd));   // nothing can be checked any more
}

static void peer_free(struct rtc_peer *p)
{
	struct remolo_rtc *rtc = p->rtc;

	if (live(p))
		rtc_peer_end(p, REMOLO_RTC_PEER_CLOSED, REMOLO_RTC_REASON_NONE);
	OPENSSL_cleanse(p, sizeof(*p));
	p->rtc = rtc;
	p->channel_sid = p->ack_sid = -1;
}

static struct rtc_peer *find_session(struct remolo_rtc *rtc, const uint8_t id[REMOLO_RTC_SESSION_ID_LEN])
{
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS; i++)
		if (rtc->peers[i].used && !rtc->peers[i].doomed && !memcmp(rtc->peers[i].session_id, id, REMOLO_RTC_SESSION_ID_LEN))
			return &rtc->peers[i];
	return NULL;
}

static int flood_ok(struct rtc_peer *p)
{
	int64_t now = rtc_now_ms();

	p->tokens += (double)(now - p->tokens_at) * REMOLO_RTC_FLOOD_RATE / 1000.0;
	if (p->tokens > REMOLO_RTC_FLOOD_BURST)
		p->tokens = REMOLO_RTC_FLOOD_BURST;
	p->tokens_at = now;
	if (__builtin_expect(p->tokens < 1.0, 0))
		return 0;
	p->tokens -= 1.0;
	return 1;
}

void rtc_message(struct rtc_peer *p, uint16_t sid, uint32_t ppid, const uint8_t *data, size_t len, int complete)
{
	struct remolo_rtc *rtc = p->rtc;
	uint64_t *why;

	if (ppid == DCEP_PPID_CONTROL) {
		struct dcep_open o;
		if (!complete || len < 1 || data[0] != DCEP_MSG_OPEN)
			return;   // an ACK (we open nothing), or a part of something we never need whole
		// RFC 8832 section 6: the DTLS client (the browser) opens even
		// streams. One channel per association: the page's datagrams.
		if (dcep_parse_open(data, len, &o) == 0 && p->channel_sid < 0 && sid % 2 == 0) {
			p->channel_sid = p->ack_sid = sid;
			p->st.state = REMOLO_RTC_PEER_OPEN;
			rtc->st.channels_opened++;
		} else {
			rtc->st.channels_refused++;
			// Browsers call a channel open once they have sent its
			// OPEN (RFC 8832 section 6 lets them send at once), so
			// refusing means closing it: its stream is reset.
			if (sid < REMOLO_RTC_SCTP_STREAMS && sid != p->channel_sid)
				p->refuse |= 1u << sid;
		}
		return;
	}
	if (!complete) {   // usrsctp delivers a message longer than its buffer in parts
		p->partial = 1;
		return;
	}
	rtc->st.messages++;
	p->st.messages++;
	if (__builtin_expect(!flood_ok(p), 0))
		why = &rtc->st.dropped_flood;
	else if (__builtin_expect(p->partial || sid != p->channel_sid, 0))
		why = p->partial ? &rtc->st.dropped_size : &rtc->st.dropped_other;
	else if (__builtin_expect(ppid != DCEP_PPID_BINARY ||
	                          (len != REMOLO_RTC_DATAGRAM_LEN && len != REMOLO_RTC_DATAGRAM_REDUNDANT_LEN), 0))
		why = &rtc->st.dropped_size;
	else if (__builtin_expect(memcmp(data, p->session_id, REMOLO_RTC_SESSION_ID_LEN) != 0, 0))
		why = &rtc->st.dropped_session;
	else if (__builtin_expect(send(rtc->relay_fd, data, len, MSG_DONTWAIT) != (ssize_t)len, 0))
		why = &rtc->st.dropped_other;
	else
		why = NULL;
	p->partial = 0;
	if (why) {
		(*why)++;
		p->st.dropped++;
		return;
	}
	rtc->st.relayed++;
	p->st.relayed++;
}

static void on_stun(struct remolo_rtc *rtc, const uint8_t *buf, size_t n, const struct sockaddr_storage *from, socklen_t from_len)
{
	struct stun_request req;
	struct rtc_peer *p = NULL;

	rtc->st.stun_requests++;
	if (__builtin_expect(stun_parse(buf, n, &req) != 0, 0)) {
		rtc->st.stun_malformed++;
		return;
	}
	// USERNAME is "ours:theirs" (RFC 8445 section 7.2.2).
	const uint8_t *sep = memchr(req.username, STUN_USERNAME_SEP, req.username_len);
	size_t ours = sep ? (size_t)(sep - req.username) : req.username_len;
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS && sep; i++)
		if (live(&rtc->peers[i]) && ours == REMOLO_RTC_UFRAG_LEN && !memcmp(rtc->peers[i].ufrag, req.username, ours))
			p = &rtc->peers[i];
	if (__builtin_expect(!p, 0)) {
		rtc->st.stun_unknown_user++;   // dropped unanswered: strangers learn nothing
		return;
	}
	size_t theirs = req.username_len - ours - 1;
	if (__builtin_expect(theirs != p->their_ufrag_len || memcmp(sep + 1, p->their_ufrag, theirs) ||
	                     stun_verify(buf, n, &req, p->pwd, REMOLO_RTC_PWD_LEN) != 0, 0)) {
		rtc->st.stun_bad_credentials++;
		return;
	}
	p->st.stun_ok++;
	p->consent_deadline = rtc_now_ms() + REMOLO_RTC_CONSENT_TIMEOUT_MS;   // RFC 7675 section 5.1
	if (p->st.state == REMOLO_RTC_PEER_WAITING)
		p->st.state = REMOLO_RTC_PEER_CHECKED;
	int known = 0;
	for (int i = 0; i < p->n_checked; i++)
		known |= same_addr(&p->checked[i], from);
	if (!known) {
		int i = p->n_checked < REMOLO_RTC_MAX_CHECKED ? p->n_checked++ : (int)(p->st.stun_ok % REMOLO_RTC_MAX_CHECKED);
		p->checked[i] = *from;
		p->checked_len[i] = from_len;
	}
	// The mapped address as the browser knows itself: IPv4 even when it
	// reached our dual-stack socket as ::ffff:a.b.c.d.
	struct sockaddr_storage mapped = *from;
	const struct sockaddr_in6 *six = (const void *)from;
	if (from->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&six->sin6_addr)) {
		struct sockaddr_in *four = (void *)&mapped;
		in_port_t port = six->sin6_port;
		uint32_t a;
		memcpy(&a, &six->sin6_addr.s6_addr[12], 4);
		memset(&mapped, 0, sizeof(mapped));
		four->sin_family = AF_INET;
		four->sin_port = port;
		four->sin_addr.s_addr = a;
	}
	uint8_t out[STUN_MAX_RESPONSE];
	int len = stun_success(out, sizeof(out), &req, (const struct sockaddr *)&mapped, p->pwd, REMOLO_RTC_PWD_LEN);
	if (len > 0)
		(void)!sendto(rtc->fd, out, (size_t)len, MSG_DONTWAIT, (const struct sockaddr *)from, from_len);
}

static void on_dtls(struct remolo_rtc *rtc, const uint8_t *buf, size_t n, const struct sockaddr_storage *from, socklen_t from_len)
{
	struct rtc_peer *p = NULL;

	for (int i = 0; i < REMOLO_RTC_MAX_PEERS && !p; i++)
		for (int k = 0; live(&rtc->peers[i]) && k < rtc->peers[i].n_checked; k++)
			if (same_addr(&rtc->peers[i].checked[k], from))
				p = &rtc->peers[i];
	if (__builtin_expect(!p, 0)) {
		rtc->st.dtls_stranger++;
		return;
	}
	p->addr = *from;   // the browser may move to another checked pair (RFC 8445 section 8.1.1)
	p->addr_len = from_len;
	if (p->st.state == REMOLO_RTC_PEER_CHECKED)
		p->st.state = REMOLO_RTC_PEER_DTLS;
	int rc = rtc_dtls_input(p, buf, n);
	if (__builtin_expect(rc == -EPERM, 0)) {
		rtc->st.dtls_fingerprint_mismatch++;
		rtc_peer_end(p, REMOLO_RTC_PEER_FAILED, REMOLO_RTC_REASON_FINGERPRINT);
	} else if (rc == -ENOMEM) {
		rtc_peer_end(p, REMOLO_RTC_PEER_FAILED, REMOLO_RTC_REASON_NO_MEMORY);
	} else if (rc == -ECONNRESET) {
		rtc_peer_end(p, REMOLO_RTC_PEER_CLOSED, REMOLO_RTC_REASON_DTLS_FAILED);
	} else if (rc != 0) {
		rtc->st.dtls_failed++;
		rtc_peer_end(p, REMOLO_RTC_PEER_FAILED, REMOLO_RTC_REASON_DTLS_FAILED);
	} else if (p->end_state) {
		rtc_peer_end(p, p->end_state, p->end_reason);
	}
}

static void on_packet(struct remolo_rtc *rtc, size_t n, const struct sockaddr_storage *from, socklen_t from_len)
{
	const uint8_t *buf = rtc->packet;

	rtc->st.packets++;
	if (__builtin_expect(n > REMOLO_RTC_MAX_PACKET || n == 0, 0))
		rtc->st.dropped_other++;
	else if (stun_is(buf, n))
		on_stun(rtc, buf, n, from, from_len);
	else if (buf[0] >= 20 && buf[0] <= 63)   // RFC 7983 section 7: DTLS
		on_dtls(rtc, buf, n, from, from_len);
	else
		rtc->st.dropped_other++;
}

// Deadlines, retransmissions, removals; returns poll's timeout (-1: none,
// which is what an endpoint with no live peer gets).
static int housekeeping(struct remolo_rtc *rtc)
{
	int64_t now = rtc_now_ms(), next = INT64_MAX;
	int freed = 0, opening = 0;

	for (int i = 0; i < REMOLO_RTC_MAX_PEERS; i++) {
		struct rtc_peer *p = &rtc->peers[i];
		if (p->doomed) {
			peer_free(p);
			freed = 1;
			continue;
		}
		if (p->fresh) {
			p->fresh = 0;
			p->setup_deadline = now + REMOLO_RTC_SETUP_TIMEOUT_MS;
			p->consent_deadline = INT64_MAX;   // from the first check on
			p->tokens = REMOLO_RTC_FLOOD_BURST;
			p->tokens_at = now;
		}
		if (!live(p))
			continue;
		if (p->end_state) {
			rtc_peer_end(p, p->end_state, p->end_reason);
			continue;
		}
		if (p->st.state != REMOLO_RTC_PEER_OPEN && now >= p->setup_deadline) {
			rtc->st.peers_expired++;
			rtc_peer_end(p, REMOLO_RTC_PEER_FAILED, REMOLO_RTC_REASON_SETUP_TIMEOUT);
			continue;
		}
		if (now >= p->consent_deadline) {
			rtc->st.peers_expired++;
			rtc_peer_end(p, REMOLO_RTC_PEER_CLOSED, REMOLO_RTC_REASON_CONSENT_TIMEOUT);
			continue;
		}
		int t = rtc_dtls_timeout_ms(p);
		if (t == 0 && rtc_dtls_timer(p) != 0) {
			rtc->st.dtls_failed++;
			rtc_peer_end(p, REMOLO_RTC_PEER_FAILED, REMOLO_RTC_REASON_DTLS_FAILED);
			continue;
		}
		if (t >= 0 && now + (t ? t : 1) < next)
			next = now + (t ? t : 1);
		if (p->st.state != REMOLO_RTC_PEER_OPEN && p->setup_deadline < next)
			next = p->setup_deadline;
		opening |= p->sock && p->st.state != REMOLO_RTC_PEER_OPEN;
		if (p->consent_deadline < next)
			next = p->consent_deadline;
	}
	if (freed)
		pthread_cond_broadcast(&rtc->freed);
	// usrsctp says nothing of its next timer: a fine tick while an
	// association starts or carries traffic, a coarse one once it is
	// quiet (heartbeats, retransmissions of a lost SACK-less packet are
	// seconds apart), none without an association.
	if (rtc->st.sctp_live > 0) {
		int tick = now < rtc->busy_until || opening ? REMOLO_RTC_TICK_MS : REMOLO_RTC_QUIET_TICK_MS;
		if (now + tick < next)
			next = now + tick;
	}
	return next == INT64_MAX ? -1 : (int)(next - now);
}

static void *run(void *arg)
{
	struct remolo_rtc *rtc = arg;

	pthread_mutex_lock(&rtc->lock);
	while (!rtc->stopping) {
		struct pollfd fds[2] = { { .fd = rtc->fd, .events = POLLIN }, { .fd = rtc->wake_fd, .events = POLLIN } };
		int timeout = housekeeping(rtc);
		pthread_mutex_unlock(&rtc->lock);
		int r = poll(fds, 2, timeout);
		pthread_mutex_lock(&rtc->lock);
		if (r < 0)
			continue;   // EINTR
		rtc->st.wakeups++;
		if (fds[1].revents & POLLIN) {
			uint64_t v;
			(void)!read(rtc->wake_fd, &v, sizeof(v));
		}
		for (int i = 0; (fds[0].revents & POLLIN) && i < REMOLO_RTC_READS_PER_WAKE; i++) {
			struct sockaddr_storage from;
			socklen_t from_len = sizeof(from);
			// MSG_TRUNC: the datagram's real length, so a longer one is seen and dropped.
			ssize_t n = recvfrom(rtc->fd, rtc->packet, sizeof(rtc->packet), MSG_DONTWAIT | MSG_TRUNC,
			                     (struct sockaddr *)&from, &from_len);
			if (n < 0)
				break;
			on_packet(rtc, (size_t)n, &from, from_len);
		}
		if (rtc->st.sctp_live > 0)
			rtc_sctp_tick();
	}
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS; i++)
		peer_free(&rtc->peers[i]);
	pthread_cond_broadcast(&rtc->freed);
	pthread_mutex_unlock(&rtc->lock);
	return NULL;
}

static void wake(struct remolo_rtc *rtc)
{
	uint64_t one = 1;
	(void)!write(rtc->wake_fd, &one, sizeof(one));
}

static int fail(char *err, size_t len, const char *what, const char *host, uint16_t port, int e)
{
	snprintf(err, len, "%s %s port %u: %s", what, host ? host : "(any)", port, e ? strerror(e) : "unknown error");
	return -1;
}

static int resolve(const char *host, uint16_t port, int passive, struct addrinfo **out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = passive ? AI_PASSIVE : 0 };
	char service[8];

	snprintf(service, sizeof(service), "%u", port);
	return getaddrinfo(host && *host ? host : NULL, service, &hints, out);
}

static int open_sockets(struct remolo_rtc *rtc, const struct remolo_rtc_config *c, char *err, size_t err_len)
{
	struct addrinfo *ai = NULL;
	int zero = 0, e;

	if (!c->listen_host || !*c->listen_host) {
		// Every address, IPv4 and IPv6 on one socket: one port in the answer.
		struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_port = htons(c->listen_port), .sin6_addr = IN6ADDR_ANY_INIT };
		rtc->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (rtc->fd < 0 || setsockopt(rtc->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0 ||
		    bind(rtc->fd, (struct sockaddr *)&any, sizeof(any)) < 0)
			return fail(err, err_len, "cannot listen for WebRTC on UDP", "[::]", c->listen_port, errno);
	} else {
		if ((e = resolve(c->listen_host, c->listen_port, 1, &ai)) != 0) {
			snprintf(err, err_len, "cannot listen for WebRTC on %s: %s", c->listen_host, gai_strerror(e));
			return -1;
		}
		rtc->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		e = rtc->fd < 0 || bind(rtc->fd, ai->ai_addr, ai->ai_addrlen) < 0 ? errno : 0;
		freeaddrinfo(ai);
		if (e)
			return fail(err, err_len, "cannot listen for WebRTC on UDP", c->listen_host, c->listen_port, e);
	}
	struct sockaddr_storage local;
	socklen_t local_len = sizeof(local);
	if (getsockname(rtc->fd, (struct sockaddr *)&local, &local_len) < 0)
		return fail(err, err_len, "cannot read the WebRTC socket's port", c->listen_host, c->listen_port, errno);
	rtc->port = ntohs(local.ss_family == AF_INET ? ((struct sockaddr_in *)&local)->sin_port
	                                             : ((struct sockaddr_in6 *)&local)->sin6_port);

	// The relay: a socket connected to the receiver's datagram port. The
	// receiver never answers on it, so it is never read.
	if ((e = resolve(c->target_host ? c->target_host : "127.0.0.1", c->target_port, 0, &ai)) != 0) {
		snprintf(err, err_len, "cannot relay WebRTC datagrams to %s: %s", c->target_host, gai_strerror(e));
		return -1;
	}
	rtc->relay_fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	e = rtc->relay_fd < 0 || connect(rtc->relay_fd, ai->ai_addr, ai->ai_addrlen) < 0 ? errno : 0;
	freeaddrinfo(ai);
	if (e)
		return fail(err, err_len, "cannot relay WebRTC datagrams to", c->target_host, c->target_port, e);
	rtc->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rtc->wake_fd < 0)
		return fail(err, err_len, "cannot make the WebRTC endpoint's eventfd:", "", 0, errno);
	return 0;
}

struct remolo_rtc *remolo_rtc_start(const struct remolo_rtc_config *config, char *err, size_t err_len)
{
	struct remolo_rtc *rtc = calloc(1, sizeof(*rtc));
	int owned = 0, e;

	if (!rtc) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	rtc->fd = rtc->relay_fd = rtc->wake_fd = -1;
	pthread_mutex_init(&rtc->lock, NULL);
	pthread_cond_init(&rtc->freed, NULL);
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS; i++) {
		rtc->peers[i].rtc = rtc;
		rtc->peers[i].channel_sid = rtc->peers[i].ack_sid = -1;
	}
	if (open_sockets(rtc, config, err, err_len) != 0 || rtc_dtls_init(&rtc->dtls, err, err_len) != 0)
		goto fail;
	if (rtc_sctp_acquire(rtc) != 0) {
		snprintf(err, err_len, "another WebRTC endpoint runs in this process (usrsctp serves one)");
		goto fail;
	}
	owned = 1;
	if ((e = pthread_create(&rtc->thread, NULL, run, rtc)) != 0) {
		snprintf(err, err_len, "cannot start the WebRTC endpoint's thread: %s", strerror(e));
		goto fail;
	}
	return rtc;
fail:
	if (owned)
		rtc_sctp_release(rtc);
	rtc_dtls_free(&rtc->dtls);
	if (rtc->fd >= 0) close(rtc->fd);
	if (rtc->relay_fd >= 0) close(rtc->relay_fd);
	if (rtc->wake_fd >= 0) close(rtc->wake_fd);
	pthread_mutex_destroy(&rtc->lock);
	pthread_cond_destroy(&rtc->freed);
	free(rtc);
	return NULL;
}

uint16_t remolo_rtc_port(const struct remolo_rtc *rtc) { return rtc->port; }

// Waits, with rtc->lock held, until the thread has freed p.
static void doom(struct remolo_rtc *rtc, struct rtc_peer *p)
{
	p->doomed = 1;
	wake(rtc);
	while (p->used && !rtc->stopping)
		pthread_cond_wait(&rtc->freed, &rtc->lock);
}

int remolo_rtc_add_peer(struct remolo_rtc *rtc, const uint8_t session_id[8], const struct remolo_rtc_offer *offer,
                        struct remolo_rtc_answer *answer)
{
	int rc = 0;

	if (!valid_chars(offer->ufrag, 4, REMOLO_RTC_OFFER_MAX) || !valid_chars(offer->pwd, 22, REMOLO_RTC_OFFER_MAX))
		return -EINVAL;
	pthread_mutex_lock(&rtc->lock);
	struct rtc_peer *p = find_session(rtc, session_id);
	if (p)
		doom(rtc, p);   // the page retries: the old registration goes, with all it holds
	p = NULL;
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS && !p; i++)
		if (!rtc->peers[i].used)
			p = &rtc->peers[i];
	// Full: the oldest ended registration makes room (it holds nothing but stats).
	struct rtc_peer *oldest = NULL;
	for (int i = 0; i < REMOLO_RTC_MAX_PEERS && !p; i++)
		if (!live(&rtc->peers[i]) && (!oldest || rtc->peers[i].order < oldest->order))
			oldest = &rtc->peers[i];
	p = p ? p : oldest;
	if (__builtin_expect(!p, 0)) {
		rc = -ENOSPC;
		goto out;
	}
	peer_free(p);
	if (ice_chars(p->ufrag, REMOLO_RTC_UFRAG_LEN) != 0 || ice_chars(p->pwd, REMOLO_RTC_PWD_LEN) != 0) {
		rc = -ENOMEM;
		goto out;
	}
	p->used = p->fresh = 1;
	p->order = ++rtc->order;
	memcpy(p->session_id, session_id, REMOLO_RTC_SESSION_ID_LEN);
	p->their_ufrag_len = strlen(offer->ufrag);
	memcpy(p->their_ufrag, offer->ufrag, p->their_ufrag_len + 1);
	memcpy(p->fingerprint, offer->fingerprint, sizeof(p->fingerprint));
	p->st.state = REMOLO_RTC_PEER_WAITING;
	rtc->st.peers_live++;
	memcpy(answer->ufrag, p->ufrag, sizeof(answer->ufrag));
	memcpy(answer->pwd, p->pwd, sizeof(answer->pwd));
	memcpy(answer->fingerprint, rtc->dtls.fingerprint, sizeof(answer->fingerprint));
	answer->port = rtc->port;
	wake(rtc);
out:
	pthread_mutex_unlock(&rtc->lock);
	return rc;
}

void remolo_rtc_remove_peer(struct remolo_rtc *rtc, const uint8_t session_id[8])
{
	pthread_mutex_lock(&rtc->lock);
	struct rtc_peer *p = find_session(rtc, session_id);
	if (p)
		doom(rtc, p);
	pthread_mutex_unlock(&rtc->lock);
}

int remolo_rtc_peer_stats(const struct remolo_rtc *rtc, const uint8_t session_id[8], struct remolo_rtc_peer_stats *out)
{
	struct remolo_rtc *r = (struct remolo_rtc *)rtc;   // the lock is the only thing changed
	int rc = -ENOENT;

	pthread_mutex_lock(&r->lock);
	struct rtc_peer *p = find_session(r, session_id);
	if (p) {
		*out = p->st;
		rc = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

void remolo_rtc_get_stats(const struct remolo_rtc *rtc, struct remolo_rtc_stats *out)
{
	struct remolo_rtc *r = (struct remolo_rtc *)rtc;

	pthread_mutex_lock(&r->lock);
	*out = r->st;
	pthread_mutex_unlock(&r->lock);
}

void remolo_rtc_stop(struct remolo_rtc *rtc)
{
	if (!rtc)
		return;
	pthread_mutex_lock(&rtc->lock);
	rtc->stopping = 1;
	wake(rtc);
	pthread_mutex_unlock(&rtc->lock);
	pthread_join(rtc->thread, NULL);   // the thread frees every peer on its way out
	rtc_sctp_release(rtc);
	rtc_dtls_free(&rtc->dtls);
	close(rtc->fd);
	close(rtc->relay_fd);
	close(rtc->wake_fd);
	pthread_mutex_destroy(&rtc->lock);
	pthread_cond_destroy(&rtc->freed);
	OPENSSL_cleanse(rtc, sizeof(*rtc));
	free(rtc);
}
