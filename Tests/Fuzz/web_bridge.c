/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the web bridge's parsers (webparse.h): the bytes a
 * browser, or anyone on the LAN, sends once TLS is up. It plays them
 * through the same steps as webserver.c's connection thread, with its
 * buffer: request heads until one is refused, served with Connection:
 * close, or upgraded; then WebSocket frames until a close or a protocol
 * error. Besides crashes it checks, and aborts when one breaks:
 *  - every answer is one this bridge gives (refusal status and text, a
 *    file path without query, a 24-byte key);
 *  - a frame takes no more bytes than were there, a message is at most
 *    REMOLO_WEB_MAX_MESSAGE bytes, a waiting frame always fits the buffer;
 *  - the same bytes read in one piece or in many pieces of random sizes
 *    (TLS records arrive as they will) give the same events.
 * Seeds: Tests/Fuzz/corpus/web_bridge/ (Tests/Fuzz/make_corpus_web_bridge.py).
 */
// fuzz-sources: CSources/RemoloWebServer/webparse.c
// fuzz-includes: CSources/RemoloWebServer CSources/RemoloWebServer/include
// fuzz-options: -max_len=12288
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "webparse.h"

#define CHECK(x) do { if (!(x)) abort(); } while (0)

/* webserver.c's struct conn buffer. */
#define IN_SIZE (REMOLO_WEB_MAX_REQUEST + REMOLO_WEB_MAX_MESSAGE + 16)

struct sim {
	const uint8_t *data;
	size_t size, pos;
	uint32_t rng;		/* 0: read everything there is at once */
	uint8_t in[IN_SIZE];
	size_t in_len;
	uint64_t trace;		/* FNV-1a over every event */
	unsigned events;
};

static void note(struct sim *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		s->trace = (s->trace ^ b[i]) * 0x100000001b3ull;
}

static void event(struct sim *s, int kind, int value, const void *p, size_t n)
{
	note(s, &kind, sizeof(kind));
	note(s, &value, sizeof(value));
	note(s, &n, sizeof(n));
	note(s, p, n);
	s->events++;
}

/* One read: what TLS would hand over now. 0 when the input is done. */
static size_t read_some(struct sim *s)
{
	size_t room = IN_SIZE - s->in_len, n = s->size - s->pos;

	if (s->rng) {
		s->rng = s->rng * 1103515245u + 12345u;
		size_t want = 1 + (s->rng >> 16) % 97;
		if (n > want)
			n = want;
	}
	if (n > room)
		n = room;
	memcpy(s->in + s->in_len, s->data + s->pos, n);
	s->in_len += n;
	s->pos += n;
	return n;
}

static void consume(struct sim *s, size_t n)
{
	CHECK(n <= s->in_len);
	memmove(s->in, s->in + n, s->in_len - n);
	s->in_len -= n;
}

static void check_request(const struct remolo_web_request *r)
{
	switch (r->route) {
	case REMOLO_WEB_ROUTE_REFUSE:
		CHECK(r->status == 400 || r->status == 403 || r->status == 405 || r->status == 414 || r->status == 426);
		CHECK(r->reason && r->extra && r->body);
		CHECK(strlen(r->body) > 1 && r->body[strlen(r->body) - 1] == '\n');
		CHECK(!strchr(r->reason, '\r') && !strchr(r->reason, '\n'));
		break;
	case REMOLO_WEB_ROUTE_FILE:
		CHECK(strlen(r->path) <= REMOLO_WEB_MAX_TARGET);
		CHECK(!strpbrk(r->path, "?#\r\n "));
		break;
	case REMOLO_WEB_ROUTE_WEBSOCKET:
		CHECK(strcmp(r->path, "/ws") == 0 && strlen(r->ws_key) == REMOLO_WEB_WS_KEY_LEN);
		break;
	default:
		CHECK(0);
	}
}

