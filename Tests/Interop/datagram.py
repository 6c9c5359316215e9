#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent implementation of Remolo's sealed pointer datagram,
written from the layout in docs/protocol.md (the same text
heads CSources/RemoloPlayoutCore/include/remolo_wire.h), using only the
`cryptography` package (PyPI) for ChaCha20-Poly1305 (RFC 8439).

    datagram.py seal   stdin:  KEYHEX IDHEX COUNTER KIND A B TX_US [MX MY SV SH]
                           or  KEYHEX IDHEX COUNTER 6 A B TX_US g ID TYPE FINGERS FLAGS SCALE ANGLE
                       (one per line; with the four running totals, the
                       65-byte redundant layout; kind 6, the gesture layout)
                       stdout: DATAGRAMHEX
    datagram.py open   stdin:  KEYHEX DATAGRAMHEX
                       stdout: ok IDHEX COUNTER KIND A B TX_US [MX MY SV SH]
                            or ok IDHEX COUNTER 6 A B TX_US g ID TYPE FINGERS FLAGS SCALE ANGLE
                            or drop short|long|bad_tag|bad_kind|bad_field
    datagram.py selftest

`open` handles one datagram at a time; the replay rule (the counter must
increase within a session) belongs to the caller that keeps sessions, and
so does the redundant layout's bookkeeping (which sessions were granted
it, the sums it is compared with): `open` takes 49 and 65 bytes alike.

The redundant layout (feature bit 1, `redundancy`, agreed in hello;
remolo_wire.h and docs/smoothness.md): the plaintext is the 17 bytes below
followed by four u32, the running totals modulo 2^32 of the a and b of every
motion datagram and of every scroll datagram the sender sealed in the
session, this one included: motion x, motion y, scroll v, scroll h.

