// SCTP over DTLS (RFC 8261) through usrsctp in AF_CONN mode: usrsctp
// sees each peer as an opaque address (the peer's slot), hands outgoing
// packets to conn_output, which seals them as DTLS records, and gets
// incoming ones from rtc_dtls_input. usrsctp_init_nothreads starts no
// timer or receive thread (only its iterator thread, which sleeps on a
// condition variable until asked to walk the associations): its timers
// advance only when the endpoint thread calls rtc_sctp_tick, which it
// does only while an association exists, so an idle receiver is not woken. Every usrsctp call, and so every
// callback, happens on the endpoint thread; that is why one endpoint at
// a time may own the stack.
//
// Both ends use port 5000 (RFC 8841, a=sctp-port) and both connect, as
// the browsers do (SCTP resolves the collision of two INITs, RFC 9260
// section 5.2.4).
#include "rtc_internal.h"
#include "dcep.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <usrsctp.h>

_Static_assert(REMOLO_RTC_SCTP_STREAMS <= 32, "refused streams are a 32-bit mask");

static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static struct remolo_rtc *owner;   // the endpoint using usrsctp now
static int initialised;
static int64_t last_tick;

// Called inside usrsctp calls, on the endpoint thread. addr is a peer
// slot of the owner (the only addresses registered), which stays valid
// as long as the owner does; a packet for a peer whose DTLS is gone is dropped.
static int conn_output(void *addr, void *buf, size_t len, uint8_t tos, uint8_t set_df)
{
	struct remolo_rtc *rtc = owner;
	struct rtc_peer *p = addr;

	if (__builtin_expect(!rtc || p < rtc->peers || p >= rtc->peers + REMOLO_RTC_MAX_PEERS || !p->ssl, 0))
		return EIO;
	rtc->busy_until = rtc_now_ms() + REMOLO_RTC_BUSY_MS;
	return rtc_dtls_send(p, buf, len) == 0 ? 0 : EIO;
}

int rtc_sctp_acquire(struct remolo_rtc *rtc)
{
	int rc = 0;

	pthread_mutex_lock(&owner_lock);
	if (owner) {
		rc = -EBUSY;
		goto out;
	}
	if (!initialised) {
		// Port 0: no UDP encapsulation (RFC 6951), AF_CONN only.
		usrsctp_init_nothreads(0, conn_output, NULL);
		usrsctp_sysctl_set_sctp_ecn_enable(0);            // inside DTLS it cannot see the IP header's marks
		usrsctp_sysctl_set_sctp_asconf_enable(0);         // one fixed path: no address changes
		usrsctp_sysctl_set_sctp_auth_enable(0);           // DTLS authenticates (RFC 8261 section 6)
		usrsctp_sysctl_set_sctp_blackhole(2);             // no ABORT to out-of-the-blue packets
		initialised = 1;
	}
	owner = rtc;
	last_tick = rtc_now_ms();
out:
	pthread_mutex_unlock(&owner_lock);
	return rc;
}

void rtc_sctp_release(struct remolo_rtc *rtc)
{
	// usrsctp stays initialised for the process: usrsctp_finish followed
	// by a second init is not something it supports reliably.
	pthread_mutex_lock(&owner_lock);
	if (owner == rtc)
		owner = NULL;
	pthread_mutex_unlock(&owner_lock);
}

void rtc_sctp_tick(void)
{
	int64_t now = rtc_now_ms();

	if (now > last_tick) {
		usrsctp_handle_timers((uint32_t)(now - last_tick));
		last_tick = now;
	}
}

