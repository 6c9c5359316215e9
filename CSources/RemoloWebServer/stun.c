// STUN Binding for ICE-lite (RFC 8489, RFC 8445 section 2.5). Strict
// where laxness would cost: lengths must match the datagram exactly,
// attributes must fit, the FINGERPRINT must be last and right, and
// MESSAGE-INTEGRITY is checked in constant time. Nothing after
// MESSAGE-INTEGRITY but FINGERPRINT is accepted (section 14.5 says to
// ignore such attributes; a check has no reason to send any).
#include "stun.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t stun_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	pthread_once(&crc_once, crc_init);
	for (size_t i = 0; i < n; i++)
		c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

static EVP_MAC *hmac_method;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static void hmac_fetch(void) { hmac_method = EVP_MAC_fetch(NULL, "HMAC", NULL); }

// HMAC-SHA1 over p[0..at) as if the header's length ended the message at
// at + 24 (RFC 8489 section 14.5: the length counts MESSAGE-INTEGRITY).
static int integrity(const uint8_t *p, size_t at, const char *pwd, size_t pwd_len, uint8_t mac[STUN_INTEGRITY_LEN])
{
	uint8_t head[STUN_HEADER_LEN];
	size_t out_len = 0;
	int rc = -ENOMEM;

	pthread_once(&hmac_once, hmac_fetch);
	memcpy(head, p, sizeof(head));
	wr16(head + 2, (uint16_t)(at + 24 - STUN_HEADER_LEN));
	EVP_MAC_CTX *ctx = hmac_method ? EVP_MAC_CTX_new(hmac_method) : NULL;
	OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA1", 0), OSSL_PARAM_construct_end() };
	if (!ctx || !EVP_MAC_init(ctx, (const unsigned char *)pwd, pwd_len, params) ||
	    !EVP_MAC_update(ctx, head, sizeof(head)) || !EVP_MAC_update(ctx, p + STUN_HEADER_LEN, at - STUN_HEADER_LEN) ||
	    !EVP_MAC_final(ctx, mac, &out_len, STUN_INTEGRITY_LEN) || out_len != STUN_INTEGRITY_LEN)
		goto out;
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	return rc;
}

int stun_parse(const uint8_t *p, size_t n, struct stun_request *out)
{
	memset(out, 0, sizeof(*out));
	// Section 5: the two top bits zero, the length a multiple of 4 and
	// exactly what follows the header, the magic cookie.
	if (__builtin_expect(n < STUN_HEADER_LEN || n > 0xFFFF + STUN_HEADER_LEN, 0))
		return -EBADMSG;
	if (__builtin_expect(rd16(p) != STUN_BINDING_REQUEST || rd32(p + 4) != STUN_MAGIC, 0))
		return -EBADMSG;
	size_t len = rd16(p + 2);
	if (__builtin_expect(len % 4 || len + STUN_HEADER_LEN != n, 0))
		return -EBADMSG;
	memcpy(out->txid, p + 8, STUN_TXID_LEN);

	int have_integrity = 0, have_fingerprint = 0;
	size_t at = STUN_HEADER_LEN;
	while (at < n) {
		if (__builtin_expect(n - at < 4 || have_fingerprint, 0))
			return -EBADMSG;   // a partial attribute, or anything after FINGERPRINT
		uint16_t type = rd16(p + at), alen = rd16(p + at + 2);
		size_t padded = ((size_t)alen + 3) & ~(size_t)3;
		if (__builtin_expect(padded > n - at - 4, 0))
			return -EBADMSG;
		const uint8_t *v = p + at + 4;
		if (have_integrity && type != STUN_ATTR_FINGERPRINT)
			return -EBADMSG;
		switch (type) {
		case STUN_ATTR_USERNAME:
			if (__builtin_expect(out->username || alen == 0 || alen > STUN_MAX_USERNAME, 0))
				return -EBADMSG;
			out->username = v;
			out->username_len = alen;
			break;
		case STUN_ATTR_MESSAGE_INTEGRITY:
			if (__builtin_expect(alen != STUN_INTEGRITY_LEN, 0))
				return -EBADMSG;
			have_integrity = 1;
			out->integrity_at = at;
			break;
		case STUN_ATTR_FINGERPRINT:
			// Section 14.7: CRC-32 of everything before it, the header's
			// length already counting it, xor 0x5354554e.
			if (__builtin_expect(alen != 4 || at + 8 != n, 0))
				return -EBADMSG;
			if (__builtin_expect((stun_crc32(p, at) ^ STUN_FINGERPRINT_XOR) != rd32(v), 0))
				return -EBADMSG;
			have_fingerprint = 1;
			break;
		case STUN_ATTR_USE_CANDIDATE:
			out->use_candidate = 1;
			break;
		case STUN_ATTR_PRIORITY:
		case STUN_ATTR_ICE_CONTROLLED:
		case STUN_ATTR_ICE_CONTROLLING:
			// ICE-lite is always controlled and keeps no candidate
			// pairs of its own to prioritise (RFC 8445 section 7.3).
			break;
		default:
			// Section 14: 0x0000..0x7FFF must be understood. A check
			// we cannot understand is dropped rather than answered
			// with 420, which would tell strangers what we parse.
			if (__builtin_expect(type < 0x8000, 0))
				return -EBADMSG;
			break;
		}
		at += 4 + padded;
	}
	if (__builtin_expect(!out->username || !have_integrity || !have_fingerprint, 0))
		return -EBADMSG;
	return 0;
}

