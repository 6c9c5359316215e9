#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of Tests/Fuzz/web_bridge.c: what the web bridge
reads after TLS, as Chromium, Firefox and WebKit send it (their request
heads, the page's WebSocket messages, masked as a browser masks them), and
each way of getting it wrong (fragments with control frames between them,
oversized and lying lengths, requests with bodies, bytes HTTP forbids).
Rerun after changing the bridge's limits:
    python3 Tests/Fuzz/make_corpus_web_bridge.py
"""
import os
import random
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "web_bridge")
HOST = b"192.168.1.20:8443"
rnd = random.Random(6455)  # reproducible masks and payloads

CHROMIUM_GET = (b"GET / HTTP/1.1\r\nHost: " + HOST + b"\r\nConnection: keep-alive\r\n"
                b"sec-ch-ua: \"Chromium\";v=\"139\", \"Not;A=Brand\";v=\"99\"\r\nsec-ch-ua-mobile: ?1\r\n"
                b"sec-ch-ua-platform: \"Android\"\r\nUpgrade-Insecure-Requests: 1\r\n"
                b"User-Agent: Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                b"Chrome/139.0.0.0 Mobile Safari/537.36\r\n"
                b"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n"
                b"Sec-Fetch-Site: none\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-User: ?1\r\nSec-Fetch-Dest: document\r\n"
                b"Accept-Encoding: gzip, deflate, br, zstd\r\nAccept-Language: en-GB,en;q=0.9\r\n\r\n")
CHROMIUM_SCRIPT = (b"GET /app.js HTTP/1.1\r\nHost: " + HOST + b"\r\nConnection: keep-alive\r\n"
                   b"Origin: https://" + HOST + b"\r\nSec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: cors\r\n"
                   b"Sec-Fetch-Dest: script\r\nReferer: https://" + HOST + b"/\r\nAccept: */*\r\n\r\n")
CHROMIUM_WS = (b"GET /ws HTTP/1.1\r\nHost: " + HOST + b"\r\nConnection: Upgrade\r\nPragma: no-cache\r\n"
               b"Cache-Control: no-cache\r\nUser-Agent: Mozilla/5.0 (Linux; Android 14) Chrome/139.0.0.0\r\n"
               b"Upgrade: websocket\r\nOrigin: https://" + HOST + b"\r\nSec-WebSocket-Version: 13\r\n"
               b"Accept-Encoding: gzip, deflate, br, zstd\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
FIREFOX_WS = (b"GET /ws HTTP/1.1\r\nHost: " + HOST + b"\r\nUser-Agent: Mozilla/5.0 (Android 14; Mobile; rv:140.0) "
              b"Gecko/140.0 Firefox/140.0\r\nAccept: */*\r\nAccept-Language: en-US,en;q=0.5\r\n"
              b"Accept-Encoding: gzip, deflate, br, zstd\r\nSec-WebSocket-Version: 13\r\n"
              b"Origin: https://" + HOST + b"\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
              b"Sec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\nConnection: keep-alive, Upgrade\r\n"
              b"Sec-Fetch-Dest: empty\r\nSec-Fetch-Mode: websocket\r\nSec-Fetch-Site: same-origin\r\n"
              b"Pragma: no-cache\r\nCache-Control: no-cache\r\nUpgrade: websocket\r\n\r\n")
WEBKIT_WS = (b"GET /ws HTTP/1.1\r\nHost: " + HOST + b"\r\nSec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEC==\r\n"
             b"Sec-WebSocket-Version: 13\r\nUpgrade: websocket\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
             b"Origin: https://" + HOST + b"\r\nUser-Agent: Mozilla/5.0 (iPhone; CPU iPhone OS 18_5 like Mac OS X) "
             b"AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.5 Mobile/15E148 Safari/604.1\r\n"
             b"Connection: Upgrade\r\nPragma: no-cache\r\nCache-Control: no-cache\r\n\r\n")


def frame(op, payload, fin=True, mask=True, length=None, rsv=0, form=None):
    """One client frame; form forces the 7, 16 or 64-bit length encoding."""
    n = len(payload) if length is None else length
    b0 = (0x80 if fin else 0) | rsv | op
    m = 0x80 if mask else 0
    form = form or (7 if n < 126 else 16 if n < 65536 else 64)
    if form == 7:
        h = bytes([b0, m | n])
    elif form == 16:
        h = bytes([b0, m | 126]) + struct.pack(">H", n)
    else:
        h = bytes([b0, m | 127]) + struct.pack(">Q", n)
    if not mask:
        return h + payload
    key = bytes(rnd.randrange(256) for _ in range(4))
    return h + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def datagram():
    return b"\x01" + bytes(rnd.randrange(256) for _ in range(49))


def stream(n):
    return b"\x00" + bytes(rnd.randrange(256) for _ in range(n))


CLOSE = frame(0x8, struct.pack(">H", 1000) + b"bye")
SEEDS = {
    # What the browsers send.
    "http-chromium-page": CHROMIUM_GET + CHROMIUM_SCRIPT + CHROMIUM_SCRIPT.replace(b"/app.js", b"/style.css?v=2"),
    "http-keepalive-then-close": CHROMIUM_GET + b"GET /app.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                 + CHROMIUM_GET,
    "http-head-in-pieces": CHROMIUM_GET[:7],
    "http-404": b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
    "http-1.0": b"GET /index.html HTTP/1.0\r\n\r\n",
    "ws-chromium-session": CHROMIUM_WS + frame(0x2, stream(96)) + frame(0x2, stream(64))
                           + b"".join(frame(0x2, datagram()) for _ in range(6)) + CLOSE,
    "ws-firefox-session": FIREFOX_WS + frame(0x2, stream(48)) + frame(0x2, datagram()) + frame(0x9, b"ping")
                          + frame(0xA, b"") + frame(0x2, datagram()) + CLOSE,
    "ws-webkit-session": WEBKIT_WS + frame(0x2, stream(538)) + frame(0x2, datagram()) + frame(0x8, b""),
    "ws-16bit-length": CHROMIUM_WS + frame(0x2, stream(300), form=16) + frame(0x2, datagram(), form=64),
    "ws-fragmented": CHROMIUM_WS + frame(0x2, b"\x00abc", fin=False) + frame(0x9, b"mid")
                     + frame(0x0, b"def", fin=False) + frame(0xA, b"pong") + frame(0x0, b"ghi") + CLOSE,
    "ws-fragmented-datagram": FIREFOX_WS + frame(0x2, datagram()[:20], fin=False) + frame(0x0, bytes(30)) + CLOSE,
    "ws-max-message": CHROMIUM_WS + frame(0x2, stream(1023)) + CLOSE,
    "ws-frames-in-pieces": CHROMIUM_WS + frame(0x2, datagram())[:30],
    # Refused: HTTP.
    "bad-post-body": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
    "bad-second-length": b"GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 7\r\n\r\nGET /x",
    "bad-chunked": b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "bad-nul": b"GET / HTTP/1.1\x00\r\nHost: x\r\n\r\n",
    "bad-bare-lf": b"GET / HTTP/1.1\nHost: x\r\n\r\n",
    "bad-bare-cr": b"GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n",
    "bad-long-target": b"GET /" + b"a" * 600 + b" HTTP/1.1\r\n\r\n",
    "bad-headers-9k": b"GET / HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n",
    "bad-version": b"GET / HTTP/2.0\r\n\r\n",
    "bad-space-before-colon": b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "bad-folded-header": b"GET / HTTP/1.1\r\nHost: x\r\n continued\r\n\r\n",
    "bad-method": b"DELETE / HTTP/1.1\r\n\r\n",
    "bad-ws-no-upgrade": b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n",
    "bad-ws-version": CHROMIUM_WS.replace(b"Version: 13", b"Version: 8"),
    "bad-ws-key": CHROMIUM_WS.replace(b"dGhlIHNhbXBsZSBub25jZQ==", b"dGhlIHNhbXBsZSBub25jZQ"),
    "bad-ws-key-chars": CHROMIUM_WS.replace(b"dGhlIHNhbXBsZSBub25jZQ==", b"dGhlIHNhbXBsZSBub2\x01jZQ=="),
    "bad-ws-origin": CHROMIUM_WS.replace(b"Origin: https://" + HOST, b"Origin: https://evil.example"),
    # Refused: WebSocket frames.
    "bad-oversized": CHROMIUM_WS + frame(0x2, b"", length=100000)[:10] + b"mask",
    "bad-64bit-top-bit": CHROMIUM_WS + frame(0x2, b"\x00abcd", fin=False) + frame(0x0, b"", length=(1 << 64) - 5)[:10]
                         + b"mask" + b"x" * 64,
    "bad-wrapping-length": CHROMIUM_WS + frame(0x2, b"\x00abcd", fin=False)
                           + frame(0x0, b"", length=(1 << 63) - 1)[:10] + b"mask" + b"x" * 64,
    "bad-one-over": CHROMIUM_WS + frame(0x2, b"\x00" * 600, fin=False) + frame(0x0, b"\x00" * 425),
    "bad-unmasked": CHROMIUM_WS + frame(0x2, datagram(), mask=False),
    "bad-text": CHROMIUM_WS + frame(0x1, b"hello"),
    "bad-rsv": CHROMIUM_WS + frame(0x2, datagram(), rsv=0x40),
    "bad-opcode": CHROMIUM_WS + frame(0x3, b"x"),
    "bad-control-fragmented": CHROMIUM_WS + frame(0x9, b"x", fin=False),
    "bad-control-long": CHROMIUM_WS + frame(0x9, bytes(126), form=16),
    "bad-continuation-first": CHROMIUM_WS + frame(0x0, b"\x00ab"),
    "bad-new-message-inside": CHROMIUM_WS + frame(0x2, b"\x00ab", fin=False) + frame(0x2, b"\x00cd"),
    "bad-tag": CHROMIUM_WS + frame(0x2, b"\x07" + bytes(49)),
    "bad-datagram-length": CHROMIUM_WS + frame(0x2, b"\x01" + bytes(10)),
    "bad-empty-message": CHROMIUM_WS + frame(0x2, b""),
    "bad-close-one-byte": CHROMIUM_WS + frame(0x8, b"\x03"),
}


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {OUT}")


if __name__ == "__main__":
    main()
