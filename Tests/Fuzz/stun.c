/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the data-channel endpoint's STUN (stun.h), built
 * and run by Tests/Fuzz/run under ASan and UBSan. Network bytes reach
 * stun_parse and stun_verify before anything else of the endpoint. Besides
 * crashes it checks, and aborts when one breaks:
 *  - raw input: an accepted request is a Binding request whose length is
 *    the datagram's, whose USERNAME and MESSAGE-INTEGRITY lie inside it,
 *    and whose FINGERPRINT (the last 8 bytes) is right; verification with
 *    the test password agrees with an HMAC computed here, and a one-bit
 *    flip anywhere before the FINGERPRINT is refused by the parser or the
 *    verifier;
 *  - the response built for an accepted, verified request is a Binding
 *    success for the same transaction, every attribute inside it, its
 *    MESSAGE-INTEGRITY verifying with the password, its FINGERPRINT right,
 *    and its XOR-MAPPED-ADDRESS giving back the address it was made for;
 *  - the input as a recipe (a username, a transaction id, optional
 *    attributes): the request sealed here with the test password parses
 *    and verifies, and does not verify with another password.
 * Seeds: Tests/Fuzz/corpus/stun/ (Tests/Fuzz/make_corpus_stun.py).
 */
// fuzz-sources: CSources/RemoloWebServer/stun.c
// fuzz-includes: CSources/RemoloWebServer
// fuzz-libs: -lcrypto
// fuzz-options: -max_len=1500
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "stun.h"

#define CHECK(x) do { if (!(x)) abort(); } while (0)

static const char pwd[] = "fuzzPasswordFuzzPassword";   // the corpus's requests are sealed with it
enum { PWD_LEN = sizeof(pwd) - 1 };

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) << 16 | rd16(p + 2); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }

/* HMAC-SHA1 as RFC 8489 section 14.5 says, computed independently (HMAC()). */
static void mac_of(const uint8_t *p, size_t at, const char *key, size_t key_len, uint8_t out[20])
{
	uint8_t *copy = malloc(at);
	unsigned int len = 0;

	memcpy(copy, p, at);
	wr16(copy + 2, (uint16_t)(at + 24 - STUN_HEADER_LEN));
	HMAC(EVP_sha1(), key, (int)key_len, copy, at, out, &len);
	CHECK(len == 20);
	free(copy);
}

static void check_response(const uint8_t *r, int len, const struct stun_request *req, const struct sockaddr *to)
{
	CHECK(len >= STUN_HEADER_LEN && len <= STUN_MAX_RESPONSE);
	CHECK(rd16(r) == STUN_BINDING_SUCCESS && rd16(r + 2) == len - STUN_HEADER_LEN && rd32(r + 4) == STUN_MAGIC);
	CHECK(!memcmp(r + 8, req->txid, STUN_TXID_LEN));
	size_t at = STUN_HEADER_LEN, mi = 0, fp = 0;
	int mapped = 0;
	while (at < (size_t)len) {
		CHECK(at + 4 <= (size_t)len);
		uint16_t type = rd16(r + at), n = rd16(r + at + 2);
		CHECK(at + 4 + n <= (size_t)len && n % 4 == 0);
		if (type == STUN_ATTR_XOR_MAPPED_ADDRESS) {
			if (to->sa_family == AF_INET) {
				const struct sockaddr_in *a = (const void *)to;
				CHECK(n == 8 && rd16(r + at + 4) == 1);
				CHECK((rd16(r + at + 6) ^ (STUN_MAGIC >> 16)) == ntohs(a->sin_port));
				CHECK((rd32(r + at + 8) ^ STUN_MAGIC) == ntohl(a->sin_addr.s_addr));
			} else {
				const struct sockaddr_in6 *a = (const void *)to;
				CHECK(n == 20 && rd16(r + at + 4) == 2);
				for (int i = 0; i < 16; i++)
					CHECK((r[at + 8 + i] ^ r[4 + i]) == a->sin6_addr.s6_addr[i]);
			}
			mapped = 1;
		} else if (type == STUN_ATTR_MESSAGE_INTEGRITY) {
			mi = at;
		} else if (type == STUN_ATTR_FINGERPRINT) {
			fp = at;
		}
		at += 4 + n;
	}
	CHECK(mapped && mi && fp + 8 == (size_t)len);
	uint8_t mac[20];
	mac_of(r, mi, pwd, PWD_LEN, mac);
	CHECK(!memcmp(mac, r + mi + 4, 20));
	CHECK((stun_crc32(r, fp) ^ STUN_FINGERPRINT_XOR) == rd32(r + fp + 4));
}

