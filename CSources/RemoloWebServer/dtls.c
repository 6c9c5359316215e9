// The endpoint's DTLS server (RFC 6347 through OpenSSL; RFC 8827 section
// 6.5 for WebRTC's use of it). One certificate for the endpoint's life,
// made in memory at start and never written anywhere: its fingerprint
// travels in the sealed session, which is what makes it trusted, so it
// needs no name, no authority and no file. Each peer gets its own SSL
// with a datagram BIO of our own making: one read hands over exactly the
// datagram being processed, one write sends exactly one datagram, so
// every flight fits REMOLO_RTC_DTLS_MTU and nothing is ever queued.
#include "rtc_internal.h"
#include "certutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

enum {
    DTLS_CERT_DAYS = 30,                   // the endpoint restarts far more often; browsers do not check it
};
_Static_assert(REMOLO_RTC_SCTP_MTU + 64 <= REMOLO_RTC_DTLS_MTU, "an SCTP packet fits one DTLS record in the MTU");

static int bio_write(BIO *b, const char *buf, int len)
{
	struct rtc_peer *p = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	// Best effort, like every UDP send (DTLS and SCTP retransmit): a
	// datagram the kernel refused is a datagram lost on the way.
	if (len > 0)
		(void)rtc_send(p, (const uint8_t *)buf, (size_t)len);
	return len;
}

static int bio_read(BIO *b, char *buf, int len)
{
	struct rtc_peer *p = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (!p->in || len <= 0) {
		BIO_set_retry_read(b);
		return -1;
	}
	size_t n = p->in_len < (size_t)len ? p->in_len : (size_t)len;
	memcpy(buf, p->in, n);
	p->in = NULL;
	return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_DGRAM_QUERY_MTU:
	case BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
		return REMOLO_RTC_DTLS_MTU;
	default:
		return 0;   // no pending bytes, no peer address, no MTU overhead to add
	}
}

static int bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

// Any certificate: WebRTC's are self-signed, and the one that matters is
// compared with the offer's fingerprint once the handshake is done.
static int accept_any(int preverify, X509_STORE_CTX *x) { return 1; }

static int make_certificate(SSL_CTX *ctx, uint8_t fingerprint[32])
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	unsigned int md_len = 0;
	int rc = -1;

	if (!key || !x || remolo_cert_serial(x) != 0)
		goto out;
	X509_set_version(x, 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600);
	X509_gmtime_adj(X509_getm_notAfter(x), (long)DTLS_CERT_DAYS * 24 * 3600);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *)"remolo", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (X509_sign(x, key, EVP_sha256()) == 0 || X509_digest(x, EVP_sha256(), fingerprint, &md_len) != 1 || md_len != 32)
		goto out;
	if (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		goto out;
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(key);   // the context holds its own reference; OpenSSL wipes the key when the last goes
	return rc;
}

