/* SPDX-License-Identifier: MIT */
/*
 * The phone page's side of the data channel, for datachannel.frame_to_open_us
 * and rtc.message_cpu_ns: what a browser sends the endpoint (remolo_rtc.h)
 * on its happy path, made by hand on a connected UDP socket:
 *
 *   - a STUN Binding request (RFC 8489) with the answer's credentials:
 *     USERNAME "theirs:ours", MESSAGE-INTEGRITY keyed by the answer's
 *     pwd, FINGERPRINT (RFC 8445 section 7.2.2);
 *   - an OpenSSL DTLS 1.2 client with a fresh self-signed certificate,
 *     whose SHA-256 is the offer's fingerprint (a=setup:active);
 *   - SCTP over it (RFC 8261): INIT, COOKIE-ECHO, then DATA chunks with
 *     CRC32c (RFC 9260), SACKs for what the endpoint sends, HEARTBEAT-ACKs;
 *   - DCEP (RFC 8832): DATA_CHANNEL_OPEN for an unordered channel with no
 *     retransmissions on stream 0 (the DTLS client's streams are even),
 *     then each message one unordered DATA chunk with PPID 53 (binary).
 *
 * Why SCTP by hand and not usrsctp: usrsctp is one stack per process, and
 * the endpoint under measurement runs in Bench's process and owns it (its
 * output callback, its timers driven by the endpoint thread; sctp.c lets
 * one owner at a time). A second association in that stack would share the
 * endpoint's callback and timers, so the endpoint's cost could not be told
 * from the client's. A separate client program would need a second binary
 * that SwiftPM does not build beside Bench. The client's part is small: it
 * never loses a packet (loopback), so it needs no retransmission,
 * congestion control or FORWARD-TSN; the endpoint's side is the real
 * usrsctp, DTLS and DCEP the browsers meet.
 *
 * The endpoint connects too (sctp.c, both ends send INIT): its INIT is
 * ignored here, and its INIT ACK answers ours (RFC 9260 section 5.2.1, an
 * INIT in COOKIE-WAIT), so our COOKIE ECHO sets the association up.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "bench_support.h"

enum {
	MAX_PACKET = 1500,
	DTLS_MTU = 1200,              /* as the endpoint's REMOLO_RTC_DTLS_MTU */
	SCTP_PORT = 5000,             /* RFC 8841, a=sctp-port */
	SCTP_STREAMS = 16,
	SCTP_RWND = 65536,
	SCTP_COMMON_LEN = 12, SCTP_CHUNK_LEN = 4, SCTP_DATA_LEN = 16, SCTP_INIT_LEN = 20, SCTP_SACK_LEN = 16,
	CHUNK_DATA = 0, CHUNK_INIT = 1, CHUNK_INIT_ACK = 2, CHUNK_SACK = 3, CHUNK_HEARTBEAT = 4,
	CHUNK_HEARTBEAT_ACK = 5, CHUNK_ABORT = 6, CHUNK_COOKIE_ECHO = 10, CHUNK_COOKIE_ACK = 11,
	DATA_U = 0x04, DATA_B = 0x02, DATA_E = 0x01,   /* RFC 9260 section 3.3.1 */
	PARAM_STATE_COOKIE = 7, PARAM_FORWARD_TSN = 0xC000,   /* RFC 3758: the browsers offer PR-SCTP */
	PPID_DCEP = 50, PPID_BINARY = 53,
	DCEP_OPEN = 0x03, DCEP_ACK = 0x02,
	DCEP_UNRELIABLE_UNORDERED = 0x81,   /* partial reliable rexmit (0 retransmissions), unordered */
	STUN_MAGIC = 0x2112A442, STUN_FINGERPRINT_XOR = 0x5354554e,
	STEP_TIMEOUT_MS = 5000,
};

struct bench_rtc_client {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	EVP_PKEY *key;
	X509 *cert;
	char ufrag[BENCH_RTC_UFRAG_LEN + 1], pwd[BENCH_RTC_PWD_LEN + 1];
	uint32_t my_tag, peer_tag, next_tsn, peer_cum_tsn;
	int have_peer_tsn, established, channel_acked;
	uint8_t pkt[MAX_PACKET];
};

