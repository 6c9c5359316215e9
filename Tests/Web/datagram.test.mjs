// The page's sealed pointer datagrams against docs/protocol.md's test vector,
// the Swift layout, and tampering.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DatagramSealer, sealDatagram, openDatagram, motion, scroll, button, heartbeat, Kind, DATAGRAM_LENGTH } from "../../Sources/RemoloWeb/page/datagram.js";
import { toHex, fromHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

const key = Uint8Array.from({ length: 32 }, (_, i) => i);
const sessionId = utf8("remolo-A");

test("docs/protocol.md test vector: the 49-byte motion datagram", () => {
  const d = new DatagramSealer(key, sessionId).seal(motion(785, -1280), 1_000_000);
  assert.equal(d.length, DATAGRAM_LENGTH);
  assert.equal(toHex(d),
    "72656d6f6c6f2d41" + "0000000000000000" +
    "19a94131ade65d2eec211e6eaf434e27f8" + "ec8a9dac59b9a2595b102e12e4256cae");
});

test("the counter starts at 0, rises by one, is little-endian in the header and in the nonce", () => {
  const s = new DatagramSealer(key, sessionId);
  for (let i = 0; i < 300; i++) {
    const d = s.seal(heartbeat(), 5);
    assert.equal(toHex(d.subarray(8, 16)), toHex(new Uint8Array(new BigUint64Array([BigInt(i)]).buffer)));
    assert.equal(openDatagram(key, d).counter, BigInt(i));
  }
  // A large counter round-trips (the nonce is 00000000 || counter LE).
  const big = sealDatagram(key, sessionId, 0x0102030405060708n, heartbeat(), 1);
  assert.equal(toHex(big.subarray(8, 16)), "0807060504030201");
  assert.equal(openDatagram(key, big).counter, 0x0102030405060708n);
});

test("every kind's fields land where docs/protocol.md puts them", () => {
  const s = new DatagramSealer(key, sessionId);
  const cases = [
    [motion(-1, 2147483647), { kind: Kind.motion, a: -1, b: 2147483647 }],
    [scroll(-256 * 120, 3), { kind: Kind.scroll, a: -30720, b: 3 }],
    [button(0x110, true), { kind: Kind.button, a: 0x110, b: 1 }],
    [button(0x111, false), { kind: Kind.button, a: 0x111, b: 0 }],
    [heartbeat(), { kind: Kind.heartbeat, a: 0, b: 0 }],
  ];
  for (const [payload, expected] of cases) {
    const o = openDatagram(key, s.seal(payload, 0xfedcba9876543210n));
    assert.deepEqual({ kind: o.kind, a: o.a, b: o.b }, expected);
    assert.equal(o.txMicros, 0xfedcba9876543210n);
  }
  assert.throws(() => button(70000, true), /0\.\.65535/);
  assert.throws(() => motion(2 ** 31, 0), /i32/);
  assert.throws(() => new DatagramSealer(key.subarray(0, 16), sessionId), /32 bytes/);
});

test("any one-bit change of a datagram fails its tag; so do other lengths and keys", () => {
  const d = fromHex("72656d6f6c6f2d41000000000000000019a94131ade65d2eec211e6eaf434e27f8ec8a9dac59b9a2595b102e12e4256cae");
  assert.ok(openDatagram(key, d));
  for (let bit = 0; bit < d.length * 8; bit++) {
    const bad = d.slice();
    bad[bit >> 3] ^= 1 << (bit & 7);
    assert.equal(openDatagram(key, bad), null, `bit ${bit}`);
  }
  assert.equal(openDatagram(key, d.subarray(0, 48)), null);
  const other = key.slice();
  other[31] ^= 1;
  assert.equal(openDatagram(other, d), null);
});
