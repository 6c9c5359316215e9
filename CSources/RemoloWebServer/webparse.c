// Parsing what a browser (or anyone on the LAN) sends the web bridge after
// TLS: request heads and WebSocket frames. Everything here reads bounded
// buffers by length; nothing relies on a NUL the peer could have sent.
#include "webparse.h"

#include <string.h>
#include <strings.h>

// ---------------------------------------------------------------- HTTP/1.1

static void refuse(struct remolo_web_request *r, int status, const char *reason, const char *extra, const char *body) {
    r->route = REMOLO_WEB_ROUTE_REFUSE;
    r->status = status;
    r->reason = reason;
    r->extra = extra ? extra : "";
    r->body = body;
}

static int is_tchar(uint8_t ch) {
    // RFC 9110 section 5.6.2: a token's characters.
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

struct span {
    const uint8_t *p;
    size_t n;
};

static int span_is(struct span s, const char *text) {
    size_t l = strlen(text);
    return s.n == l && strncasecmp((const char *)s.p, text, l) == 0;
}

// The next header field of the block at *at (which ends "\r\n" before
// end): its name and trimmed value. 0 at the blank line or a malformed field.
static int next_field(const uint8_t **at, const uint8_t *end, struct span *name, struct span *value) {
    const uint8_t *p = *at, *eol = p;
    while (eol + 1 < end && !(eol[0] == '\r' && eol[1] == '\n')) eol++;
    if (eol + 1 >= end || eol == p) return 0;
    const uint8_t *colon = p;
    while (colon < eol && is_tchar(*colon)) colon++;
    if (colon == p || colon == eol || *colon != ':') return -1; // no space before ':' (RFC 9112 section 5.1)
    const uint8_t *v = colon + 1, *ve = eol;
    while (v < ve && (*v == ' ' || *v == '\t')) v++;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    *name = (struct span){p, (size_t)(colon - p)};
    *value = (struct span){v, (size_t)(ve - v)};
    *at = eol + 2;
    return 1;
}

// A comma-separated value contains token (case-insensitive), as
// `Connection: keep-alive, Upgrade` does.
static int has_token(struct span v, const char *token) {
    size_t tl = strlen(token);
    for (size_t i = 0; i < v.n;) {
        while (i < v.n && (v.p[i] == ' ' || v.p[i] == ',' || v.p[i] == '\t')) i++;
        size_t e = i;
        while (e < v.n && v.p[e] != ',') e++;
        size_t te = e;
        while (te > i && (v.p[te - 1] == ' ' || v.p[te - 1] == '\t')) te--;
        if (te - i == tl && strncasecmp((const char *)v.p + i, token, tl) == 0) return 1;
        i = e;
    }
    return 0;
}

static int copy_span(struct span s, char *out, size_t out_len) {
    if (s.n >= out_len) return 0;
    memcpy(out, s.p, s.n);
    out[s.n] = 0;
    return 1;
}

// What the head's fields say that this bridge cares about.
struct fields {
    int bad, body, conn_close, conn_upgrade, upgrade_ws, version_13, has_origin, has_host;
    struct span key, origin, host;
};

static void read_fields(const uint8_t *p, const uint8_t *end, struct fields *f) {
    struct span n, v;
    int r;
    while ((r = next_field(&p, end, &n, &v)) == 1) {
        // Every Content-Length and Transfer-Encoding counts, not only the
        // first: no request here has a body, and one that announces one is
        // refused rather than parsed (request smuggling has nowhere to start).
        if (span_is(n, "Content-Length")) f->body |= !(v.n == 1 && v.p[0] == '0');
        else if (span_is(n, "Transfer-Encoding")) f->body = 1;
        else if (span_is(n, "Connection")) {
            f->conn_close |= has_token(v, "close");
            f->conn_upgrade |= has_token(v, "upgrade");
        } else if (span_is(n, "Upgrade") && !f->upgrade_ws) f->upgrade_ws = span_is(v, "websocket");
        else if (span_is(n, "Sec-WebSocket-Version") && !f->version_13) f->version_13 = span_is(v, "13");
        else if (span_is(n, "Sec-WebSocket-Key") && !f->key.p) f->key = v;
        else if (span_is(n, "Origin") && !f->has_origin) { f->origin = v; f->has_origin = 1; }
        else if (span_is(n, "Host") && !f->has_host) { f->host = v; f->has_host = 1; }
    }
    if (r < 0) f->bad = 1;
}

static int base64_char(uint8_t ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
}

void remolo_web_parse_request(const uint8_t *head, size_t len, struct remolo_web_request *out) {
    memset(out, 0, sizeof *out);
    // A NUL, a bare CR or a bare LF anywhere: not HTTP (RFC 9112 section
    // 2.2 lets a server refuse them; a browser never sends one).
    for (size_t i = 0; i < len; i++) {
        uint8_t ch = head[i];
        if (ch == 0 || (ch == '\r' && (i + 1 == len || head[i + 1] != '\n')) ||
            (ch == '\n' && (i == 0 || head[i - 1] != '\r'))) {
            refuse(out, 400, "Bad Request", NULL, "not an HTTP/1.1 request\n");
            return;
        }
    }
    if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0) {
        refuse(out, 400, "Bad Request", NULL, "not an HTTP/1.1 request\n");
        return;
    }
    // The request line: method SP target SP version CRLF (RFC 9112 section 3).
    const uint8_t *end = head + len, *p = head, *sp1, *sp2, *eol;
    for (sp1 = p; sp1 < end && is_tchar(*sp1); sp1++) {}
    for (sp2 = sp1 + 1; sp2 < end && *sp2 > ' ' && *sp2 < 0x7f; sp2++) {}
    for (eol = sp2 + 1; eol < end && *eol != '\r'; eol++) {}
    if (sp1 == p || sp1 >= end || *sp1 != ' ' || sp2 == sp1 + 1 || sp2 >= end || *sp2 != ' ' ||
        eol >= end || !((eol - sp2 - 1 == 8) && (memcmp(sp2 + 1, "HTTP/1.1", 8) == 0 ||
                                                 memcmp(sp2 + 1, "HTTP/1.0", 8) == 0))) {
        refuse(out, 400, "Bad Request", NULL, "not an HTTP/1.1 request\n");
        return;
    }
    struct fields f = {0};
    read_fields(eol + 2, end, &f);
    if (f.bad) {
        refuse(out, 400, "Bad Request", NULL, "a malformed header field\n");
        return;
    }
    if (f.body) {
        refuse(out, 400, "Bad Request", NULL, "no request body is accepted here\n");
        return;
    }
    struct span method = {p, (size_t)(sp1 - p)};
    if (!(method.n == 3 && memcmp(p, "GET", 3) == 0)) {
        refuse(out, 405, "Method Not Allowed", "Allow: GET\r\n", "only GET is served here\n");
        return;
    }
    size_t tlen = (size_t)(sp2 - sp1 - 1);
    const uint8_t *q = memchr(sp1 + 1, '?', tlen), *h = memchr(sp1 + 1, '#', tlen);
    if (h && (!q || h < q)) q = h;
    if (q) tlen = (size_t)(q - sp1 - 1);
    if (tlen > REMOLO_WEB_MAX_TARGET) {
        refuse(out, 414, "URI Too Long", NULL, "the request target is over 511 bytes\n");
        return;
    }
    memcpy(out->path, sp1 + 1, tlen);
    out->path[tlen] = 0;

    if (strcmp(out->path, "/ws") == 0) {
        // RFC 6455 section 4.2.1: a GET with Upgrade: websocket,
        // Connection: Upgrade, a 16-byte base64 key and version 13.
        if (!f.upgrade_ws || !f.conn_upgrade) {
            refuse(out, 426, "Upgrade Required", "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
                   "/ws is a WebSocket endpoint (RFC 6455); open the page at / instead\n");
            return;
        }
        if (!f.version_13) {
            refuse(out, 426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n", "WebSocket version 13 only\n");
            return;
        }
        int key_ok = f.key.n == REMOLO_WEB_WS_KEY_LEN && f.key.p[22] == '=' && f.key.p[23] == '=';
        for (size_t i = 0; key_ok && i < 22; i++) key_ok = base64_char(f.key.p[i]);
        if (!key_ok) {
            refuse(out, 400, "Bad Request", NULL, "Sec-WebSocket-Key must be 16 bytes in base64\n");
            return;
        }
        // A browser always sends Origin; another site's page must not
        // drive this endpoint (cross-site WebSocket use, RFC 6455
        // section 10.2). Noise would refuse it anyway; this is cheaper.
        if (f.has_origin) {
            static const char scheme[] = "https://";
            size_t sl = sizeof scheme - 1;
            if (f.origin.n != sl + f.host.n || strncasecmp((const char *)f.origin.p, scheme, sl) != 0 ||
                strncasecmp((const char *)f.origin.p + sl, (const char *)f.host.p, f.host.n) != 0) {
                refuse(out, 403, "Forbidden", NULL, "WebSocket from another origin\n");
                return;
            }
        }
        copy_span(f.key, out->ws_key, sizeof out->ws_key);
        out->route = REMOLO_WEB_ROUTE_WEBSOCKET;
        return;
    }
    if (strcmp(out->path, "/") == 0) strcpy(out->path, "/index.html");
    out->close_after = f.conn_close;
    out->route = REMOLO_WEB_ROUTE_FILE;
}

// ---------------------------------------------------------------- WebSocket

static enum remolo_web_ws_event fail(struct remolo_web_ws_reader *r, struct remolo_web_ws_frame *f, uint16_t code,
                                     const char *reason) {
    r->failed = 1;
    f->code = code;
    f->reason = reason;
    return REMOLO_WEB_WS_FAIL;
}

enum remolo_web_ws_event remolo_web_ws_next(struct remolo_web_ws_reader *r, uint8_t *in, size_t len,
                                            struct remolo_web_ws_frame *f) {
    memset(f, 0, sizeof *f);
    if (r->failed) return fail(r, f, 1002, "the connection is closing");
    if (r->delivered) {
        r->msg_len = 0;
        r->delivered = 0;
    }
    if (len < 2) return REMOLO_WEB_WS_MORE;
    uint8_t b0 = in[0], b1 = in[1], op = b0 & 0x0f;
    int fin = b0 >> 7;
    if (b0 & 0x70) return fail(r, f, 1002, "no extension was negotiated");
    if (!(b1 & 0x80)) return fail(r, f, 1002, "client frames must be masked");
    uint64_t plen = b1 & 0x7f;
    size_t hl = 2;
    if (plen == 126) {
        if (len < 4) return REMOLO_WEB_WS_MORE;
        plen = ((uint64_t)in[2] << 8) | in[3];
        hl = 4;
    } else if (plen == 127) {
        if (len < 10) return REMOLO_WEB_WS_MORE;
        plen = 0;
        for (int i = 0; i < 8; i++) plen = (plen << 8) | in[2 + i];
        hl = 10;
        // RFC 6455 section 5.2: the most significant bit must be 0.
        if (plen >> 63) return fail(r, f, 1002, "a 64-bit length with its top bit set");
    }
    if (op >= 0x8 && (plen > REMOLO_WEB_WS_MAX_CONTROL || !fin)) return fail(r, f, 1002, "bad control frame");
    // Never plen + msg_len: a 64-bit length must not wrap past the bound.
    if (plen > REMOLO_WEB_MAX_MESSAGE - r->msg_len) return fail(r, f, 1009, "message over 1024 bytes");
    if (len - hl < 4 + plen) return REMOLO_WEB_WS_MORE;
    uint8_t *mask = in + hl, *p = in + hl + 4;
    for (size_t i = 0; i < (size_t)plen; i++) p[i] ^= mask[i & 3];
    f->used = hl + 4 + (size_t)plen;
    f->payload = p;
    f->payload_len = (size_t)plen;
    switch (op) {
    case 0x8:
        // Close: echo the code, if the client gave one (section 5.5.1).
        r->failed = 1;
        f->payload_len = plen >= 2 ? 2 : 0;
        return REMOLO_WEB_WS_CLOSE;
    case 0x9:
        return REMOLO_WEB_WS_PING;
    case 0xA:
        return REMOLO_WEB_WS_PONG;
    case 0x1:
        f->used = 0;
        return fail(r, f, 1003, "binary messages only");
    case 0x0:
    case 0x2:
        // A continuation only inside a message, a new message only outside one (section 5.4).
        if ((op == 0x2) == r->in_message) {
            f->used = 0;
            return fail(r, f, 1002, "bad fragmentation");
        }
        memcpy(r->msg + r->msg_len, p, (size_t)plen);
        r->msg_len += (size_t)plen;
        r->in_message = !fin;
        f->payload = NULL;
        f->payload_len = 0;
        if (!fin) return REMOLO_WEB_WS_FRAGMENT;
        r->delivered = 1;
        return REMOLO_WEB_WS_MESSAGE;
    default:
        f->used = 0;
        return fail(r, f, 1002, "unknown opcode");
    }
}

enum remolo_web_message_kind remolo_web_message_kind(const uint8_t *m, size_t len) {
    if (len >= 2 && m[0] == REMOLO_WEB_TAG_STREAM) return REMOLO_WEB_MESSAGE_STREAM;
    if ((len == 1 + REMOLO_WEB_DATAGRAM_LEN || len == 1 + REMOLO_WEB_TOTALS_DATAGRAM_LEN) && m[0] == REMOLO_WEB_TAG_DATAGRAM)
        return REMOLO_WEB_MESSAGE_DATAGRAM;
    return REMOLO_WEB_MESSAGE_BAD;
}
