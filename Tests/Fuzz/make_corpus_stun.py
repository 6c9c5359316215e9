#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of Tests/Fuzz/stun.c: Binding requests as
Chromium and Firefox send them to an ICE-lite agent (USERNAME, PRIORITY,
ICE-CONTROLLING, USE-CANDIDATE, Chromium's GOOG-NETWORK-INFO, then
MESSAGE-INTEGRITY and FINGERPRINT), sealed with the harness's password,
and each way of getting one wrong (other passwords, a bad FINGERPRINT,
lying lengths, attributes after MESSAGE-INTEGRITY, unknown
comprehension-required attributes, responses and indications), plus
recipes for the harness's second mode. Rerun after changing stun.c:
    python3 Tests/Fuzz/make_corpus_stun.py
"""
import hashlib
import hmac
import os
import random
import shutil
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "stun")
PWD = b"fuzzPasswordFuzzPassword"
rnd = random.Random(8489)


def attr(t, v):
    return struct.pack(">HH", t, len(v)) + v + b"\0" * (-len(v) % 4)


def request(attrs, pwd=PWD, kind=0x0001, integrity=True, fingerprint=True, after=b"", txid=None, crc_xor=0):
    txid = txid or bytes(rnd.randrange(256) for _ in range(12))
    body = b"".join(attrs)
    head = lambda n: struct.pack(">HHI", kind, n, 0x2112A442) + txid
    if integrity:
        mac = hmac.new(pwd, head(len(body) + 24) + body, hashlib.sha1).digest()
        body += attr(0x0008, mac)
    body += after
    if fingerprint:
        crc = zlib.crc32(head(len(body) + 8) + body) ^ 0x5354554E ^ crc_xor
        body += struct.pack(">HHI", 0x8028, 4, crc)
    return head(len(body)) + body


def chromium(user=b"ourUfragOurUfrag:thEm", use=True):
    a = [attr(0x0006, user), attr(0xC057, struct.pack(">HH", 1, 10)),
         attr(0x802A, bytes(rnd.randrange(256) for _ in range(8)))]
    if use:
        a.append(attr(0x0025, b""))
    a.append(attr(0x0024, struct.pack(">I", 1853817087)))
    return request(a)


def firefox():
    return request([attr(0x0006, b"ourUfragOurUfrag:7a2b9f01"), attr(0x0024, struct.pack(">I", 1853824767)),
                    attr(0x802A, bytes(8)), attr(0x0025, b"")])


def recipe(user, flags):
    return bytes([len(user)]) + user + bytes(range(12)) + bytes([flags])


seeds = {
    "chromium": chromium(),
    "chromium_consent": chromium(use=False),
    "firefox": firefox(),
    "minimal": request([attr(0x0006, b"a:b")]),
    "long_username": request([attr(0x0006, b"x" * 256 + b":" + b"y" * 256)]),
    "other_password": request([attr(0x0006, b"ourUfragOurUfrag:thEm")], pwd=b"anotherPasswordAnotherPw"),
    "bad_fingerprint": request([attr(0x0006, b"a:b")], crc_xor=1),
    "no_fingerprint": request([attr(0x0006, b"a:b")], fingerprint=False),
    "no_integrity": request([attr(0x0006, b"a:b")], integrity=False),
    "no_username": request([attr(0x0024, b"\0\0\0\1")]),
    "two_usernames": request([attr(0x0006, b"a:b"), attr(0x0006, b"c:d")]),
    "after_integrity": request([attr(0x0006, b"a:b")], after=attr(0x0024, b"\0\0\0\1")),
    "unknown_required": request([attr(0x0006, b"a:b"), attr(0x0777, b"zz")]),
    "unknown_optional": request([attr(0x0006, b"a:b"), attr(0xC0DE, b"zzz")]),
    "response": request([attr(0x0006, b"a:b")], kind=0x0101),
    "indication": request([attr(0x0006, b"a:b")], kind=0x0011),
    "empty_username": request([attr(0x0006, b"")]),
    "header_only": struct.pack(">HHI", 1, 0, 0x2112A442) + bytes(12),
    "short": chromium()[:19],
    "truncated": chromium()[:-4],
    "recipe_plain": recipe(b"ourUfragOurUfrag:thEm", 0),
    "recipe_flags": recipe(b"a:b", 3),
    "recipe_long": recipe(b"u" * 255, 1),
}
lying = bytearray(chromium())
lying[3] += 4
seeds["lying_length"] = bytes(lying)
attr_len = bytearray(firefox())
attr_len[22:24] = struct.pack(">H", 400)
seeds["lying_attribute"] = bytes(attr_len)

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {OUT}")