static void notification(struct rtc_peer *p, const union sctp_notification *n, size_t len)
{
	struct remolo_rtc_stats *st = &p->rtc->st;

	if (len < sizeof(n->sn_header) || len != n->sn_header.sn_length)
		return;
	switch (n->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		if (len < sizeof(n->sn_assoc_change))
			return;
		switch (n->sn_assoc_change.sac_state) {
		case SCTP_COMM_UP:
			if (p->associated) {
				st->extra_associations++;
				break;
			}
			p->associated = 1;
			st->associations++;
			break;
		case SCTP_RESTART:
			st->extra_associations++;   // the browser started over on the same socket
			break;
		case SCTP_COMM_LOST:
		case SCTP_SHUTDOWN_COMP:
			p->end_state = REMOLO_RTC_PEER_CLOSED;
			p->end_reason = REMOLO_RTC_REASON_SCTP_CLOSED;
			break;
		case SCTP_CANT_STR_ASSOC:
			p->end_state = REMOLO_RTC_PEER_FAILED;
			p->end_reason = REMOLO_RTC_REASON_SCTP_FAILED;
			break;
		}
		break;
	case SCTP_SHUTDOWN_EVENT:
		p->end_state = REMOLO_RTC_PEER_CLOSED;
		p->end_reason = REMOLO_RTC_REASON_SCTP_CLOSED;
		break;
	case SCTP_STREAM_RESET_EVENT: {
		// RFC 8831 section 6.7: a channel closes by resetting its
		// stream. The endpoint's one channel closing ends the peer.
		const struct sctp_stream_reset_event *e = &n->sn_strreset_event;
		if (len < sizeof(*e) || !(e->strreset_flags & SCTP_STREAM_RESET_INCOMING_SSN))
			break;
		size_t count = (len - sizeof(*e)) / sizeof(uint16_t);
		for (size_t i = 0; i < count; i++)
			if (p->channel_sid >= 0 && e->strreset_stream_list[i] == p->channel_sid) {
				p->end_state = REMOLO_RTC_PEER_CLOSED;
				p->end_reason = REMOLO_RTC_REASON_CHANNEL_CLOSED;
			}
		break;
	}
	default:
		break;
	}
}

// usrsctp hands over every message and notification here, in malloc'ed
// memory we free. NULL data: the association's socket has ended.
static int receive(struct socket *sock, union sctp_sockstore addr, void *data, size_t len, struct sctp_rcvinfo rcv,
                   int flags, void *ulp_info)
{
	struct rtc_peer *p = ulp_info;

	if (!data) {
		if (!p->end_state) {
			p->end_state = REMOLO_RTC_PEER_CLOSED;
			p->end_reason = REMOLO_RTC_REASON_SCTP_CLOSED;
		}
		return 1;
	}
	if (flags & MSG_NOTIFICATION)
		notification(p, data, len);
	else
		rtc_message(p, rcv.rcv_sid, ntohl(rcv.rcv_ppid), data, len, !!(flags & MSG_EOR));
	free(data);
	return 1;
}

static int setopt(struct socket *s, int level, int name, const void *v, socklen_t len)
{
	return usrsctp_setsockopt(s, level, name, v, len) == 0 ? 0 : -errno;
}

int rtc_sctp_open(struct rtc_peer *p)
{
	static const uint16_t events[] = { SCTP_ASSOC_CHANGE, SCTP_SHUTDOWN_EVENT, SCTP_STREAM_RESET_EVENT };
	const int on = 1;
	int rc;

	usrsctp_register_address(p);
	p->sctp_registered = 1;
	p->sock = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, receive, NULL, 0, p);
	if (__builtin_expect(!p->sock, 0))
		return errno ? -errno : -ENOMEM;
	p->rtc->st.sctp_live++;
	// Closing aborts (no lingering association to time out on its own).
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sctp_assoc_value reset = { .assoc_id = SCTP_ALL_ASSOC, .assoc_value = SCTP_ENABLE_RESET_STREAM_REQ };
	struct sctp_initmsg init = { .sinit_num_ostreams = REMOLO_RTC_SCTP_STREAMS, .sinit_max_instreams = REMOLO_RTC_SCTP_STREAMS };
	// One DTLS record per SCTP packet: the path MTU is fixed, never probed.
	struct sctp_paddrparams pp = { .spp_pathmtu = REMOLO_RTC_SCTP_MTU, .spp_flags = SPP_PMTUD_DISABLE };
	// A SACK for every packet, at once: no delayed-SACK timer to wait for
	// when the endpoint's timers run at the quiet tick.
	struct sctp_sack_info sack = { .sack_assoc_id = SCTP_ALL_ASSOC, .sack_delay = 0, .sack_freq = 1 };
	if (usrsctp_set_non_blocking(p->sock, 1) < 0)
		return -errno;
	const int buffer = REMOLO_RTC_SCTP_BUFFER;
	if ((rc = setopt(p->sock, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg))) ||
	    (rc = setopt(p->sock, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer))) ||
	    (rc = setopt(p->sock, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &reset, sizeof(reset))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof(on))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof(init))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp, sizeof(pp))) ||
	    (rc = setopt(p->sock, IPPROTO_SCTP, SCTP_DELAYED_SACK, &sack, sizeof(sack))))
		return rc;
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct sctp_event ev = { .se_assoc_id = SCTP_ALL_ASSOC, .se_type = events[i], .se_on = 1 };
		if ((rc = setopt(p->sock, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof(ev))))
			return rc;
	}
	struct sockaddr_conn sc = { .sconn_family = AF_CONN, .sconn_port = htons(REMOLO_RTC_SCTP_PORT), .sconn_addr = p };
	if (usrsctp_bind(p->sock, (struct sockaddr *)&sc, sizeof(sc)) < 0)
		return -errno;
	if (usrsctp_connect(p->sock, (struct sockaddr *)&sc, sizeof(sc)) < 0 && errno != EINPROGRESS)
		return -errno;
	return 0;
}