static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) << 16 | rd16(p + 2); }

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* CRC-32 (reflected polynomial 0xEDB88320, as zlib): STUN's FINGERPRINT. */
static uint32_t crc32_iso(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xEDB88320u & -(c & 1));
	}
	return ~c;
}

/* CRC32c (Castagnoli, reflected 0x82F63B78): SCTP's checksum (RFC 9260
 * appendix B), stored least significant byte first. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0x82F63B78u & -(c & 1));
	}
	return ~c;
}

static int random_chars(char *out, size_t n)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t r[64];
	if (n > sizeof(r) || RAND_bytes(r, (int)n) != 1)
		return -EIO;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[r[i] & 63];
	out[n] = 0;
	return 0;
}

static int make_certificate(struct bench_rtc_client *c, uint8_t fingerprint[32])
{
	unsigned len = 32;
	c->key = EVP_EC_gen("P-256");
	c->cert = X509_new();
	if (!c->key || !c->cert)
		return -ENOMEM;
	X509_set_version(c->cert, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c->cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(c->cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(c->cert), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(c->cert), "CN", MBSTRING_ASC, (const unsigned char *)"bench", -1, -1, 0);
	X509_set_issuer_name(c->cert, X509_get_subject_name(c->cert));
	X509_set_pubkey(c->cert, c->key);
	if (!X509_sign(c->cert, c->key, EVP_sha256()) || !X509_digest(c->cert, EVP_sha256(), fingerprint, &len) || len != 32)
		return -EIO;
	return 0;
}

struct bench_rtc_client *bench_rtc_client_new(char ufrag[BENCH_RTC_UFRAG_LEN + 1], char pwd[BENCH_RTC_PWD_LEN + 1],
                                              uint8_t fingerprint[32])
{
	struct bench_rtc_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	if (random_chars(c->ufrag, BENCH_RTC_UFRAG_LEN) || random_chars(c->pwd, BENCH_RTC_PWD_LEN) ||
	    make_certificate(c, fingerprint)) {
		bench_rtc_client_free(c);
		return NULL;
	}
	memcpy(ufrag, c->ufrag, sizeof(c->ufrag));
	memcpy(pwd, c->pwd, sizeof(c->pwd));
	return c;
}

void bench_rtc_client_free(struct bench_rtc_client *c)
{
	if (!c)
		return;
	if (c->ssl)
		SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	X509_free(c->cert);
	EVP_PKEY_free(c->key);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* Waits up to ms for the socket to be readable: 1, 0 on timeout, -errno. */
static int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, ms < 0 ? 0 : ms);
	return r < 0 ? -errno : r;
}

/* A Binding request as a browser's check, until its success response. */
static int stun_check(struct bench_rtc_client *c, const char *their_ufrag, const char *their_pwd)
{
	uint8_t m[256], txid[12];
	char user[2 * 256 + 2];
	size_t at = 20;
	unsigned maclen = 20;
	int n = snprintf(user, sizeof(user), "%s:%s", their_ufrag, c->ufrag);

	if (n <= 0 || (size_t)n >= sizeof(user) || n > 160 || RAND_bytes(txid, sizeof(txid)) != 1)
		return -EINVAL;
	wr16(m + at, 0x0006);   /* USERNAME */
	wr16(m + at + 2, (uint16_t)n);
	memcpy(m + at + 4, user, (size_t)n);
	at += 4 + (size_t)n;
	while (at % 4)
		m[at++] = 0;
	wr16(m + at, 0x0025);   /* USE-CANDIDATE: a controlling agent nominates (RFC 8445 section 7.1.2) */
	wr16(m + at + 2, 0);
	at += 4;
	/* MESSAGE-INTEGRITY over the header with the length up to and including it (RFC 8489 section 14.5). */
	wr16(m, 0x0001);
	wr16(m + 2, (uint16_t)(at + 24 - 20));
	wr32(m + 4, STUN_MAGIC);
	memcpy(m + 8, txid, sizeof(txid));
	wr16(m + at, 0x0008);
	wr16(m + at + 2, 20);
	if (!HMAC(EVP_sha1(), their_pwd, (int)strlen(their_pwd), m, at, m + at + 4, &maclen))
		return -EIO;
	at += 24;
	wr16(m + 2, (uint16_t)(at + 8 - 20));
	wr16(m + at, 0x8028);   /* FINGERPRINT, last */
	wr16(m + at + 2, 4);
	wr32(m + at + 4, crc32_iso(m, at) ^ STUN_FINGERPRINT_XOR);
	at += 8;
	for (int tries = 0; tries < 10; tries++) {
		if (send(c->fd, m, at, 0) < 0)
			return -errno;
		int64_t deadline = now_ms() + 500;
		while (wait_readable(c->fd, (int)(deadline - now_ms())) > 0) {
			uint8_t r[MAX_PACKET];
			ssize_t got = recv(c->fd, r, sizeof(r), 0);
			if (got >= 20 && rd16(r) == 0x0101 && !memcmp(r + 8, txid, sizeof(txid)))
				return 0;
		}
	}
	return -ETIMEDOUT;
}