The gesture layout (feature bit 3, `gestures`; docs/protocol.md, "Gestures
(feature bit 3)"): kind 6, always 65 bytes; a and b are the centroid's
offset in micrometres and the 16 bytes after the base plaintext are the
gesture block: id, type (1 swipe, 2 pinch), fingers, flags (bit 0 last),
i32 scale (Q16), i32 angle (microradians), four zero bytes. `open` takes a
gesture datagram whatever the session was granted (that is the caller's).
"""
import struct
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

DATAGRAM_LEN = 49          # 8 id + 8 counter + 17 ciphertext + 16 tag
REDUNDANT_LEN = 65         # ... + 16 more bytes of sealed totals
HEADER = struct.Struct("<8sQ")        # session id, counter: the aad
PLAINTEXT = struct.Struct("<BiiQ")    # kind, a, b, tx_us
TOTALS = struct.Struct("<IIII")       # motion x, y, scroll v, h (mod 2^32)
GESTURE_BLOCK = struct.Struct("<BBBBiiI")   # id, type, fingers, flags, scale, angle, zero
MOTION, SCROLL, BUTTON, HEARTBEAT, GESTURE = 1, 2, 3, 4, 6
SWIPE, PINCH = 1, 2
MAX_UM = 500_000
SCALE_ONE, SCALE_MIN, SCALE_MAX = 65536, 1024, 4194304
ANGLE_MAX = 25_132_741


def nonce(counter):
    # 96-bit nonce: 32-bit constant 0, then the 64-bit counter, little-endian.
    return b"\x00\x00\x00\x00" + struct.pack("<Q", counter)


def seal(key, session_id, counter, kind, a, b, tx_us, totals=None, gesture=None):
    header = HEADER.pack(session_id, counter)
    plaintext = PLAINTEXT.pack(kind, a, b, tx_us)
    if totals is not None:
        plaintext += TOTALS.pack(*(t % (1 << 32) for t in totals))
    if gesture is not None:
        plaintext += GESTURE_BLOCK.pack(*gesture, 0)
    return header + ChaCha20Poly1305(key).encrypt(nonce(counter), plaintext, header)


def open_datagram(key, datagram):
    if len(datagram) < DATAGRAM_LEN:
        return ("drop", "short")
    if len(datagram) not in (DATAGRAM_LEN, REDUNDANT_LEN):
        return ("drop", "long")
    header = datagram[:HEADER.size]
    session_id, counter = HEADER.unpack(header)
    try:
        plaintext = ChaCha20Poly1305(key).decrypt(nonce(counter), datagram[HEADER.size:], header)
    except InvalidTag:
        return ("drop", "bad_tag")
    kind, a, b, tx_us = PLAINTEXT.unpack(plaintext[:PLAINTEXT.size])
    if kind == GESTURE:
        if len(plaintext) == PLAINTEXT.size:
            return ("drop", "bad_kind")
        gid, gtype, fingers, flags, scale, angle, zero = GESTURE_BLOCK.unpack(plaintext[PLAINTEXT.size:])
        ok = abs(a) <= MAX_UM and abs(b) <= MAX_UM and flags & ~1 == 0 and zero == 0 and (
            (gtype == SWIPE and fingers in (3, 4) and scale == SCALE_ONE and angle == 0) or
            (gtype == PINCH and fingers in (2, 3, 4) and SCALE_MIN <= scale <= SCALE_MAX and abs(angle) <= ANGLE_MAX))
        if not ok:
            return ("drop", "bad_field")
        return ("ok", session_id, counter, kind, a, b, tx_us, "g", gid, gtype, fingers, flags, scale, angle)
    totals = TOTALS.unpack(plaintext[PLAINTEXT.size:]) if len(plaintext) > PLAINTEXT.size else ()
    if kind not in (MOTION, SCROLL, BUTTON, HEARTBEAT):
        return ("drop", "bad_kind")
    if kind == BUTTON and not (0 <= a <= 0xFFFF and b in (0, 1)):
        return ("drop", "bad_field")
    if kind == HEARTBEAT and (a, b) != (0, 0):
        return ("drop", "bad_field")
    return ("ok", session_id, counter, kind, a, b, tx_us) + totals


def selftest():
    # RFC 8439 section 2.8.2: the AEAD this layout is built on.
    key = bytes(range(0x80, 0xA0))
    iv = bytes.fromhex("070000004041424344454647")
    aad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    text = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
            b"for the future, sunscreen would be it.")
    out = ChaCha20Poly1305(key).encrypt(iv, text, aad)
    assert out[-16:].hex() == "1ae10b594f09e26a7e902ecbd0600691", out[-16:].hex()
    k = bytes(32)
    d = seal(k, b"12345678", 7, MOTION, -256, 512, 99)
    assert len(d) == DATAGRAM_LEN and open_datagram(k, d) == ("ok", b"12345678", 7, MOTION, -256, 512, 99)
    bad = bytearray(d)
    bad[20] ^= 1
    assert open_datagram(k, bytes(bad)) == ("drop", "bad_tag")
    r = seal(k, b"12345678", 8, MOTION, 5, -7, 100, (5, -7, 0, 1 << 32))
    assert len(r) == REDUNDANT_LEN and open_datagram(k, r) == ("ok", b"12345678", 8, MOTION, 5, -7, 100,
                                                             5, (1 << 32) - 7, 0, 0)
    g = seal(k, b"12345678", 9, GESTURE, 1500, -20, 101, gesture=(3, PINCH, 2, 1, 98304, -785398))
    assert len(g) == REDUNDANT_LEN and open_datagram(k, g) == ("ok", b"12345678", 9, GESTURE, 1500, -20, 101,
                                                             "g", 3, PINCH, 2, 1, 98304, -785398)
    bad_swipe = seal(k, b"12345678", 10, GESTURE, 0, 0, 102, gesture=(3, SWIPE, 3, 0, 98304, 0))
    assert open_datagram(k, bad_swipe) == ("drop", "bad_field")
    print("ok")


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "selftest":
        selftest()
        return 0
    if mode not in ("seal", "open"):
        sys.stderr.write(__doc__)
        return 2
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        if mode == "seal":
            key, sid = bytes.fromhex(f[0]), bytes.fromhex(f[1])
            counter, kind, a, b, tx = (int(x) for x in f[2:7])
            if len(f) > 7 and f[7] == "g":
                print(seal(key, sid, counter, kind, a, b, tx, gesture=tuple(int(x) for x in f[8:14])).hex())
                continue
            totals = tuple(int(x) for x in f[7:11]) if len(f) >= 11 else None
            print(seal(key, sid, counter, kind, a, b, tx, totals).hex())
        else:
            r = open_datagram(bytes.fromhex(f[0]), bytes.fromhex(f[1]) if len(f) > 1 else b"")
            if r[0] == "ok":
                print("ok", r[1].hex(), *r[2:])
            else:
                print("drop", r[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
