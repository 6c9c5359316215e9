// What the endpoint's parts share (rtc.c the table, socket and thread;
// dtls.c the DTLS server; sctp.c usrsctp). Everything here but the
// fields the public functions read under rtc->lock belongs to the
// endpoint thread.
#ifndef REMOLO_RTC_INTERNAL_H
#define REMOLO_RTC_INTERNAL_H

#include "remolo_rtc.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

struct socket;   // usrsctp's

enum {
    RTC_MAX_RECORD = 16384 + 2048,         // a DTLS record's plaintext, with room (RFC 6347 section 4.1)
};

struct rtc_peer {
    struct remolo_rtc *rtc;
    // The registration: written by remolo_rtc_add_peer under rtc->lock.
    int used;                       // the slot holds a registration (live or ended)
    int fresh;                      // registered since the thread last looked: deadlines not set
    int doomed;                     // remolo_rtc_remove_peer waits for the thread to free it
    uint8_t session_id[REMOLO_RTC_SESSION_ID_LEN];
    char ufrag[REMOLO_RTC_UFRAG_LEN + 1], pwd[REMOLO_RTC_PWD_LEN + 1];   // ours
    char their_ufrag[REMOLO_RTC_OFFER_MAX + 1];
    size_t their_ufrag_len;
    uint8_t fingerprint[32];        // the browser's certificate's SHA-256
    struct remolo_rtc_peer_stats st;
    uint64_t order;                 // registration order: the oldest ended slot is reused first

    // The endpoint thread's.
    int64_t setup_deadline, consent_deadline;   // CLOCK_MONOTONIC ms
    struct sockaddr_storage checked[REMOLO_RTC_MAX_CHECKED];
    socklen_t checked_len[REMOLO_RTC_MAX_CHECKED];
    int n_checked;
    struct sockaddr_storage addr;   // where DTLS records go: the last checked address DTLS came from
    socklen_t addr_len;
    SSL *ssl;
    const uint8_t *in;              // the datagram the DTLS read BIO hands over next
    size_t in_len;
    struct socket *sock;
    int sctp_registered, associated;
    int channel_sid;                // the open channel's stream, or -1
    int ack_sid;                    // a DATA_CHANNEL_ACK to send after the input, or -1
    uint32_t refuse;                // streams of refused channels to reset after the input, a bit each
    int partial;                    // inside a message delivered in parts (too long: dropped)
    int end_state, end_reason;      // set inside usrsctp's callbacks, acted on after them
    double tokens;                  // flood bound: a token bucket of messages
    int64_t tokens_at;
};

struct rtc_dtls {
    SSL_CTX *ctx;
    BIO_METHOD *bio;
    uint8_t fingerprint[32];
};

struct remolo_rtc {
    int fd, relay_fd, wake_fd;
    uint16_t port;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t freed;           // signalled when the thread frees a doomed slot
    int stopping;
    int64_t busy_until;             // SCTP traffic seen lately: usrsctp's timers at the fine tick
    uint64_t order;
    struct rtc_dtls dtls;
    uint8_t packet[REMOLO_RTC_MAX_PACKET + 1];   // one more: a longer datagram is seen as such
    uint8_t plain[RTC_MAX_RECORD];
    struct remolo_rtc_stats st;
    struct rtc_peer peers[REMOLO_RTC_MAX_PEERS];
};

int64_t rtc_now_ms(void);
/// Sends one datagram to the peer's address from the endpoint's socket. Its length, or -errno.
int rtc_send(struct rtc_peer *p, const uint8_t *buf, size_t len);
/// One message of the peer's association (sctp.c calls it from usrsctp's receive callback).
void rtc_message(struct rtc_peer *p, uint16_t sid, uint32_t ppid, const uint8_t *data, size_t len, int complete);
/// Frees the peer's DTLS and SCTP state and ends it with state and reason.
void rtc_peer_end(struct rtc_peer *p, int state, int reason);

int rtc_dtls_init(struct rtc_dtls *d, char *err, size_t err_len);
void rtc_dtls_free(struct rtc_dtls *d);
/// Feeds one DTLS datagram; application data goes to rtc_sctp_input. 0, or -errno when the peer must fail.
int rtc_dtls_input(struct rtc_peer *p, const uint8_t *buf, size_t len);
/// Writes one SCTP packet as a DTLS record. 0, or -EIO.
int rtc_dtls_send(struct rtc_peer *p, const void *buf, size_t len);
/// Milliseconds to the handshake's retransmission, or -1 when none is due.
int rtc_dtls_timeout_ms(struct rtc_peer *p);
/// Retransmits the handshake's last flight if due. 0, or -ETIMEDOUT when the handshake gave up.
int rtc_dtls_timer(struct rtc_peer *p);
void rtc_dtls_close(struct rtc_peer *p);

/// Once per process (usrsctp cannot be initialised twice); one endpoint
/// at a time owns it. 0, or -EBUSY, -ENOMEM.
int rtc_sctp_acquire(struct remolo_rtc *rtc);
void rtc_sctp_release(struct remolo_rtc *rtc);
/// Starts the peer's association once DTLS is up. 0, or -errno.
int rtc_sctp_open(struct rtc_peer *p);
void rtc_sctp_input(struct rtc_peer *p, const uint8_t *buf, size_t len);
/// Advances usrsctp's timers to now (only while some association exists).
void rtc_sctp_tick(void);
void rtc_sctp_close(struct rtc_peer *p);

#endif