int rtc_dtls_init(struct rtc_dtls *d, char *err, size_t err_len)
{
	memset(d, 0, sizeof(*d));
	d->ctx = SSL_CTX_new(DTLS_server_method());
	d->bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "remolo-rtc");
	if (!d->ctx || !d->bio)
		goto fail;
	BIO_meth_set_write(d->bio, bio_write);
	BIO_meth_set_read(d->bio, bio_read);
	BIO_meth_set_ctrl(d->bio, bio_ctrl);
	BIO_meth_set_create(d->bio, bio_create);
	// RFC 8827 section 6.5: DTLS 1.2 at least, ECDHE with AES-128-GCM
	// and ECDSA P-256 at least; no renegotiation, no tickets (one
	// handshake per registration).
	if (SSL_CTX_set_min_proto_version(d->ctx, DTLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_cipher_list(d->ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:"
	                                    "ECDHE-ECDSA-AES256-GCM-SHA384") != 1 ||
	    SSL_CTX_set1_groups_list(d->ctx, "X25519:P-256") != 1)
		goto fail;
	SSL_CTX_set_options(d->ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
	SSL_CTX_set_verify(d->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
	SSL_CTX_set_session_cache_mode(d->ctx, SSL_SESS_CACHE_OFF);
	if (make_certificate(d->ctx, d->fingerprint) != 0)
		goto fail;
	return 0;
fail:
	snprintf(err, err_len, "cannot set up DTLS: %s (OpenSSL 3 with DTLS 1.2 is needed)",
	         ERR_reason_error_string(ERR_peek_last_error()) ? ERR_reason_error_string(ERR_peek_last_error()) : "no reason given");
	ERR_clear_error();
	rtc_dtls_free(d);
	return -1;
}

void rtc_dtls_free(struct rtc_dtls *d)
{
	SSL_CTX_free(d->ctx);
	BIO_meth_free(d->bio);
	memset(d, 0, sizeof(*d));
}

static int start(struct rtc_peer *p)
{
	struct rtc_dtls *d = &p->rtc->dtls;
	BIO *b = BIO_new(d->bio);

	p->ssl = SSL_new(d->ctx);
	if (__builtin_expect(!p->ssl || !b, 0)) {
		BIO_free(b);
		SSL_free(p->ssl);
		p->ssl = NULL;
		return -ENOMEM;
	}
	BIO_set_data(b, p);
	SSL_set_bio(p->ssl, b, b);   // one BIO both ways: the SSL owns its one reference
	SSL_set_accept_state(p->ssl);
	SSL_set_mtu(p->ssl, REMOLO_RTC_DTLS_MTU);
	p->rtc->st.dtls_live++;
	return 0;
}

// RFC 8122 section 5: the certificate the browser used must be the one
// whose fingerprint its offer carried (and the session vouched for).
static int fingerprint_ok(struct rtc_peer *p)
{
	X509 *x = SSL_get1_peer_certificate(p->ssl);
	uint8_t md[32];
	unsigned int md_len = 0;
	int ok = x && X509_digest(x, EVP_sha256(), md, &md_len) == 1 && md_len == 32 &&
	         CRYPTO_memcmp(md, p->fingerprint, sizeof(md)) == 0;

	X509_free(x);
	return ok;
}

int rtc_dtls_input(struct rtc_peer *p, const uint8_t *buf, size_t len)
{
	uint8_t *plain = p->rtc->plain;
	int rc = 0;

	if (!p->ssl && (rc = start(p)) != 0)
		return rc;
	p->in = buf;
	p->in_len = len;
	if (!SSL_is_init_finished(p->ssl)) {
		int r = SSL_do_handshake(p->ssl);
		if (r != 1) {
			int e = SSL_get_error(p->ssl, r);
			rc = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -EPROTO;
			goto out;
		}
		if (__builtin_expect(!fingerprint_ok(p), 0)) {
			rc = -EPERM;
			goto out;
		}
		p->st.state = REMOLO_RTC_PEER_SCTP;
		if (rtc_sctp_open(p) != 0) {
			p->end_state = REMOLO_RTC_PEER_FAILED;
			p->end_reason = REMOLO_RTC_REASON_SCTP_FAILED;
			goto out;
		}
	}
	for (;;) {
		int n = SSL_read(p->ssl, plain, RTC_MAX_RECORD);
		if (n > 0) {
			rtc_sctp_input(p, plain, (size_t)n);
			if (p->end_state || !p->ssl)
				break;
			continue;
		}
		int e = SSL_get_error(p->ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			break;
		rc = e == SSL_ERROR_ZERO_RETURN ? -ECONNRESET : -EPROTO;   // close_notify, or a bad record
		break;
	}
out:
	if (p->ssl)
		p->in = NULL;
	ERR_clear_error();
	return rc;
}

int rtc_dtls_send(struct rtc_peer *p, const void *buf, size_t len)
{
	if (__builtin_expect(!p->ssl || !SSL_is_init_finished(p->ssl) || len > REMOLO_RTC_DTLS_MTU, 0))
		return -EIO;
	int n = SSL_write(p->ssl, buf, (int)len);
	ERR_clear_error();
	return n == (int)len ? 0 : -EIO;
}

int rtc_dtls_timeout_ms(struct rtc_peer *p)
{
	struct timeval tv;

	if (!p->ssl || SSL_is_init_finished(p->ssl) || DTLSv1_get_timeout(p->ssl, &tv) != 1)
		return -1;
	return (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

int rtc_dtls_timer(struct rtc_peer *p)
{
	int r = DTLSv1_handle_timeout(p->ssl);

	ERR_clear_error();
	return r < 0 ? -ETIMEDOUT : 0;
}

void rtc_dtls_close(struct rtc_peer *p)
{
	if (!p->ssl)
		return;
	if (SSL_is_init_finished(p->ssl))
		SSL_shutdown(p->ssl);   // close_notify, so the browser knows at once
	SSL_free(p->ssl);
	ERR_clear_error();
	p->ssl = NULL;
	p->in = NULL;
	p->rtc->st.dtls_live--;
}
