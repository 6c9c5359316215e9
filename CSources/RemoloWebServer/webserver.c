// The web bridge: TLS (RFC 8446, through OpenSSL), HTTP/1.1 for the page's
// static files, and WebSocket (RFC 6455) connections relayed to the
// receiver's own ports on loopback. One thread per connection, each
// waiting in poll(2) on its TLS socket, its loopback socket and the stop
// pipe, so nothing here ever blocks on a single peer.
//
// The bridge adds no security of its own and needs none: every byte it
// relays is the page's Noise handshake, sealed control frames or sealed
// datagrams, which the receiver checks exactly as it checks a native
// sender's (same handshake caps and timeouts, same wire_open). What the
// bridge does bound is its own resources: connections at once, time to a
// first request, request and message sizes.
#define _GNU_SOURCE
#include "remolo_web.h"
#include "webparse.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

struct remolo_web {
    int listen_fd;
    int stop_pipe[2];            // readable once stopping: in every poll set
    uint16_t port;
    SSL_CTX *ctx;
    struct sockaddr_storage target;
    socklen_t target_len;
    struct remolo_web_file *files;
    size_t file_count;
    pthread_t accept_thread;
    atomic_int live;             // connection threads running
    atomic_bool stopping;
    // Each live WebSocket's control connection to the receiver, by the
    // bridge's end of it, with the browser it relays: the receiver sees the
    // bridge as the peer and asks here which browser, and so which
    // network, a session comes from (remolo_web_relay_client).
    pthread_mutex_t relays_lock;
    struct relay {
        bool used;
        uint8_t local[16], client[16];
        uint8_t local_len, client_len;
        uint16_t local_port, client_port;
    } relays[REMOLO_WEB_MAX_CONNECTIONS];
    struct {
        _Atomic uint64_t connections, refused_full, tls_failed, requests, not_found, bad_requests,
            websockets, ws_stream_messages, ws_datagrams, ws_closed_protocol;
    } st;
};

struct conn {
    struct remolo_web *web;
    int fd;
    struct sockaddr_storage peer;   // the browser, from accept
    int relay;                      // its slot in web->relays, or -1
    SSL *ssl;
    uint8_t in[REMOLO_WEB_MAX_REQUEST + REMOLO_WEB_MAX_MESSAGE + 16];
    size_t in_len;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_err(char *err, size_t len, const char *what) {
    if (!err || !len) return;
    unsigned long e = ERR_get_error();
    if (e) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        snprintf(err, len, "%s (%s)", what, buf);
    } else if (errno) {
        snprintf(err, len, "%s (%s)", what, strerror(errno));
    } else {
        snprintf(err, len, "%s", what);
    }
}

// Waits until fd is ready for `events`, the stop pipe fires or the deadline
// passes. 1 ready, 0 timeout or stop, -1 error.
static int wait_fd(struct conn *c, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p[2] = {{.fd = c->fd, .events = events}, {.fd = c->web->stop_pipe[0], .events = POLLIN}};
        int n = poll(p, 2, (int)left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (p[1].revents) return 0;
        if (p[0].revents) return 1;
    }
}

// Reads what TLS has now (at least one byte) into c->in. >0 bytes, 0 the
// peer closed, -1 error or timeout.
static ssize_t tls_read_some(struct conn *c, int64_t deadline) {
    size_t room = sizeof c->in - c->in_len;
    if (room == 0) return -1;
    for (;;) {
        int n = SSL_read(c->ssl, c->in + c->in_len, (int)room);
        if (n > 0) { c->in_len += (size_t)n; return n; }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (e == SSL_ERROR_WANT_READ) { if (wait_fd(c, POLLIN, deadline) <= 0) return -1; continue; }
        if (e == SSL_ERROR_WANT_WRITE) { if (wait_fd(c, POLLOUT, deadline) <= 0) return -1; continue; }
        return e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0 ? 0 : -1;
    }
}