int stun_verify(const uint8_t *p, size_t n, const struct stun_request *req, const char *pwd, size_t pwd_len)
{
	uint8_t mac[STUN_INTEGRITY_LEN];

	if (req->integrity_at < STUN_HEADER_LEN || req->integrity_at + 24 > n)
		return -EACCES;
	if (integrity(p, req->integrity_at, pwd, pwd_len, mac) != 0)
		return -EACCES;
	int bad = CRYPTO_memcmp(mac, p + req->integrity_at + 4, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	return bad ? -EACCES : 0;
}

int stun_success(uint8_t *out, size_t cap, const struct stun_request *req, const struct sockaddr *from,
                 const char *pwd, size_t pwd_len)
{
	size_t at = STUN_HEADER_LEN;
	uint8_t mac[STUN_INTEGRITY_LEN];

	if (cap < STUN_MAX_RESPONSE)
		return -ENOSPC;
	wr16(out, STUN_BINDING_SUCCESS);
	wr32(out + 4, STUN_MAGIC);
	memcpy(out + 8, req->txid, STUN_TXID_LEN);
	// XOR-MAPPED-ADDRESS (section 14.2): the port xor the cookie's top
	// half, the address xor the cookie (and, for IPv6, the transaction id).
	wr16(out + at, STUN_ATTR_XOR_MAPPED_ADDRESS);
	if (from->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)from;
		wr16(out + at + 2, 8);
		wr16(out + at + 4, 0x0001);
		wr16(out + at + 6, (uint16_t)(ntohs(a->sin_port) ^ (STUN_MAGIC >> 16)));
		wr32(out + at + 8, ntohl(a->sin_addr.s_addr) ^ STUN_MAGIC);
		at += 12;
	} else if (from->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)from;
		wr16(out + at + 2, 20);
		wr16(out + at + 4, 0x0002);
		wr16(out + at + 6, (uint16_t)(ntohs(a->sin6_port) ^ (STUN_MAGIC >> 16)));
		for (int i = 0; i < 16; i++)
			out[at + 8 + i] = a->sin6_addr.s6_addr[i] ^ out[4 + i];   // cookie then txid: bytes 4..19
		at += 24;
	} else {
		return -EAFNOSUPPORT;
	}
	wr16(out + 2, (uint16_t)(at - STUN_HEADER_LEN));
	if (integrity(out, at, pwd, pwd_len, mac) != 0)
		return -ENOMEM;
	wr16(out + at, STUN_ATTR_MESSAGE_INTEGRITY);
	wr16(out + at + 2, STUN_INTEGRITY_LEN);
	memcpy(out + at + 4, mac, sizeof(mac));
	OPENSSL_cleanse(mac, sizeof(mac));
	at += 24;
	wr16(out + 2, (uint16_t)(at + 8 - STUN_HEADER_LEN));
	wr16(out + at, STUN_ATTR_FINGERPRINT);
	wr16(out + at + 2, 4);
	wr32(out + at + 4, stun_crc32(out, at) ^ STUN_FINGERPRINT_XOR);
	at += 8;
	return (int)at;
}
