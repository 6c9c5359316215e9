/* SPDX-License-Identifier: MIT */
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* Heap allocations (malloc, calloc, realloc, memalign family) made by the
 * whole process so far. */
uint64_t bench_allocations(void);

/* Reads a bare timerfd (absolute first expiry, period_ns after that) ticks
 * times on the calling thread, timer slack 1 ns, SCHED_FIFO at rt_priority
 * when above 0 (the policy is restored after): late_ns[i] is how long
 * after its latest expiry read i returned. 0 or -errno (-EPERM and the like
 * when SCHED_FIFO is refused). */
int bench_timer_lateness(uint32_t ticks, uint32_t period_ns, int rt_priority, uint64_t *late_ns);

/* CPU time (ns) of the thread with kernel id tid in this process, or -errno. */
int64_t bench_thread_cpu_ns(int tid);

/* The phone page's side of a data channel to the endpoint (rtc_client.c):
 * STUN check, DTLS 1.2 client, SCTP and DCEP, on a connected UDP socket.
 * bench_rtc_client_new makes the offer's fields (its ICE credentials and
 * its certificate's SHA-256); NULL when OpenSSL fails. */
enum { BENCH_RTC_UFRAG_LEN = 8, BENCH_RTC_PWD_LEN = 24 };
struct bench_rtc_client;
struct bench_rtc_client *bench_rtc_client_new(char ufrag[BENCH_RTC_UFRAG_LEN + 1], char pwd[BENCH_RTC_PWD_LEN + 1],
                                              uint8_t fingerprint[32]);
/* Checks, handshakes, associates and opens the channel with the endpoint
 * on 127.0.0.1:port, whose answer gave their_ufrag and their_pwd. 0 or -errno. */
int bench_rtc_client_connect(struct bench_rtc_client *c, uint16_t port, const char *their_ufrag, const char *their_pwd);
/* One message: one unordered DATA chunk, PPID 53, in one DTLS record. 0 or -errno. */
int bench_rtc_client_send(struct bench_rtc_client *c, const uint8_t *msg, size_t len);
/* Reads and answers whatever the endpoint sent (SACKs, heartbeats), without waiting. 0 or -errno. */
int bench_rtc_client_poll(struct bench_rtc_client *c);
void bench_rtc_client_free(struct bench_rtc_client *c);

#endif