static int tls_write_all(struct conn *c, const void *buf, size_t len, int64_t deadline) {
    const uint8_t *p = buf;
    while (len > 0) {
        int n = SSL_write(c->ssl, p, (int)len);
        if (n > 0) { p += n; len -= (size_t)n; continue; }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE) { if (wait_fd(c, POLLOUT, deadline) <= 0) return -1; continue; }
        if (e == SSL_ERROR_WANT_READ) { if (wait_fd(c, POLLIN, deadline) <= 0) return -1; continue; }
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------- HTTP/1.1

static void respond(struct conn *c, int status, const char *reason, const char *extra, const char *body) {
    char head[1024];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s\r\n",
                     status, reason, blen, extra ? extra : "");
    atomic_fetch_add(&c->web->st.requests, 1);
    if (status == 404) atomic_fetch_add(&c->web->st.not_found, 1);
    else atomic_fetch_add(&c->web->st.bad_requests, 1);
    int64_t deadline = now_ms() + 2000;
    if (tls_write_all(c, head, (size_t)n, deadline) == 0 && blen) tls_write_all(c, body, blen, deadline);
}

static const struct remolo_web_file *find_file(struct remolo_web *w, const char *path) {
    for (size_t i = 0; i < w->file_count; i++)
        if (strcmp(w->files[i].path, path) == 0) return &w->files[i];
    return NULL;
}

static void websocket_session(struct conn *c, const char *key);

// Serves requests on one connection until it closes, errs or idles.
static void http_loop(struct conn *c) {
    int64_t deadline = now_ms() + REMOLO_WEB_SETUP_TIMEOUT_MS;
    for (;;) {
        // One request: line and headers up to the blank line.
        char *end = NULL;
        while (!(end = memmem(c->in, c->in_len, "\r\n\r\n", 4))) {
            if (c->in_len >= REMOLO_WEB_MAX_REQUEST) {
                respond(c, 431, "Request Header Fields Too Large", NULL, "request headers over 8 KiB\n");
                return;
            }
            ssize_t n = tls_read_some(c, deadline);
            if (n <= 0) {
                if (n < 0 && c->in_len > 0) atomic_fetch_add(&c->web->st.bad_requests, 1);
                return;
            }
        }
        size_t head_len = (size_t)(end - (char *)c->in) + 4;
        if (head_len > REMOLO_WEB_MAX_REQUEST) {
            respond(c, 431, "Request Header Fields Too Large", NULL, "request headers over 8 KiB\n");
            return;
        }
        struct remolo_web_request req;
        remolo_web_parse_request(c->in, head_len, &req);
        memmove(c->in, c->in + head_len, c->in_len - head_len);
        c->in_len -= head_len;
        if (req.route == REMOLO_WEB_ROUTE_REFUSE) {
            respond(c, req.status, req.reason, req.extra, req.body);
            return;
        }
        if (req.route == REMOLO_WEB_ROUTE_WEBSOCKET) {
            atomic_fetch_add(&c->web->st.requests, 1);
            websocket_session(c, req.ws_key);
            return;
        }
        const struct remolo_web_file *f = find_file(c->web, req.path);
        if (!f) {
            respond(c, 404, "Not Found", NULL, "no such file\n");
            return;
        }
        int close_after = req.close_after;
        char head[1024];
        // The page runs only its own scripts and talks only to this
        // origin; no-cache so an upgraded receiver's page is fetched anew.
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-cache\r\n"
                         "Content-Security-Policy: default-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'\r\n"
                         "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n%s\r\n",
                         f->content_type, f->length, close_after ? "Connection: close\r\n" : "");
        atomic_fetch_add(&c->web->st.requests, 1);
        int64_t wd = now_ms() + 10000;
        if (tls_write_all(c, head, (size_t)n, wd) != 0 || tls_write_all(c, f->data, f->length, wd) != 0) return;
        if (close_after) return;
        deadline = now_ms() + REMOLO_WEB_KEEPALIVE_MS;
    }
}

// ---------------------------------------------------------------- WebSocket

static int ws_send(struct conn *c, uint8_t opcode, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    uint8_t h[10];
    size_t hl = 2, len = alen + blen;
    h[0] = 0x80 | opcode; // FIN; a server never masks (RFC 6455 section 5.1)
    if (len < 126) h[1] = (uint8_t)len;
    else if (len < 65536) { h[1] = 126; h[2] = (uint8_t)(len >> 8); h[3] = (uint8_t)len; hl = 4; }
    else return -1;
    uint8_t buf[10 + 4096 + 2];
    if (hl + len > sizeof buf) return -1;
    memcpy(buf, h, hl);
    if (alen) memcpy(buf + hl, a, alen);
    if (blen) memcpy(buf + hl + alen, b, blen);
    return tls_write_all(c, buf, hl + len, now_ms() + 5000);
}

