// STUN (RFC 8489) as an ICE-lite agent needs it (RFC 8445 section 2.5):
// parse a Binding request, verify its short-term credentials, build the
// success response. Nothing here allocates or touches a socket; the
// caller owns every buffer.
#ifndef REMOLO_STUN_H
#define REMOLO_STUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum {
    STUN_HEADER_LEN = 20,
    STUN_TXID_LEN = 12,
    STUN_MAGIC = 0x2112A442,               // RFC 8489 section 5
    STUN_FINGERPRINT_XOR = 0x5354554e,     // section 14.7
    STUN_BINDING_REQUEST = 0x0001, STUN_BINDING_SUCCESS = 0x0101,
    STUN_ATTR_USERNAME = 0x0006, STUN_ATTR_MESSAGE_INTEGRITY = 0x0008, STUN_ATTR_XOR_MAPPED_ADDRESS = 0x0020,
    STUN_ATTR_PRIORITY = 0x0024, STUN_ATTR_USE_CANDIDATE = 0x0025,           // RFC 8445 section 16.1
    STUN_ATTR_FINGERPRINT = 0x8028, STUN_ATTR_ICE_CONTROLLED = 0x8029, STUN_ATTR_ICE_CONTROLLING = 0x802A,
    STUN_INTEGRITY_LEN = 20,               // HMAC-SHA1
    STUN_MAX_USERNAME = 513,               // "ours:theirs", each at most 256 (RFC 8839 section 5.4)
    STUN_MAX_RESPONSE = STUN_HEADER_LEN + 24 + 24 + 8,   // XOR-MAPPED-ADDRESS (IPv6), MESSAGE-INTEGRITY, FINGERPRINT
};
_Static_assert(STUN_MAX_RESPONSE == 76, "response layout");

/// What a parsed Binding request says; pointers point into the packet.
struct stun_request {
    uint8_t txid[STUN_TXID_LEN];
    const uint8_t *username;
    size_t username_len;
    size_t integrity_at;       // offset of the MESSAGE-INTEGRITY attribute
    int use_candidate;
};

/// 1 when the first byte says STUN (RFC 7983 section 7: 0..3), else 0.
static inline int stun_is(const uint8_t *p, size_t n) { return n > 0 && p[0] < 4; }

/// Parses a Binding request carrying USERNAME, MESSAGE-INTEGRITY and a
/// valid FINGERPRINT last (RFC 8445 section 7.2.2 makes it mandatory for
/// checks). 0, or -EBADMSG (malformed, a response, an indication, an
/// unknown comprehension-required attribute, no credentials).
int stun_parse(const uint8_t *p, size_t n, struct stun_request *out);

/// 0 when the request's MESSAGE-INTEGRITY is HMAC-SHA1 keyed by pwd
/// (short-term credentials, RFC 8489 section 9.1), else -EACCES.
int stun_verify(const uint8_t *p, size_t n, const struct stun_request *req, const char *pwd, size_t pwd_len);

/// Writes the Binding success response to from (XOR-MAPPED-ADDRESS,
/// MESSAGE-INTEGRITY keyed by pwd, FINGERPRINT) into out; its length, or
/// -EAFNOSUPPORT, -ENOSPC.
int stun_success(uint8_t *out, size_t cap, const struct stun_request *req, const struct sockaddr *from,
                 const char *pwd, size_t pwd_len);

/// CRC-32 (ISO 3309, as zlib) of p.
uint32_t stun_crc32(const uint8_t *p, size_t n);

#endif
