// The web bridge's parsers of the bytes anyone on the LAN may send once
// TLS is up: one HTTP/1.1 request head (RFC 9112) and client WebSocket
// frames (RFC 6455 section 5). No I/O, no allocation: webserver.c feeds
// them what it read, Tests/Fuzz/web_bridge.c feeds them anything.
#ifndef REMOLO_WEBPARSE_H
#define REMOLO_WEBPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "remolo_web.h"

enum {
    REMOLO_WEB_MAX_METHOD = 15,       // longer is no method served here: 405
    REMOLO_WEB_MAX_TARGET = 511,      // a request target (path and query): 414 when longer
    REMOLO_WEB_DATAGRAM_LEN = 49,     // one sealed pointer datagram (remolo_wire.h WIRE_DATAGRAM_LEN)
    REMOLO_WEB_TOTALS_DATAGRAM_LEN = 65, // the redundant or the gesture layout (WIRE_TOTALS_DATAGRAM_LEN), feature bits 1, 3
    REMOLO_WEB_WS_KEY_LEN = 24,       // Sec-WebSocket-Key: 16 bytes in base64
    REMOLO_WEB_WS_MAX_CONTROL = 125,  // a control frame's payload (RFC 6455 section 5.5)
    REMOLO_WEB_WS_MAX_HEADER = 14,    // 2 + 8 length bytes + 4 mask bytes
};

enum remolo_web_route {
    REMOLO_WEB_ROUTE_REFUSE = 0,      // answer status/reason/extra/body, then close
    REMOLO_WEB_ROUTE_FILE = 1,        // serve path
    REMOLO_WEB_ROUTE_WEBSOCKET = 2,   // upgrade with ws_key
};

struct remolo_web_request {
    enum remolo_web_route route;
    int status;                       // REFUSE: 400, 403, 405, 414, 426
    const char *reason;               // its reason phrase
    const char *extra;                // header lines to add ("Allow: GET\r\n"), or ""
    const char *body;                 // what the refusal says, one line
    char path[REMOLO_WEB_MAX_TARGET + 1];        // FILE: without query or fragment; "/" is "/index.html"
    char ws_key[REMOLO_WEB_WS_KEY_LEN + 1];      // WEBSOCKET
    int close_after;                  // FILE: the client asked for Connection: close
};

/// Parses one request head: `len` bytes that end in the first "\r\n\r\n".
/// Always fills `out`; a head this bridge does not serve is a REFUSE.
void remolo_web_parse_request(const uint8_t *head, size_t len, struct remolo_web_request *out);

enum remolo_web_ws_event {
    REMOLO_WEB_WS_MORE = 0,     // no whole frame yet: read more
    REMOLO_WEB_WS_FRAGMENT,     // a non-final data frame, kept in the reader
    REMOLO_WEB_WS_MESSAGE,      // a whole binary message: reader msg, msg_len
    REMOLO_WEB_WS_PING,         // answer with a pong carrying payload
    REMOLO_WEB_WS_PONG,
    REMOLO_WEB_WS_CLOSE,        // the client closes: echo payload (its code, or nothing)
    REMOLO_WEB_WS_FAIL,         // protocol error: close with code and reason, then drop
};

/// A client's frames, reassembled into messages of at most
/// REMOLO_WEB_MAX_MESSAGE bytes. Zero it to start.
struct remolo_web_ws_reader {
    uint8_t msg[REMOLO_WEB_MAX_MESSAGE];
    size_t msg_len;
    int in_message;             // a fragmented message is under way
    int delivered;              // msg was handed out: the next call starts anew
    int failed;                 // a FAIL or CLOSE was returned: nothing more is parsed
};

struct remolo_web_ws_frame {
    size_t used;                // bytes of `in` this frame took (0 for MORE and FAIL)
    const uint8_t *payload;     // PING, PONG, CLOSE: unmasked, inside `in`
    size_t payload_len;
    uint16_t code;              // FAIL: the close code to send (RFC 6455 section 7.4.1)
    const char *reason;         // FAIL: the close reason
};

/// Parses the first frame of in[0..len), unmasking its payload in place.
/// Sizes are checked from the header, before the payload has arrived: an
/// oversized frame costs its 2-14 header bytes, not its length.
enum remolo_web_ws_event remolo_web_ws_next(struct remolo_web_ws_reader *r, uint8_t *in, size_t len,
                                            struct remolo_web_ws_frame *f);

enum remolo_web_message_kind {
    REMOLO_WEB_MESSAGE_BAD = -1,      // close 1008
    REMOLO_WEB_MESSAGE_STREAM = 0,    // tag 0x00 and at least one byte for the control port
    REMOLO_WEB_MESSAGE_DATAGRAM = 1,  // tag 0x01 and exactly one datagram (49 or 65 bytes)
};

enum remolo_web_message_kind remolo_web_message_kind(const uint8_t *m, size_t len);

#endif