static void raw(const uint8_t *data, size_t size)
{
	struct stun_request req;

	if (stun_parse(data, size, &req) != 0)
		return;
	CHECK(rd16(data) == STUN_BINDING_REQUEST && (size_t)rd16(data + 2) + STUN_HEADER_LEN == size);
	CHECK(req.username > data && req.username + req.username_len <= data + size && req.username_len > 0);
	CHECK(req.integrity_at >= STUN_HEADER_LEN && req.integrity_at + 24 + 8 <= size);
	CHECK(rd16(data + size - 8) == STUN_ATTR_FINGERPRINT);
	CHECK((stun_crc32(data, size - 8) ^ STUN_FINGERPRINT_XOR) == rd32(data + size - 4));
	uint8_t mac[20];
	mac_of(data, req.integrity_at, pwd, PWD_LEN, mac);
	int ok = stun_verify(data, size, &req, pwd, PWD_LEN) == 0;
	CHECK(ok == !memcmp(mac, data + req.integrity_at + 4, 20));
	if (!ok)
		return;
	/* A few one-bit flips, chosen by the input: parse or verify refuses each. */
	uint8_t *copy = malloc(size);
	for (size_t k = 0; k < 4; k++) {
		size_t bit = (data[(k * 7) % size] * 131u + k * 977u) % ((size - 8) * 8);
		memcpy(copy, data, size);
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		struct stun_request r2;
		CHECK(stun_parse(copy, size, &r2) != 0 || stun_verify(copy, size, &r2, pwd, PWD_LEN) != 0);
	}
	free(copy);
	uint8_t out[STUN_MAX_RESPONSE];
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(data[8] << 8 | data[9])) };
	memcpy(&v4.sin_addr, data + 10, 4);
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(5000) };
	memcpy(&v6.sin6_addr, data + 4, 16);
	check_response(out, stun_success(out, sizeof(out), &req, (struct sockaddr *)&v4, pwd, PWD_LEN), &req, (struct sockaddr *)&v4);
	check_response(out, stun_success(out, sizeof(out), &req, (struct sockaddr *)&v6, pwd, PWD_LEN), &req, (struct sockaddr *)&v6);
	CHECK(stun_success(out, sizeof(out) - 1, &req, (struct sockaddr *)&v4, pwd, PWD_LEN) == -ENOSPC);
}

/* data = username length (1), username, txid (12), flags (1): a request sealed here. */
static void recipe(const uint8_t *data, size_t size)
{
	uint8_t m[STUN_HEADER_LEN + 4 + 256 + 4 + 8 + 4 + 24 + 8];
	size_t ulen = size ? data[0] : 0;

	if (size < 1 + ulen + STUN_TXID_LEN + 1 || ulen == 0)
		return;
	uint8_t flags = data[1 + ulen + STUN_TXID_LEN];
	wr16(m, STUN_BINDING_REQUEST);
	wr32(m + 4, STUN_MAGIC);
	memcpy(m + 8, data + 1 + ulen, STUN_TXID_LEN);
	size_t at = STUN_HEADER_LEN;
	wr16(m + at, STUN_ATTR_USERNAME);
	wr16(m + at + 2, (uint16_t)ulen);
	memcpy(m + at + 4, data + 1, ulen);
	memset(m + at + 4 + ulen, 0, (4 - ulen % 4) % 4);
	at += 4 + ((ulen + 3) & ~(size_t)3);
	if (flags & 1) {
		wr16(m + at, STUN_ATTR_USE_CANDIDATE);
		wr16(m + at + 2, 0);
		at += 4;
	}
	if (flags & 2) {
		wr16(m + at, STUN_ATTR_ICE_CONTROLLING);
		wr16(m + at + 2, 8);
		memset(m + at + 4, flags, 8);
		at += 12;
	}
	uint8_t mac[20];
	mac_of(m, at, pwd, PWD_LEN, mac);
	wr16(m + at, STUN_ATTR_MESSAGE_INTEGRITY);
	wr16(m + at + 2, 20);
	memcpy(m + at + 4, mac, 20);
	at += 24;
	wr16(m + 2, (uint16_t)(at + 8 - STUN_HEADER_LEN));
	wr16(m + at, STUN_ATTR_FINGERPRINT);
	wr16(m + at + 2, 4);
	wr32(m + at + 4, stun_crc32(m, at) ^ STUN_FINGERPRINT_XOR);
	at += 8;
	struct stun_request req;
	CHECK(stun_parse(m, at, &req) == 0);
	CHECK(req.username_len == ulen && !memcmp(req.username, data + 1, ulen) && req.use_candidate == (flags & 1));
	CHECK(stun_verify(m, at, &req, pwd, PWD_LEN) == 0);
	CHECK(stun_verify(m, at, &req, "fuzzPasswordFuzzPassworD", PWD_LEN) != 0);
	CHECK(stun_verify(m, at, &req, pwd, PWD_LEN - 1) != 0);
	raw(m, at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	raw(data, size);
	recipe(data, size);
	(void)stun_is(data, size);
	return 0;
}
