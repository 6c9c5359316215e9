#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of Tests/Fuzz/dcep.c: DATA_CHANNEL_OPEN messages
(RFC 8832) as Chromium and Firefox send them for the page's channel
({ordered: false, maxRetransmits: 0}) and others, and broken ones (lying
lengths, unknown types, the ACK, truncations). Rerun after changing dcep.c:
    python3 Tests/Fuzz/make_corpus_dcep.py
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "dcep")


def open_msg(kind, reliability, label, protocol=b"", priority=256, llen=None, plen=None):
    return struct.pack(">BBHIHH", 0x03, kind, priority, reliability,
                       len(label) if llen is None else llen, len(protocol) if plen is None else plen) + label + protocol


seeds = {
    "page_channel": open_msg(0x81, 0, b"remolo"),
    "reliable": open_msg(0x00, 0, b"chat"),
    "unordered_reliable": open_msg(0x80, 0, b"x"),
    "timed": open_msg(0x82, 250, b"t", b"proto"),
    "rexmit_3": open_msg(0x01, 3, b"", b""),
    "protocol_only": open_msg(0x00, 0, b"", b"webrtc-proto"),
    "long_label": open_msg(0x81, 0, b"L" * 1000, b"P" * 1000),
    "unknown_type": open_msg(0x03, 0, b"x"),
    "lying_label": open_msg(0x81, 0, b"abc", llen=4),
    "lying_protocol": open_msg(0x81, 0, b"abc", b"p", plen=0),
    "ack": b"\x02",
    "header_short": open_msg(0x81, 0, b"")[:11],
    "empty": b"",
}
shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {OUT}")
