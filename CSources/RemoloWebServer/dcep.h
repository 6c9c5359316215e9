// The Data Channel Establishment Protocol (RFC 8832): the browser's
// DATA_CHANNEL_OPEN, our DATA_CHANNEL_ACK, and the SCTP payload protocol
// identifiers of data channels (RFC 8831 section 8).
#ifndef REMOLO_DCEP_H
#define REMOLO_DCEP_H

#include <stddef.h>
#include <stdint.h>

enum {
    DCEP_PPID_CONTROL = 50, DCEP_PPID_STRING = 51, DCEP_PPID_BINARY = 53,
    DCEP_PPID_STRING_EMPTY = 56, DCEP_PPID_BINARY_EMPTY = 57,
    DCEP_MSG_ACK = 0x02, DCEP_MSG_OPEN = 0x03,          // RFC 8832 section 8.2.1
    DCEP_OPEN_HEADER_LEN = 12,                          // section 5.1
    DCEP_ACK_LEN = 1,                                   // section 5.2
    // Channel types (section 8.2.2): bit 0x80 unordered, low bits the reliability.
    DCEP_CHANNEL_RELIABLE = 0x00, DCEP_CHANNEL_PARTIAL_RELIABLE_REXMIT = 0x01,
    DCEP_CHANNEL_PARTIAL_RELIABLE_TIMED = 0x02, DCEP_CHANNEL_UNORDERED = 0x80,
};

/// What a DATA_CHANNEL_OPEN says; label and protocol point into the message.
struct dcep_open {
    uint8_t channel_type;
    uint16_t priority;
    uint32_t reliability;
    const uint8_t *label, *protocol;
    uint16_t label_len, protocol_len;
};

/// Parses a DATA_CHANNEL_OPEN: a known channel type, label and protocol
/// filling the rest exactly. 0, or -EBADMSG.
int dcep_parse_open(const uint8_t *p, size_t n, struct dcep_open *out);

/// Writes DATA_CHANNEL_ACK; its length.
size_t dcep_ack(uint8_t out[DCEP_ACK_LEN]);

#endif
