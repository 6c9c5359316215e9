// The receiver's WebRTC data-channel endpoint: the phone page's sealed
// pointer datagrams on an unreliable, unordered RTCDataChannel (SCTP over
// DTLS over UDP, RFC 8831) instead of the page's WebSocket, relayed one
// UDP datagram each to the receiver's own datagram port, exactly as the
// web bridge relays WebSocket-tagged datagrams.
//
// Field-standard parts only: ICE-lite with host candidates (RFC 8445
// section 2.5: we answer checks, never send them), STUN (RFC 8489), DTLS
// 1.2 through OpenSSL as the DTLS server (a=setup:passive), SCTP through
// usrsctp in AF_CONN mode (RFC 8261), DCEP (RFC 8832). The offer's ICE
// credentials and DTLS fingerprint come from the sealed session, so the
// endpoint adds no trust of its own: a peer is reachable only once
// registered, only from an address that passed a STUN check keyed by our
// ice-pwd, and only with the certificate the page vouched for.
//
// One UDP socket, one thread waiting in poll(2); with no peer registered
// the thread sleeps with no timeout. Every OpenSSL per-peer and usrsctp
// call happens on that thread; the functions below may be called from any
// other thread.
#ifndef REMOLO_RTC_H
#define REMOLO_RTC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    REMOLO_RTC_MAX_PEERS = 16,             // registered sessions at once
    REMOLO_RTC_MAX_PACKET = 1500,          // largest UDP datagram read; longer is dropped
    REMOLO_RTC_UFRAG_LEN = 16, REMOLO_RTC_PWD_LEN = 24,   // ours, ice-chars (RFC 8839: ufrag >= 4, pwd >= 22)
    REMOLO_RTC_OFFER_MAX = 256,            // longest ufrag or pwd of an offer (RFC 8839 section 5.4)
    REMOLO_RTC_SETUP_TIMEOUT_MS = 10000,   // registered but no open channel by then: freed (the page falls back)
    REMOLO_RTC_CONSENT_TIMEOUT_MS = 30000, // no valid STUN from the browser for this long: closed (RFC 7675 section 5.1)
    REMOLO_RTC_MAX_CHECKED = 4,            // addresses per peer that passed a check (its IPv4 and IPv6 candidates)
    REMOLO_RTC_DTLS_MTU = 1200,            // largest DTLS datagram we send (what browsers use)
    REMOLO_RTC_SCTP_MTU = 1100,            // SCTP packet in one DTLS record, with room for its overhead
    REMOLO_RTC_SCTP_PORT = 5000,           // both ends (RFC 8841 a=sctp-port, the browsers' default)
    REMOLO_RTC_SCTP_STREAMS = 16,          // inbound and outbound streams we offer (the page opens one)
    REMOLO_RTC_MAX_MESSAGE = 1024,         // a=max-message-size; longer messages are dropped
    REMOLO_RTC_SCTP_BUFFER = 65536,        // usrsctp's receive and send buffer per peer: what a browser ignoring
                                           // max-message-size can make it hold (beyond, messages come in parts, dropped)
    REMOLO_RTC_FLOOD_RATE = 2000,          // channel messages per second per peer, sustained
    REMOLO_RTC_FLOOD_BURST = 4000,         // ... and in a burst; beyond: dropped_flood
    REMOLO_RTC_READS_PER_WAKE = 64,        // datagrams read per poll wake-up before timers run again
    REMOLO_RTC_TICK_MS = 10,               // usrsctp timer tick while an association starts or carries traffic,
    REMOLO_RTC_QUIET_TICK_MS = 500,        // ... and once it has been quiet for REMOLO_RTC_BUSY_MS; none without one
    REMOLO_RTC_BUSY_MS = 1000,
    REMOLO_RTC_DATAGRAM_LEN = 49, REMOLO_RTC_DATAGRAM_REDUNDANT_LEN = 65,   // the only sizes relayed
    REMOLO_RTC_SESSION_ID_LEN = 8,
};

struct remolo_rtc_config {
    const char *listen_host; uint16_t listen_port;   // UDP; NULL: every address; 0: any port
    const char *target_host; uint16_t target_port;   // the receiver's UDP datagram port on loopback
};
/// The browser's ICE credentials and its DTLS certificate's SHA-256, from its offer.
struct remolo_rtc_offer { char ufrag[REMOLO_RTC_OFFER_MAX + 1]; char pwd[REMOLO_RTC_OFFER_MAX + 1]; uint8_t fingerprint[32]; };
/// Ours for the answer: credentials made for this peer, the endpoint's certificate, its UDP port.
struct remolo_rtc_answer { char ufrag[REMOLO_RTC_UFRAG_LEN + 1]; char pwd[REMOLO_RTC_PWD_LEN + 1]; uint8_t fingerprint[32]; uint16_t port; };