static void ws_close(struct conn *c, uint16_t code, const char *reason) {
    uint8_t p[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    ws_send(c, 0x8, p, 2, (const uint8_t *)reason, strlen(reason));
}

static int connect_target(struct remolo_web *w, int type) {
    int fd = socket(w->target.ss_family, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&w->target, w->target_len) != 0) { close(fd); return -1; }
    if (type == SOCK_STREAM) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

// An address as 4 bytes (IPv4, or IPv6 mapped from IPv4: RFC 4291 2.5.5.2)
// or 16, and its port; 0 bytes for another family.
static uint8_t address_bytes(const struct sockaddr_storage *ss, uint8_t out[16], uint16_t *port) {
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        memcpy(out, &a->sin_addr, 4);
        *port = ntohs(a->sin_port);
        return 4;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        *port = ntohs(a->sin6_port);
        if (memcmp(&a->sin6_addr, mapped, 12) == 0) {
            memcpy(out, (const uint8_t *)&a->sin6_addr + 12, 4);
            return 4;
        }
        memcpy(out, &a->sin6_addr, 16);
        return 16;
    }
    return 0;
}

// Notes the relay's end of the control connection beside its browser; -1
// when it cannot (the session then counts as the bridge's network).
static int relay_add(struct conn *c, int tcp) {
    struct remolo_web *w = c->web;
    struct sockaddr_storage local;
    socklen_t len = sizeof local;
    struct relay r = {.used = true};

    if (getsockname(tcp, (struct sockaddr *)&local, &len) != 0) return -1;
    r.local_len = address_bytes(&local, r.local, &r.local_port);
    r.client_len = address_bytes(&c->peer, r.client, &r.client_port);
    if (!r.local_len || !r.client_len) return -1;
    pthread_mutex_lock(&w->relays_lock);
    int slot = -1;
    for (int i = 0; i < REMOLO_WEB_MAX_CONNECTIONS && slot < 0; i++)
        if (!w->relays[i].used) slot = i;
    if (slot >= 0) w->relays[slot] = r;
    pthread_mutex_unlock(&w->relays_lock);
    return slot;
}

static void relay_remove(struct conn *c) {
    if (c->relay < 0) return;
    pthread_mutex_lock(&c->web->relays_lock);
    c->web->relays[c->relay].used = false;
    pthread_mutex_unlock(&c->web->relays_lock);
    c->relay = -1;
}

int remolo_web_relay_client(struct remolo_web *w, const uint8_t *addr, size_t addr_len, uint16_t port,
                            uint8_t out[16], uint16_t *out_port) {
    int n = -ENOENT;
    pthread_mutex_lock(&w->relays_lock);
    for (int i = 0; i < REMOLO_WEB_MAX_CONNECTIONS; i++) {
        const struct relay *r = &w->relays[i];
        if (r->used && r->local_port == port && r->local_len == addr_len && memcmp(r->local, addr, addr_len) == 0) {
            memcpy(out, r->client, r->client_len);
            *out_port = r->client_port;
            n = r->client_len;
            break;
        }
    }
    pthread_mutex_unlock(&w->relays_lock);
    return n;
}

static int send_all(int fd, const uint8_t *p, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (poll(&pf, 1, 5000) <= 0) return -1;
            continue;
        }
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

