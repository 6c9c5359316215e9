// DCEP (RFC 8832). The endpoint takes one channel per association; what
// a channel is used for is the page's business, so any label and
// protocol is accepted, and the relay judges each message by itself.
#include "dcep.h"

#include <errno.h>
#include <string.h>

int dcep_parse_open(const uint8_t *p, size_t n, struct dcep_open *out)
{
	memset(out, 0, sizeof(*out));
	if (__builtin_expect(n < DCEP_OPEN_HEADER_LEN || p[0] != DCEP_MSG_OPEN, 0))
		return -EBADMSG;
	out->channel_type = p[1];
	switch (out->channel_type & ~DCEP_CHANNEL_UNORDERED) {
	case DCEP_CHANNEL_RELIABLE:
	case DCEP_CHANNEL_PARTIAL_RELIABLE_REXMIT:
	case DCEP_CHANNEL_PARTIAL_RELIABLE_TIMED:
		break;
	default:
		return -EBADMSG;   // section 8.2.2: no other type is registered
	}
	out->priority = (uint16_t)(p[2] << 8 | p[3]);
	out->reliability = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
	out->label_len = (uint16_t)(p[8] << 8 | p[9]);
	out->protocol_len = (uint16_t)(p[10] << 8 | p[11]);
	// Section 5.1: the label and protocol are all that follows, unpadded.
	if (__builtin_expect((size_t)out->label_len + out->protocol_len != n - DCEP_OPEN_HEADER_LEN, 0))
		return -EBADMSG;
	out->label = p + DCEP_OPEN_HEADER_LEN;
	out->protocol = out->label + out->label_len;
	return 0;
}

size_t dcep_ack(uint8_t out[DCEP_ACK_LEN])
{
	out[0] = DCEP_MSG_ACK;
	return DCEP_ACK_LEN;
}
