// SPDX-License-Identifier: MIT
// The data-channel endpoint alone (remolo_rtc.h), for Tests/RTC/run.py:
// starts it relaying to 127.0.0.1:TARGET_PORT and answers one command a
// line on stdin, one line on stdout:
//   add SESSION_HEX UFRAG PWD FINGERPRINT_HEX -> answer UFRAG PWD FINGERPRINT_HEX PORT | error ERRNO
//   remove SESSION_HEX                        -> ok
//   peer SESSION_HEX                          -> peer STATE REASON STUN_OK MESSAGES RELAYED DROPPED | none
//   stats                                     -> stats NAME=VALUE ...
//   quit
// Its first line is "port N" (the endpoint's UDP port).
#include "remolo_rtc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static void hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

int main(int argc, char **argv)
{
	char err[256], line[2048];
	if (argc != 2) {
		fprintf(stderr, "usage: %s TARGET_PORT\n", argv[0]);
		return 2;
	}
	struct remolo_rtc_config c = { .listen_host = "127.0.0.1", .target_host = "127.0.0.1",
	                               .target_port = (uint16_t)atoi(argv[1]) };
	if (getenv("RTC_LISTEN"))
		c.listen_host = *getenv("RTC_LISTEN") ? getenv("RTC_LISTEN") : NULL;
	struct remolo_rtc *rtc = remolo_rtc_start(&c, err, sizeof(err));
	if (!rtc) {
		fprintf(stderr, "driver: %s\n", err);
		return 1;
	}
	printf("port %u\n", remolo_rtc_port(rtc));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[16], a[600], b[600], d[600], e[600];
		uint8_t id[8];
		int n = sscanf(line, "%15s %599s %599s %599s %599s", cmd, a, b, d, e);
		if (n >= 1 && !strcmp(cmd, "quit"))
			break;
		if (n == 5 && !strcmp(cmd, "add")) {
			struct remolo_rtc_offer o = { 0 };
			struct remolo_rtc_answer ans;
			if (unhex(a, id, 8) || unhex(e, o.fingerprint, 32) || strlen(b) > 256 || strlen(d) > 256) {
				printf("error %d\n", EINVAL);
			} else {
				strcpy(o.ufrag, b);
				strcpy(o.pwd, d);
				int rc = remolo_rtc_add_peer(rtc, id, &o, &ans);
				if (rc) {
					printf("error %d\n", -rc);
				} else {
					printf("answer %s %s ", ans.ufrag, ans.pwd);
					hex(ans.fingerprint, 32);
					printf(" %u\n", ans.port);
				}
			}
		} else if (n == 2 && !strcmp(cmd, "remove") && !unhex(a, id, 8)) {
			remolo_rtc_remove_peer(rtc, id);
			printf("ok\n");
		} else if (n == 2 && !strcmp(cmd, "peer") && !unhex(a, id, 8)) {
			struct remolo_rtc_peer_stats ps;
			if (remolo_rtc_peer_stats(rtc, id, &ps))
				printf("none\n");
			else
				printf("peer %d %d %llu %llu %llu %llu\n", ps.state, ps.reason, (unsigned long long)ps.stun_ok,
				       (unsigned long long)ps.messages, (unsigned long long)ps.relayed, (unsigned long long)ps.dropped);
		} else if (n == 1 && !strcmp(cmd, "stats")) {
			struct remolo_rtc_stats s;
			remolo_rtc_get_stats(rtc, &s);
#define F(x) printf(" " #x "=%llu", (unsigned long long)s.x)
			printf("stats");
			F(packets); F(stun_requests); F(stun_bad_credentials); F(stun_malformed); F(stun_unknown_user);
			F(dtls_stranger); F(dtls_failed); F(dtls_fingerprint_mismatch); F(associations); F(extra_associations);
			F(channels_opened); F(channels_refused); F(messages); F(relayed); F(dropped_size); F(dropped_session);
			F(dropped_flood); F(dropped_other); F(peers_live); F(peers_expired); F(dtls_live); F(sctp_live); F(wakeups);
			printf("\n");
#undef F
		} else {
			printf("error %d\n", EINVAL);
		}
		fflush(stdout);
	}
	remolo_rtc_stop(rtc);
	return 0;
}