/* Request heads, as http_loop reads them. 1: upgraded to a WebSocket. */
static int http(struct sim *s)
{
	for (;;) {
		uint8_t *end;
		size_t head_len;
		struct remolo_web_request req;

		while (!(end = memmem(s->in, s->in_len, "\r\n\r\n", 4))) {
			if (s->in_len >= REMOLO_WEB_MAX_REQUEST) {
				event(s, 1, 431, NULL, 0);
				return 0;
			}
			if (!read_some(s))
				return 0;
		}
		head_len = (size_t)(end - s->in) + 4;
		if (head_len > REMOLO_WEB_MAX_REQUEST) {
			event(s, 1, 431, NULL, 0);
			return 0;
		}
		remolo_web_parse_request(s->in, head_len, &req);
		check_request(&req);
		consume(s, head_len);
		event(s, 2, (int)req.route * 1000 + req.status, req.path, strlen(req.path));
		if (req.route == REMOLO_WEB_ROUTE_WEBSOCKET)
			return 1;
		if (req.route == REMOLO_WEB_ROUTE_REFUSE || req.close_after)
			return 0;
	}
}

/* Frames, as websocket_session reads them. */
static void websocket(struct sim *s)
{
	static struct remolo_web_ws_reader r;
	struct remolo_web_ws_frame f;
	enum remolo_web_ws_event ev;

	memset(&r, 0, sizeof(r));
	for (;;) {
		ev = remolo_web_ws_next(&r, s->in, s->in_len, &f);
		if (ev == REMOLO_WEB_WS_MORE) {
			/* A frame bigger than the buffer would stall the connection. */
			CHECK(s->in_len < REMOLO_WEB_WS_MAX_HEADER + REMOLO_WEB_MAX_MESSAGE);
			if (!read_some(s))
				return;
			continue;
		}
		if (ev == REMOLO_WEB_WS_FAIL) {
			CHECK(f.code >= 1002 && f.code <= 1009 && f.reason && *f.reason);
			CHECK(r.failed);
			event(s, 3, f.code, f.reason, strlen(f.reason));
			return;
		}
		CHECK(f.used >= 6 && f.used <= s->in_len);
		switch (ev) {
		case REMOLO_WEB_WS_CLOSE:
			CHECK(f.payload_len == 0 || f.payload_len == 2);
			event(s, 4, 0, f.payload, f.payload_len);
			return;
		case REMOLO_WEB_WS_PING:
		case REMOLO_WEB_WS_PONG:
			CHECK(f.payload_len <= REMOLO_WEB_WS_MAX_CONTROL);
			CHECK(f.payload >= s->in && f.payload + f.payload_len <= s->in + f.used);
			event(s, 5, ev, f.payload, f.payload_len);
			break;
		case REMOLO_WEB_WS_FRAGMENT:
			CHECK(r.in_message && r.msg_len <= REMOLO_WEB_MAX_MESSAGE);
			break;
		case REMOLO_WEB_WS_MESSAGE: {
			enum remolo_web_message_kind k = remolo_web_message_kind(r.msg, r.msg_len);

			CHECK(!r.in_message && r.msg_len <= REMOLO_WEB_MAX_MESSAGE);
			if (k == REMOLO_WEB_MESSAGE_DATAGRAM)
				CHECK(r.msg_len == 1 + REMOLO_WEB_DATAGRAM_LEN || r.msg_len == 1 + REMOLO_WEB_TOTALS_DATAGRAM_LEN);
			if (k == REMOLO_WEB_MESSAGE_STREAM)
				CHECK(r.msg_len >= 2 && r.msg[0] == REMOLO_WEB_TAG_STREAM);
			event(s, 6, k, r.msg, r.msg_len);
			if (k == REMOLO_WEB_MESSAGE_BAD)
				return;
			break;
		}
		default:
			CHECK(0);
		}
		consume(s, f.used);
	}
}

static void run(struct sim *s, const uint8_t *data, size_t size, uint32_t rng)
{
	s->data = data;
	s->size = size;
	s->pos = 0;
	s->rng = rng;
	s->in_len = 0;
	s->trace = 0xcbf29ce484222325ull;
	s->events = 0;
	if (http(s))
		websocket(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sim whole, pieces;

	run(&whole, data, size, 0);
	run(&pieces, data, size, (uint32_t)size * 2654435761u | 1);
	CHECK(whole.events == pieces.events && whole.trace == pieces.trace);
	return 0;
}