enum remolo_rtc_peer_state {
    REMOLO_RTC_PEER_WAITING,   // registered, no valid check yet
    REMOLO_RTC_PEER_CHECKED,   // a valid STUN check seen
    REMOLO_RTC_PEER_DTLS,      // DTLS handshake under way
    REMOLO_RTC_PEER_SCTP,      // DTLS done, fingerprint verified; SCTP association under way or up
    REMOLO_RTC_PEER_OPEN,      // the data channel is open: messages are relayed
    REMOLO_RTC_PEER_CLOSED,    // ended normally; nothing of it is held but its stats
    REMOLO_RTC_PEER_FAILED,    // ended by a failure; likewise
};
enum remolo_rtc_reason {
    REMOLO_RTC_REASON_NONE,
    REMOLO_RTC_REASON_SETUP_TIMEOUT,       // no open channel within REMOLO_RTC_SETUP_TIMEOUT_MS
    REMOLO_RTC_REASON_CONSENT_TIMEOUT,     // no valid STUN within REMOLO_RTC_CONSENT_TIMEOUT_MS
    REMOLO_RTC_REASON_DTLS_FAILED,         // handshake or record error, or the browser's close_notify
    REMOLO_RTC_REASON_FINGERPRINT,         // the browser's certificate is not the offer's
    REMOLO_RTC_REASON_SCTP_FAILED,         // socket, association could not start, or lost
    REMOLO_RTC_REASON_SCTP_CLOSED,         // the browser's SCTP ABORT or SHUTDOWN
    REMOLO_RTC_REASON_CHANNEL_CLOSED,      // the browser reset the channel's stream (RFC 8831 section 6.7)
    REMOLO_RTC_REASON_NO_MEMORY,
};
struct remolo_rtc_peer_stats { int state; int reason; uint64_t stun_ok, messages, relayed, dropped; };
struct remolo_rtc_stats {
    uint64_t packets, stun_requests, stun_bad_credentials, stun_malformed, stun_unknown_user,
        dtls_stranger,               // DTLS from an address that passed no check
        dtls_failed, dtls_fingerprint_mismatch,
        associations, extra_associations, channels_opened,
        channels_refused,            // extra or unknown channels
        messages, relayed,
        dropped_size,                // not 49 or 65 bytes, or not binary
        dropped_session,             // first 8 bytes not the peer's session id
        dropped_flood,               // beyond REMOLO_RTC_FLOOD_RATE / REMOLO_RTC_FLOOD_BURST
        dropped_other,               // neither STUN nor DTLS (RFC 7983 demux), longer than REMOLO_RTC_MAX_PACKET,
                                     // a message on another stream than the channel's, or the relay's send failed
        peers_live,                  // registered and neither closed nor failed
        peers_expired,               // setup or consent timeouts
        dtls_live, sctp_live,        // per-peer DTLS sessions and SCTP sockets held now
        wakeups;                     // the endpoint thread's returns from poll(2): a datagram, a call, a timer
};

struct remolo_rtc;

/// Starts the endpoint (makes its certificate, binds its socket, starts
/// its thread). NULL with err saying why and how to fix it.
struct remolo_rtc *remolo_rtc_start(const struct remolo_rtc_config *config, char *err, size_t err_len);
uint16_t remolo_rtc_port(const struct remolo_rtc *rtc);
/// Registers the session's browser; a second call for the same session id
/// replaces the first (the page retries). A closed or failed peer's slot
/// is reused when the table is full. 0, or -ENOSPC (REMOLO_RTC_MAX_PEERS
/// live), -EINVAL (bad offer: ufrag 4..256 ice-chars, pwd 22..256), -ENOMEM.
int remolo_rtc_add_peer(struct remolo_rtc *rtc, const uint8_t session_id[8], const struct remolo_rtc_offer *offer,
                        struct remolo_rtc_answer *answer);
/// Frees the peer's DTLS session, SCTP socket, everything of it, before returning.
void remolo_rtc_remove_peer(struct remolo_rtc *rtc, const uint8_t session_id[8]);
/// 0, or -ENOENT.
int remolo_rtc_peer_stats(const struct remolo_rtc *rtc, const uint8_t session_id[8], struct remolo_rtc_peer_stats *out);
void remolo_rtc_get_stats(const struct remolo_rtc *rtc, struct remolo_rtc_stats *out);
/// Frees every peer and the endpoint; rtc may be NULL.
void remolo_rtc_stop(struct remolo_rtc *rtc);

#ifdef __cplusplus
}
#endif
#endif