// Handles one whole message: tag 0x00 relays control-channel bytes to the
// receiver's TCP port, tag 0x01 one sealed datagram to its UDP port.
// Anything else is not ours to guess at: close 1008.
static int ws_message(struct conn *c, int tcp, int udp, const uint8_t *m, size_t len) {
    switch (remolo_web_message_kind(m, len)) {
    case REMOLO_WEB_MESSAGE_STREAM:
        atomic_fetch_add(&c->web->st.ws_stream_messages, 1);
        return send_all(tcp, m + 1, len - 1) == 0 ? 0 : -2;
    case REMOLO_WEB_MESSAGE_DATAGRAM:
        atomic_fetch_add(&c->web->st.ws_datagrams, 1);
        // One message, one datagram: the receiver's io_uring loop opens it
        // like any other (and counts it by drop reason if it is not sound).
        send(udp, m + 1, len - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        return 0;
    default:
        return -1;
    }
}

static void websocket_session(struct conn *c, const char *key) {
    struct remolo_web *w = c->web;
    // Sec-WebSocket-Accept = base64(SHA-1(key || GUID)), RFC 6455 section 4.2.2.
    char cat[128];
    snprintf(cat, sizeof cat, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    unsigned char sha[EVP_MAX_MD_SIZE];
    unsigned int shalen = 0;
    EVP_Digest(cat, strlen(cat), sha, &shalen, EVP_sha1(), NULL);
    unsigned char accept[64];
    EVP_EncodeBlock(accept, sha, (int)shalen);

    int tcp = connect_target(w, SOCK_STREAM);
    int udp = tcp >= 0 ? connect_target(w, SOCK_DGRAM) : -1;
    if (udp < 0) {
        respond(c, 503, "Service Unavailable", NULL, "the receiver's port does not answer\n");
        if (tcp >= 0) close(tcp);
        return;
    }
    // Before a byte is relayed: the receiver asks once the handshake is done.
    c->relay = relay_add(c, tcp);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    if (tls_write_all(c, head, (size_t)hn, now_ms() + 5000) != 0) goto out;
    atomic_fetch_add(&w->st.websockets, 1);

    struct remolo_web_ws_reader reader = {0};
    for (;;) {
        // Act on every whole frame already read (RFC 6455 section 5.2).
        for (;;) {
            struct remolo_web_ws_frame f;
            enum remolo_web_ws_event ev = remolo_web_ws_next(&reader, c->in, c->in_len, &f);
            if (ev == REMOLO_WEB_WS_MORE) break;
            if (ev == REMOLO_WEB_WS_FAIL) { ws_close(c, f.code, f.reason); goto protocol; }
            if (ev == REMOLO_WEB_WS_CLOSE) { ws_send(c, 0x8, f.payload, f.payload_len, NULL, 0); goto out; }
            if (ev == REMOLO_WEB_WS_PING) ws_send(c, 0xA, f.payload, f.payload_len, NULL, 0);
            if (ev == REMOLO_WEB_WS_MESSAGE) {
                int r = ws_message(c, tcp, udp, reader.msg, reader.msg_len);
                if (r == -1) { ws_close(c, 1008, "not a Remolo stream chunk or 49- or 65-byte datagram"); goto protocol; }
                if (r == -2) { ws_close(c, 1011, "the receiver closed the session"); goto out; }
            }
            memmove(c->in, c->in + f.used, c->in_len - f.used);
            c->in_len -= f.used;
        }
        // Wait for the browser, the receiver or the stop pipe.
        struct pollfd p[3] = {{.fd = c->fd, .events = POLLIN}, {.fd = tcp, .events = POLLIN},
                              {.fd = w->stop_pipe[0], .events = POLLIN}};
        if (SSL_pending(c->ssl) == 0) {
            int n = poll(p, 3, -1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 || p[2].revents) { ws_close(c, 1001, "the receiver is stopping"); goto out; }
        } else {
            p[0].revents = POLLIN;
        }
        if (p[1].revents) {
            uint8_t buf[4096];
            ssize_t n = recv(tcp, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                ws_close(c, 1000, "the receiver closed the session");
                goto out;
            }
            if (n > 0) {
                uint8_t tag = REMOLO_WEB_TAG_STREAM;
                if (ws_send(c, 0x2, &tag, 1, buf, (size_t)n) != 0) goto out;
            }
        }
        if (p[0].revents) {
            int r = SSL_read(c->ssl, c->in + c->in_len, (int)(sizeof c->in - c->in_len));
            if (r > 0) {
                c->in_len += (size_t)r;
            } else {
                int e = SSL_get_error(c->ssl, r);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) goto out;
            }
        }
    }
protocol:
    atomic_fetch_add(&w->st.ws_closed_protocol, 1);
out:
    relay_remove(c);
    close(udp);
    close(tcp);
}

// ---------------------------------------------------------------- threads

static void *conn_thread(void *arg) {
    struct conn *c = arg;
    struct remolo_web *w = c->web;
    c->ssl = SSL_new(w->ctx);
    if (c->ssl && SSL_set_fd(c->ssl, c->fd) == 1) {
        int64_t deadline = now_ms() + REMOLO_WEB_SETUP_TIMEOUT_MS;
        int ok = 0;
        for (;;) {
            int r = SSL_accept(c->ssl);
            if (r == 1) { ok = 1; break; }
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ && wait_fd(c, POLLIN, deadline) > 0) continue;
            if (e == SSL_ERROR_WANT_WRITE && wait_fd(c, POLLOUT, deadline) > 0) continue;
            break;
        }
        ERR_clear_error();
        if (ok) {
            http_loop(c);
            SSL_shutdown(c->ssl);
        } else {
            atomic_fetch_add(&w->st.tls_failed, 1);
        }
    }
    ERR_clear_error();
    if (c->ssl) SSL_free(c->ssl);
    close(c->fd);
    free(c);
    atomic_fetch_sub(&w->live, 1);
    return NULL;
}

