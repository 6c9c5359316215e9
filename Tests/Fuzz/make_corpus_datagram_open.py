#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of Tests/Fuzz/datagram_open.c: datagrams sealed
(by the independent Python implementation) under the harness's test keys,
plus edge cases. Rerun after changing the layout:
    python3 Tests/Fuzz/make_corpus_datagram_open.py
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Interop"))
import datagram as dg  # noqa: E402

KEY_A = bytes(range(32))
KEY_B = bytes(0x80 + i for i in range(32))
ID_A, ID_B = b"remolo-A", b"remolo-B"
OUT = os.path.join(HERE, "corpus", "datagram_open")
BTN_LEFT = 0x110


def a(counter, kind, x=0, y=0, tx=1_000_000):
    return dg.seal(KEY_A, ID_A, counter, kind, x, y, tx)


def b(counter, kind, x=0, y=0, tx=1_000_000, totals=(0, 0, 0, 0)):
    # Session B takes the redundant layout (granted in the harness).
    return dg.seal(KEY_B, ID_B, counter, kind, x, y, tx, totals)


def recipe_totals(counter, kind, x, y, tx, totals, flip=0):
    # The harness's third reading: counter + the redundant plaintext, a bit.
    return struct.pack("<QBiiQIIIIH", counter, kind, x, y, tx, *(t % (1 << 32) for t in totals), flip)


def recipe(counter, kind, x, y, tx, flip=0):
    # The harness's second reading: counter + plaintext, then a bit index.
    return struct.pack("<QBiiQH", counter, kind, x, y, tx, flip)


seeds = {
    "motion": a(0, dg.MOTION, 3 * 256 + 17, -5 * 256),
    "scroll": a(1, dg.SCROLL, 120 * 256, -60 * 256),
    "button_down": a(2, dg.BUTTON, BTN_LEFT, 1),
    "button_up": a(3, dg.BUTTON, BTN_LEFT, 0),
    "heartbeat": a(4, dg.HEARTBEAT),
    "session_b": dg.seal(KEY_B, ID_B, 9, dg.MOTION, 1, 1, 5),
    "counter_max": a(2**64 - 1, dg.MOTION, 1, 1),
    "extreme_deltas": a(5, dg.MOTION, -2**31, 2**31 - 1, 2**64 - 1),
    "bad_kind": a(6, 9, 0, 0),
    "bad_kind_zero": a(6, 0, 0, 0),
    "bad_button_down": a(7, dg.BUTTON, BTN_LEFT, 2),
    "bad_button_code": a(7, dg.BUTTON, 0x10000, 1),
    "bad_heartbeat": a(8, dg.HEARTBEAT, 1, 0),
    "sequence": a(10, dg.MOTION, 1, 2) + a(11, dg.SCROLL, 3, 4) + a(15, dg.BUTTON, BTN_LEFT, 1),
    "sequence_replay": a(20, dg.MOTION, 1) + a(20, dg.MOTION, 1) + a(19, dg.MOTION, 2) + a(21, dg.HEARTBEAT),
    "sequence_two_sessions": a(1, dg.MOTION, 1) + dg.seal(KEY_B, ID_B, 0, dg.MOTION, 2, 2, 2) + a(2, dg.MOTION, 3),
    "unknown_session": dg.seal(KEY_A, b"nobody!!", 0, dg.MOTION, 1, 1, 1),
    "wrong_key": dg.seal(KEY_B, ID_A, 0, dg.MOTION, 1, 1, 1),
    "short": a(0, dg.MOTION, 1, 1)[:48],
    "long": a(0, dg.MOTION, 1, 1) + b"\x00",
    "empty": b"",
    "header_only": ID_A + bytes(8),
    "recipe_button": recipe(3, dg.BUTTON, BTN_LEFT + 2, 1, 77, flip=100),
    "recipe_bad_kind": recipe(1, 200, 5, 5, 1, flip=391),
    "redundant": b(0, dg.MOTION, 5, 6, totals=(5, 6, 0, 0)),
    "redundant_gap": b(0, dg.MOTION, 5, 6, totals=(5, 6, 0, 0)) + b(3, dg.SCROLL, 1, 2, totals=(40, -6, 9, 2))
    + b(4, dg.HEARTBEAT, totals=(41, -6, 9, 2)),
    "redundant_replay": b(2, dg.MOTION, 1, 1, totals=(3, 3, 0, 0)) + b(2, dg.MOTION, 1, 1, totals=(3, 3, 0, 0))
    + b(1, dg.MOTION, 1, 1, totals=(2, 2, 0, 0)),
    "redundant_disagree": b(0, dg.MOTION, 1, 1, totals=(1, 1, 0, 0)) + b(1, dg.MOTION, 1, 1, totals=(99, 1, 0, 0)),
    "redundant_on_a": dg.seal(KEY_A, ID_A, 0, dg.MOTION, 1, 1, 1, (1, 1, 0, 0)),
    "recipe_totals": recipe_totals(7, dg.MOTION, 3, -4, 9, (2**31, -5, 120, 1), flip=300),
    "recipe_totals_heartbeat": recipe_totals(1, dg.HEARTBEAT, 0, 0, 9, (10, 20, 30, 40), flip=2),
    "gesture_pinch": dg.seal(KEY_B, ID_B, 0, dg.GESTURE, 1500, -20, 7, gesture=(3, dg.PINCH, 2, 0, 98304, -785398)),
    "gesture_swipe_last": dg.seal(KEY_B, ID_B, 1, dg.GESTURE, -500000, 0, 7, gesture=(4, dg.SWIPE, 4, 1, 65536, 0)),
    "gesture_owed_gap": b(0, dg.MOTION, 5, 6, totals=(5, 6, 0, 0))
    + dg.seal(KEY_B, ID_B, 2, dg.GESTURE, 10, 10, 8, gesture=(1, dg.SWIPE, 3, 0, 65536, 0))
    + b(3, dg.HEARTBEAT, totals=(12, 6, 0, 0)),
    "gesture_bad_field": dg.seal(KEY_B, ID_B, 0, dg.GESTURE, 0, 0, 7, gesture=(1, dg.SWIPE, 3, 0, 70000, 0)),
    "gesture_on_a": dg.seal(KEY_A, ID_A, 0, dg.GESTURE, 0, 0, 7, gesture=(1, dg.SWIPE, 3, 0, 65536, 0)),
    "recipe_totals_gesture": struct.pack("<QBiiQBBBBiiIH", 5, dg.GESTURE, 2500, -900, 9, 2, dg.PINCH, 3, 1,
                                         131072, 1570796, 0, 77),
    "churn": bytes([0, 1, 2, 3, 0x81, 4, 0x80, 0x83, 5, 6, 0x82] + list(range(7, 48)) + [0x90, 0xA0, 0x85]),
}
tampered = bytearray(seeds["motion"])
tampered[40] ^= 0x80
seeds["bad_tag"] = bytes(tampered)

os.makedirs(OUT, exist_ok=True)
for name, data in sorted(seeds.items()):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {os.path.relpath(OUT)}")