static int dtls_handshake(struct bench_rtc_client *c, const struct sockaddr_in *to)
{
	int64_t deadline = now_ms() + STEP_TIMEOUT_MS;
	BIO *b;

	c->ctx = SSL_CTX_new(DTLS_client_method());
	if (!c->ctx || SSL_CTX_use_certificate(c->ctx, c->cert) != 1 || SSL_CTX_use_PrivateKey(c->ctx, c->key) != 1 ||
	    SSL_CTX_set_max_proto_version(c->ctx, DTLS1_2_VERSION) != 1)
		return -EIO;
	SSL_CTX_set_options(c->ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
	/* The endpoint's certificate is checked by its fingerprint in the answer: not here (a bench). */
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
	if (!(c->ssl = SSL_new(c->ctx)) || !(b = BIO_new_dgram(c->fd, BIO_NOCLOSE)))
		return -ENOMEM;
	/* The socket is connected: the BIO must know, or it sends to no address. */
	BIO_ADDR *peer = BIO_ADDR_new();
	if (!peer || !BIO_ADDR_rawmake(peer, AF_INET, &to->sin_addr, sizeof(to->sin_addr), to->sin_port)) {
		BIO_ADDR_free(peer);
		BIO_free(b);
		return -ENOMEM;
	}
	BIO_ctrl(b, BIO_CTRL_DGRAM_SET_CONNECTED, 0, peer);
	BIO_ADDR_free(peer);
	SSL_set_bio(c->ssl, b, b);
	SSL_set_mtu(c->ssl, DTLS_MTU);
	SSL_set_connect_state(c->ssl);
	while (1) {
		int r = SSL_do_handshake(c->ssl);
		if (r == 1)
			return 0;
		if (SSL_get_error(c->ssl, r) != SSL_ERROR_WANT_READ || now_ms() > deadline)
			return -EPROTO;
		struct timeval tv;
		int ms = DTLSv1_get_timeout(c->ssl, &tv) == 1 ? (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000) : 100;
		if (wait_readable(c->fd, ms) == 0)
			DTLSv1_handle_timeout(c->ssl);
	}
}

/* Seals one SCTP packet of the given chunks (already laid out after the
 * common header in c->pkt) as one DTLS record. */
static int sctp_send(struct bench_rtc_client *c, uint32_t vtag, size_t len)
{
	uint32_t crc;

	wr16(c->pkt, SCTP_PORT);
	wr16(c->pkt + 2, SCTP_PORT);
	wr32(c->pkt + 4, vtag);
	memset(c->pkt + 8, 0, 4);
	crc = crc32c(c->pkt, len);
	c->pkt[8] = (uint8_t)crc;
	c->pkt[9] = (uint8_t)(crc >> 8);
	c->pkt[10] = (uint8_t)(crc >> 16);
	c->pkt[11] = (uint8_t)(crc >> 24);
	return SSL_write(c->ssl, c->pkt, (int)len) == (int)len ? 0 : -EIO;
}

static size_t chunk(uint8_t *at, uint8_t type, uint8_t flags, const uint8_t *value, size_t n)
{
	at[0] = type;
	at[1] = flags;
	wr16(at + 2, (uint16_t)(SCTP_CHUNK_LEN + n));
	if (value)
		memcpy(at + 4, value, n);
	size_t padded = SCTP_CHUNK_LEN + n;
	while (padded % 4)
		at[padded++] = 0;
	return padded;
}

static int send_data(struct bench_rtc_client *c, uint8_t flags, uint32_t ppid, const uint8_t *msg, size_t n)
{
	uint8_t *d = c->pkt + SCTP_COMMON_LEN;

	if (SCTP_COMMON_LEN + SCTP_DATA_LEN + n + 3 > sizeof(c->pkt))
		return -EMSGSIZE;
	d[0] = CHUNK_DATA;
	d[1] = flags;
	wr16(d + 2, (uint16_t)(SCTP_DATA_LEN + n));
	wr32(d + 4, c->next_tsn++);
	wr16(d + 8, 0);    /* stream 0 */
	wr16(d + 10, 0);   /* SSN: the open is the stream's first ordered message; unordered ones ignore it */
	wr32(d + 12, ppid);
	memcpy(d + SCTP_DATA_LEN, msg, n);
	size_t len = SCTP_DATA_LEN + n;
	while (len % 4)
		d[len++] = 0;
	return sctp_send(c, c->peer_tag, SCTP_COMMON_LEN + len);
}

static int send_sack(struct bench_rtc_client *c)
{
	uint8_t v[SCTP_SACK_LEN - SCTP_CHUNK_LEN] = { 0 };
	wr32(v, c->peer_cum_tsn);
	wr32(v + 4, SCTP_RWND);
	return sctp_send(c, c->peer_tag, SCTP_COMMON_LEN + chunk(c->pkt + SCTP_COMMON_LEN, CHUNK_SACK, 0, v, sizeof(v)));
}

static int send_init(struct bench_rtc_client *c)
{
	uint8_t v[SCTP_INIT_LEN - SCTP_CHUNK_LEN + 4];
	wr32(v, c->my_tag);
	wr32(v + 4, SCTP_RWND);
	wr16(v + 8, SCTP_STREAMS);
	wr16(v + 10, SCTP_STREAMS);
	wr32(v + 12, c->next_tsn);
	wr16(v + 16, PARAM_FORWARD_TSN);
	wr16(v + 18, 4);
	return sctp_send(c, 0, SCTP_COMMON_LEN + chunk(c->pkt + SCTP_COMMON_LEN, CHUNK_INIT, 0, v, sizeof(v)));
}

/* Reads what the endpoint sent and answers it: INIT ACK with a COOKIE ECHO,
 * DATA with a SACK (its DATA_CHANNEL_ACK), HEARTBEAT with its ACK. */
static int sctp_read(struct bench_rtc_client *c, int wait_ms)
{
	uint8_t in[MAX_PACKET];
	int r;

	if ((r = wait_readable(c->fd, wait_ms)) <= 0)
		return r;
	int n = SSL_read(c->ssl, in, sizeof(in));
	if (n <= 0) {
		int e = SSL_get_error(c->ssl, n);
		return e == SSL_ERROR_WANT_READ ? 0 : -EPROTO;
	}
	if (n < SCTP_COMMON_LEN)
		return 0;
	int need_sack = 0;
	for (size_t at = SCTP_COMMON_LEN; at + SCTP_CHUNK_LEN <= (size_t)n;) {
		uint8_t type = in[at];
		size_t len = rd16(in + at + 2);
		if (len < SCTP_CHUNK_LEN || at + len > (size_t)n)
			break;
		const uint8_t *v = in + at + SCTP_CHUNK_LEN;
		size_t vlen = len - SCTP_CHUNK_LEN;
		switch (type) {
		case CHUNK_INIT_ACK:
			if (c->established || vlen < SCTP_INIT_LEN - SCTP_CHUNK_LEN)
				break;
			c->peer_tag = rd32(v);
			c->peer_cum_tsn = rd32(v + 12) - 1;
			c->have_peer_tsn = 1;
			for (size_t p = SCTP_INIT_LEN - SCTP_CHUNK_LEN; p + 4 <= vlen;) {
				size_t plen = rd16(v + p + 2);
				if (plen < 4 || p + plen > vlen)
					break;
				if (rd16(v + p) == PARAM_STATE_COOKIE) {
					if (SCTP_COMMON_LEN + SCTP_CHUNK_LEN + plen > sizeof(c->pkt))
						return -EMSGSIZE;
					if ((r = sctp_send(c, c->peer_tag, SCTP_COMMON_LEN +
					                   chunk(c->pkt + SCTP_COMMON_LEN, CHUNK_COOKIE_ECHO, 0, v + p + 4, plen - 4))))
						return r;
				}
				p += (plen + 3) & ~(size_t)3;
			}
			break;
		case CHUNK_COOKIE_ACK:
			c->established = 1;
			break;
		case CHUNK_DATA:
			if (vlen >= SCTP_DATA_LEN - SCTP_CHUNK_LEN && c->have_peer_tsn) {
				uint32_t tsn = rd32(v);
				if (tsn == c->peer_cum_tsn + 1)
					c->peer_cum_tsn = tsn;
				if (rd32(v + 8) == PPID_DCEP && vlen > 12 && v[12] == DCEP_ACK)
					c->channel_acked = 1;
				need_sack = 1;
			}
			break;
		case CHUNK_HEARTBEAT:
			if (c->established && SCTP_COMMON_LEN + len <= sizeof(c->pkt) &&
			    (r = sctp_send(c, c->peer_tag, SCTP_COMMON_LEN +
			                   chunk(c->pkt + SCTP_COMMON_LEN, CHUNK_HEARTBEAT_ACK, 0, v, vlen))))
				return r;
			break;
		case CHUNK_ABORT:
			return -ECONNRESET;
		default:   /* SACKs of our DATA, the endpoint's own INIT */
			break;
		}
		at += (len + 3) & ~(size_t)3;
	}
	if (need_sack && (r = send_sack(c)))
		return r;
	return 1;
}

int bench_rtc_client_connect(struct bench_rtc_client *c, uint16_t port, const char *their_ufrag, const char *their_pwd)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t r[4];
	int rc;

	if ((c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	if ((rc = stun_check(c, their_ufrag, their_pwd)) || (rc = dtls_handshake(c, &to)))
		return rc;
	if (RAND_bytes(r, sizeof(r)) != 1)
		return -EIO;
	c->my_tag = rd32(r) | 1;   /* never 0 (RFC 9260 section 5.1) */
	c->next_tsn = c->my_tag ^ 0x5A5A5A5Au;
	int64_t deadline = now_ms() + STEP_TIMEOUT_MS, next_init = 0;
	while (!c->established) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		if (now_ms() >= next_init) {
			if ((rc = send_init(c)))
				return rc;
			next_init = now_ms() + 1000;
		}
		if ((rc = sctp_read(c, 50)) < 0)
			return rc;
	}
	static const char label[] = "remolo";
	uint8_t open[12 + sizeof(label) - 1] = { DCEP_OPEN, DCEP_UNRELIABLE_UNORDERED };
	wr16(open + 8, sizeof(label) - 1);
	memcpy(open + 12, label, sizeof(label) - 1);
	/* RFC 8832 section 6: DCEP messages are ordered and reliable. */
	if ((rc = send_data(c, DATA_B | DATA_E, PPID_DCEP, open, sizeof(open))))
		return rc;
	while (!c->channel_acked) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		if ((rc = sctp_read(c, 50)) < 0)
			return rc;
	}
	return 0;
}

int bench_rtc_client_send(struct bench_rtc_client *c, const uint8_t *msg, size_t len)
{
	return send_data(c, DATA_U | DATA_B | DATA_E, PPID_BINARY, msg, len);
}

int bench_rtc_client_poll(struct bench_rtc_client *c)
{
	int r;
	while ((r = sctp_read(c, 0)) > 0)
		;
	return r;
}