static void *accept_thread(void *arg) {
    struct remolo_web *w = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = w->listen_fd, .events = POLLIN}, {.fd = w->stop_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (!p[0].revents) continue;
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int fd = accept4(w->listen_fd, (struct sockaddr *)&peer, &peer_len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) usleep(100000);
            continue;
        }
        atomic_fetch_add(&w->st.connections, 1);
        // A bound on connections, idle or not, so that many idle TLS
        // connections cannot pin threads and memory; each one also has only
        // REMOLO_WEB_SETUP_TIMEOUT_MS to finish TLS and send a request.
        if (atomic_load(&w->live) >= REMOLO_WEB_MAX_CONNECTIONS) {
            atomic_fetch_add(&w->st.refused_full, 1);
            close(fd);
            continue;
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) { close(fd); continue; }
        c->web = w;
        c->fd = fd;
        c->peer = peer;
        c->relay = -1;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        atomic_fetch_add(&w->live, 1);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old); // signals stay with the command's own thread
        pthread_t t;
        int r = pthread_create(&t, &attr, conn_thread, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (r != 0) {
            atomic_fetch_sub(&w->live, 1);
            close(fd);
            free(c);
        }
    }
    return NULL;
}

static int resolve(const char *host, uint16_t port, int passive, struct sockaddr_storage *out, socklen_t *len) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0)}, *res;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    if (getaddrinfo(host, ps, &hints, &res) != 0) {
        hints.ai_flags &= ~AI_NUMERICHOST;
        if (getaddrinfo(host, ps, &hints, &res) != 0) return -1;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static const char *file_err(const char *what, const char *path, char *buf, size_t len) {
    snprintf(buf, len, "%s %s", what, path);
    return buf;
}

struct remolo_web *remolo_web_start(const struct remolo_web_config *cfg, char *err, size_t err_len) {
    char msg[600];
    errno = 0;
    // A browser that goes away mid-write must not end the receiver with
    // SIGPIPE (OpenSSL writes to the socket with write(2)).
    signal(SIGPIPE, SIG_IGN);
    struct remolo_web *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->listen_fd = -1;
    w->stop_pipe[0] = w->stop_pipe[1] = -1;
    pthread_mutex_init(&w->relays_lock, NULL);
    if (resolve(cfg->target_host, cfg->target_port, 0, &w->target, &w->target_len) != 0) {
        snprintf(err, err_len, "cannot resolve the receiver's address %s", cfg->target_host);
        goto fail;
    }
    w->ctx = SSL_CTX_new(TLS_server_method());
    if (!w->ctx) { set_err(err, err_len, "TLS setup failed"); goto fail; }
    // TLS 1.2 or 1.3 (RFC 8446); every browser with WebCrypto X25519 has 1.3.
    SSL_CTX_set_min_proto_version(w->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(w->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    // TLS 1.2 with AEAD suites only (no CBC, whose MAC-then-encrypt is the
    // root of Lucky Thirteen and its kind), forward secret, for the page's
    // P-256 key: Mozilla's "intermediate" list, ECDSA part. TLS 1.3's
    // suites are all AEAD and stay OpenSSL's defaults.
    if (SSL_CTX_set_cipher_list(w->ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                                        "ECDHE-ECDSA-CHACHA20-POLY1305") != 1) {
        set_err(err, err_len, "TLS setup failed: this OpenSSL offers none of the TLS 1.2 AEAD suites");
        goto fail;
    }
    SSL_CTX_set_mode(w->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(w->ctx, cfg->cert_path) != 1) {
        set_err(err, err_len, file_err("cannot load the web certificate", cfg->cert_path, msg, sizeof msg));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(w->ctx, cfg->key_path, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(w->ctx) != 1) {
        set_err(err, err_len, file_err("cannot load the web key (delete it and its certificate to make new ones)",
                                       cfg->key_path, msg, sizeof msg));
        goto fail;
    }
    w->files = calloc(cfg->file_count ? cfg->file_count : 1, sizeof *w->files);
    for (size_t i = 0; i < cfg->file_count; i++) {
        struct remolo_web_file f = cfg->files[i];
        uint8_t *d = malloc(f.length ? f.length : 1);
        memcpy(d, f.data, f.length);
        w->files[i] = (struct remolo_web_file){strdup(f.path), strdup(f.content_type), d, f.length};
    }
    w->file_count = cfg->file_count;

    struct sockaddr_storage la;
    socklen_t ll;
    if (resolve(cfg->listen_host, cfg->listen_port, 1, &la, &ll) != 0) {
        snprintf(err, err_len, "--web: cannot use the address %s; give an address of this machine, e.g. 0.0.0.0:8443",
                 cfg->listen_host);
        goto fail;
    }
    w->listen_fd = socket(la.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (w->listen_fd >= 0) setsockopt(w->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (w->listen_fd < 0 || bind(w->listen_fd, (struct sockaddr *)&la, ll) != 0 || listen(w->listen_fd, 64) != 0) {
        snprintf(err, err_len, "--web: cannot listen on %s:%u (%s); pick a free port, e.g. --web 8443",
                 cfg->listen_host, cfg->listen_port, strerror(errno));
        goto fail;
    }
    getsockname(w->listen_fd, (struct sockaddr *)&la, &ll);
    w->port = ntohs(la.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&la)->sin6_port
                                             : ((struct sockaddr_in *)&la)->sin_port);
    if (pipe2(w->stop_pipe, O_CLOEXEC) != 0) { set_err(err, err_len, "pipe"); goto fail; }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = pthread_create(&w->accept_thread, NULL, accept_thread, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) { errno = r; set_err(err, err_len, "cannot start the web thread"); goto fail; }
    return w;
fail:
    if (w->listen_fd >= 0) close(w->listen_fd);
    if (w->stop_pipe[0] >= 0) { close(w->stop_pipe[0]); close(w->stop_pipe[1]); }
    if (w->ctx) SSL_CTX_free(w->ctx);
    for (size_t i = 0; i < w->file_count; i++) {
        free((void *)w->files[i].path); free((void *)w->files[i].content_type); free((void *)w->files[i].data);
    }
    free(w->files);
    pthread_mutex_destroy(&w->relays_lock);
    free(w);
    return NULL;
}

uint16_t remolo_web_port(const struct remolo_web *w) { return w->port; }

void remolo_web_get_stats(const struct remolo_web *w, struct remolo_web_stats *o) {
    struct remolo_web *m = (struct remolo_web *)w;
    o->connections = atomic_load(&m->st.connections);
    o->refused_full = atomic_load(&m->st.refused_full);
    o->tls_failed = atomic_load(&m->st.tls_failed);
    o->requests = atomic_load(&m->st.requests);
    o->not_found = atomic_load(&m->st.not_found);
    o->bad_requests = atomic_load(&m->st.bad_requests);
    o->websockets = atomic_load(&m->st.websockets);
    o->ws_stream_messages = atomic_load(&m->st.ws_stream_messages);
    o->ws_datagrams = atomic_load(&m->st.ws_datagrams);
    o->ws_closed_protocol = atomic_load(&m->st.ws_closed_protocol);
}

void remolo_web_stop(struct remolo_web *w) {
    if (!w) return;
    atomic_store(&w->stopping, 1);
    ssize_t ignored = write(w->stop_pipe[1], "x", 1);
    (void)ignored;
    pthread_join(w->accept_thread, NULL);
    // Connection threads see the pipe in their next poll; give them a
    // moment to send their close frames. One still stuck in a write after
    // 2 s keeps the server's memory (it is the process's last act anyway).
    for (int i = 0; i < 200 && atomic_load(&w->live) > 0; i++) usleep(10000);
    close(w->listen_fd);
    if (atomic_load(&w->live) > 0) return;
    close(w->stop_pipe[0]);
    close(w->stop_pipe[1]);
    SSL_CTX_free(w->ctx);
    for (size_t i = 0; i < w->file_count; i++) {
        free((void *)w->files[i].path); free((void *)w->files[i].content_type); free((void *)w->files[i].data);
    }
    free(w->files);
    pthread_mutex_destroy(&w->relays_lock);
    free(w);
}
