// The receiver's web bridge: HTTPS for the phone page's static files and a
// WebSocket endpoint whose messages are relayed, unchanged, to the
// receiver's own control port (TCP) and datagram port (UDP) on loopback.
// Remolo's security is the Noise layer inside; TLS is what browsers demand
// before they give a page WebCrypto (a secure context).
#ifndef REMOLO_WEB_H
#define REMOLO_WEB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One static file of the page, served at `path` ("/app.js").
struct remolo_web_file {
    const char *path;
    const char *content_type;
    const uint8_t *data;
    size_t length;
};

/// Bounds of the web port (docs/phone-page.md).
enum {
    REMOLO_WEB_MAX_CONNECTIONS = 32,       // TLS connections at once; more are closed at accept
    REMOLO_WEB_SETUP_TIMEOUT_MS = 5000,    // TLS handshake + first request line and headers
    REMOLO_WEB_KEEPALIVE_MS = 15000,       // idle HTTP/1.1 connection between requests
    REMOLO_WEB_MAX_REQUEST = 8192,         // request line + headers
    REMOLO_WEB_MAX_MESSAGE = 1024,         // one WebSocket message (a control frame is at most 538 bytes)
};

/// WebSocket message tags (first byte of every binary message, both ways).
enum {
    REMOLO_WEB_TAG_STREAM = 0x00,    // control-channel bytes (handshake, sealed control frames)
    REMOLO_WEB_TAG_DATAGRAM = 0x01,  // exactly one sealed pointer datagram: 49 bytes, or 65 (redundant or gesture layout)
};

struct remolo_web_config {
    const char *listen_host;   // "0.0.0.0", "::", or an address
    uint16_t listen_port;      // 0: any
    const char *target_host;   // the receiver, reached on loopback
    uint16_t target_port;      // its TCP control and UDP datagram port
    const char *cert_path;     // PEM certificate
    const char *key_path;      // PEM private key (0600)
    const struct remolo_web_file *files;
    size_t file_count;
};

struct remolo_web_stats {
    uint64_t connections;        // TCP connections accepted
    uint64_t refused_full;       // closed at accept: REMOLO_WEB_MAX_CONNECTIONS live
    uint64_t tls_failed;         // TLS handshake failed or timed out
    uint64_t requests;           // HTTP requests answered (any status)
    uint64_t not_found;          // 404
    uint64_t bad_requests;       // 400, 403, 405, 426, 431, timeouts before a request
    uint64_t websockets;         // WebSocket upgrades accepted
    uint64_t ws_stream_messages; // relayed to the control port
    uint64_t ws_datagrams;       // relayed as UDP datagrams
    uint64_t ws_closed_protocol; // closed by us: bad frame, oversized, bad tag or length
};

struct remolo_web;

/// Starts the server on its own threads. NULL on failure, with why (and
/// what to do) in err.
struct remolo_web *remolo_web_start(const struct remolo_web_config *config, char *err, size_t err_len);
uint16_t remolo_web_port(const struct remolo_web *web);
void remolo_web_get_stats(const struct remolo_web *web, struct remolo_web_stats *out);
/// The browser whose WebSocket the bridge relays through the control
/// connection whose bridge end is addr:port (the receiver's view of its
/// peer: 4 bytes for IPv4 or IPv6 mapped from IPv4, else 16): its address
/// (the same forms) into out and its port into out_port, returning 4 or 16;
/// -ENOENT when no live WebSocket has that end.
int remolo_web_relay_client(struct remolo_web *web, const uint8_t *addr, size_t addr_len, uint16_t port,
                            uint8_t out[16], uint16_t *out_port);
/// Closes every connection and frees the server.
void remolo_web_stop(struct remolo_web *web);

/// Makes the self-signed ECDSA P-256 certificate and its key (mode 0600)
/// when either file is missing; refuses a key readable by others. The
/// SHA-256 fingerprint of the certificate (95 chars "AB:CD:...") goes to
/// fingerprint. 0 on success, -1 with err.
int remolo_web_certificate(const char *cert_path, const char *key_path, int *created,
                           char fingerprint[96], char *err, size_t err_len);

/// What remolo_web_ca_certificate made or found.
struct remolo_web_ca_result {
    int ca_created;            // the authority was made now
    int issued;                // the web certificate was issued now
    char ca_fingerprint[96];   // the authority's SHA-256, "AB:CD:..."
    char fingerprint[96];      // the web certificate's
    char ca_name[128];         // the authority's common name
    uint8_t ca_der[2048];      // the authority's certificate, DER
    size_t ca_der_length;
    char left_out[512];        // this host's names the authority may not vouch for, ", "-separated ("" when none)
};

/// The local certificate authority (ca.c): makes it (ECDSA P-256, key mode
/// 0600) when either of its files is missing, then issues the web
/// certificate and its key from it when they are missing, carry other
/// names than the host's today, come from another authority or near
/// their end. Refuses keys readable by others. 0 on success, -1 with err.
int remolo_web_ca_certificate(const char *ca_cert_path, const char *ca_key_path, const char *cert_path,
                              const char *key_path, struct remolo_web_ca_result *out, char *err, size_t err_len);

/// The text as a QR code drawn with Unicode half blocks, two modules per
/// character cell, light modules as blocks and a 4-module quiet zone;
/// malloc'd, NULL on failure.
char *remolo_web_qr(const char *text);

#ifdef __cplusplus
}
#endif
#endif