static void send_ack(struct rtc_peer *p)
{
	uint8_t ack[DCEP_ACK_LEN];
	size_t n = dcep_ack(ack);
	// RFC 8832 section 6: DCEP messages go reliably and in order on the channel's stream.
	struct sctp_sndinfo si = { .snd_sid = (uint16_t)p->ack_sid, .snd_ppid = htonl(DCEP_PPID_CONTROL), .snd_flags = 0 };

	p->ack_sid = -1;
	if (usrsctp_sendv(p->sock, ack, n, NULL, 0, &si, sizeof(si), SCTP_SENDV_SNDINFO, 0) < 0) {
		p->end_state = REMOLO_RTC_PEER_FAILED;
		p->end_reason = REMOLO_RTC_REASON_SCTP_FAILED;
	}
}

// RFC 8831 section 6.7: closing a channel resets its outgoing stream;
// the browser answers by resetting its own, and calls the channel closed.
static void reset_refused(struct rtc_peer *p)
{
	union {
		struct sctp_reset_streams r;
		uint8_t room[sizeof(struct sctp_reset_streams) + REMOLO_RTC_SCTP_STREAMS * sizeof(uint16_t)];
	} u;
	uint16_t n = 0;

	memset(&u, 0, sizeof(u));
	for (uint16_t sid = 0; sid < REMOLO_RTC_SCTP_STREAMS; sid++)
		if (p->refuse & (1u << sid))
			u.r.srs_stream_list[n++] = sid;
	p->refuse = 0;
	u.r.srs_assoc_id = SCTP_ALL_ASSOC;
	u.r.srs_flags = SCTP_STREAM_RESET_OUTGOING;
	u.r.srs_number_streams = n;
	(void)setopt(p->sock, IPPROTO_SCTP, SCTP_RESET_STREAMS, &u, (socklen_t)(sizeof(u.r) + n * sizeof(uint16_t)));
}

void rtc_sctp_input(struct rtc_peer *p, const uint8_t *buf, size_t len)
{
	if (__builtin_expect(!p->sock, 0))
		return;
	p->rtc->busy_until = rtc_now_ms() + REMOLO_RTC_BUSY_MS;
	usrsctp_conninput(p, buf, len, 0);
	// What the callbacks asked for, now that usrsctp is no longer inside them.
	if (p->ack_sid >= 0 && !p->end_state)
		send_ack(p);
	if (p->refuse && !p->end_state)
		reset_refused(p);
}

void rtc_sctp_close(struct rtc_peer *p)
{
	if (p->sock) {
		usrsctp_close(p->sock);   // SO_LINGER 0: an ABORT now, nothing left behind
		p->sock = NULL;
		p->rtc->st.sctp_live--;
	}
	if (p->sctp_registered) {
		usrsctp_deregister_address(p);
		p->sctp_registered = 0;
	}
	p->associated = 0;
}
