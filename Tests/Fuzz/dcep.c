/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the data-channel endpoint's DCEP (dcep.h), built
 * and run by Tests/Fuzz/run under ASan and UBSan. Besides crashes it
 * checks, and aborts when one breaks: an accepted DATA_CHANNEL_OPEN has
 * a registered channel type, its label and protocol lie inside the
 * message and fill it exactly, and encoding what was parsed gives back
 * the same bytes; a message one byte shorter or longer is refused; the
 * ACK is the one byte 0x02.
 * Seeds: Tests/Fuzz/corpus/dcep/ (Tests/Fuzz/make_corpus_dcep.py).
 */
// fuzz-sources: CSources/RemoloWebServer/dcep.c
// fuzz-includes: CSources/RemoloWebServer
// fuzz-options: -max_len=2048
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcep.h"

#define CHECK(x) do { if (!(x)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dcep_open o;
	uint8_t ack[DCEP_ACK_LEN];

	CHECK(dcep_ack(ack) == 1 && ack[0] == DCEP_MSG_ACK);
	if (dcep_parse_open(data, size, &o) != 0)
		return 0;
	CHECK(size >= DCEP_OPEN_HEADER_LEN && data[0] == DCEP_MSG_OPEN);
	uint8_t kind = o.channel_type & (uint8_t)~DCEP_CHANNEL_UNORDERED;
	CHECK(kind == DCEP_CHANNEL_RELIABLE || kind == DCEP_CHANNEL_PARTIAL_RELIABLE_REXMIT ||
	      kind == DCEP_CHANNEL_PARTIAL_RELIABLE_TIMED);
	CHECK(o.label == data + DCEP_OPEN_HEADER_LEN && o.protocol == o.label + o.label_len);
	CHECK(o.protocol + o.protocol_len == data + size);

	uint8_t *m = malloc(size + 1);
	m[0] = DCEP_MSG_OPEN;
	m[1] = o.channel_type;
	m[2] = (uint8_t)(o.priority >> 8), m[3] = (uint8_t)o.priority;
	for (int i = 0; i < 4; i++)
		m[4 + i] = (uint8_t)(o.reliability >> (24 - 8 * i));
	m[8] = (uint8_t)(o.label_len >> 8), m[9] = (uint8_t)o.label_len;
	m[10] = (uint8_t)(o.protocol_len >> 8), m[11] = (uint8_t)o.protocol_len;
	memcpy(m + DCEP_OPEN_HEADER_LEN, o.label, o.label_len);
	memcpy(m + DCEP_OPEN_HEADER_LEN + o.label_len, o.protocol, o.protocol_len);
	CHECK(!memcmp(m, data, size));
	struct dcep_open o2;
	m[size] = 0;
	CHECK(dcep_parse_open(m, size + 1, &o2) != 0);
	CHECK(dcep_parse_open(m, size - 1, &o2) != 0);
	free(m);
	return 0;
}
