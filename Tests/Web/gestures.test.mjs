// The page's gestures on the wire (docs/protocol.md, "Gestures (feature
// bit 3)"): the 65-byte gesture datagram against an independent seal with
// node:crypto, the bounds it refuses, the gesture end message byte for
// byte, the hello's feature bits, and the states GestureFramer makes per
// frame (absolute, the first and last marked, renewed at least every
// 100 ms while still). The touches-to-bytes flow is gesture-flow.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCipheriv } from "node:crypto";
import { DatagramSealer, sealDatagram, openDatagram, gesture, motion, heartbeat, Kind, GESTURE_LIMITS,
  DATAGRAM_LENGTH, REDUNDANT_DATAGRAM_LENGTH } from "../../Sources/RemoloWeb/page/datagram.js";
import { encodeControlMessage, decodeControlMessage, ControlFrameError, Feature } from "../../Sources/RemoloWeb/page/control.js";
import { helloFeatures } from "../../Sources/RemoloWeb/page/link.js";
import { GestureFramer, RENEW_US } from "../../Sources/RemoloWeb/page/gestures.js";
import { toHex, fromHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

const key = Uint8Array.from({ length: 32 }, (_, i) => i);
const sessionId = utf8("remolo-A");

/** The datagram written from docs/protocol.md alone, sealed by node's own ChaCha20-Poly1305. */
function reference(counter, { xUm, yUm, tx, id, type, fingers, flags, scale, angle }) {
  const header = Buffer.alloc(16);
  header.set(sessionId, 0);
  header.writeBigUInt64LE(BigInt(counter), 8);
  const pt = Buffer.alloc(33);
  pt.writeUInt8(6, 0);
  pt.writeInt32LE(xUm, 1);
  pt.writeInt32LE(yUm, 5);
  pt.writeBigUInt64LE(BigInt(tx), 9);
  pt.set([id, type, fingers, flags], 17);
  pt.writeInt32LE(scale, 21);
  pt.writeInt32LE(angle, 25);
  // bytes 29..32 stay zero
  const nonce = Buffer.alloc(12);
  nonce.writeBigUInt64LE(BigInt(counter), 4);
  const c = createCipheriv("chacha20-poly1305", Buffer.from(key), nonce, { authTagLength: 16 });
  c.setAAD(header, { plaintextLength: pt.length });
  return Buffer.concat([header, c.update(pt), c.final(), c.getAuthTag()]);
}

// [counter, the page's state, the same on the wire, tx_us]
const known = [
  /* 1 */ [0, { id: 0, type: "swipe", fingers: 3, xUm: 19050, yUm: -3175 }, { type: 1, fingers: 3, flags: 0, scale: 65536, angle: 0 }, 1_000_000],
  /* 2 */ [1, { id: 1, type: "swipe", fingers: 4, last: true, xUm: -500_000, yUm: 500_000 }, { type: 1, fingers: 4, flags: 1, scale: 65536, angle: 0 }, 1_008_333],
  /* 3 */ [2, { id: 2, type: "pinch", fingers: 2, xUm: 1500, yUm: -20, scaleQ16: 98304, angleUrad: -785398 }, { type: 2, fingers: 2, flags: 0, scale: 98304, angle: -785398 }, 2n ** 53n],
  /* 4 */ [7, { id: 255, type: "pinch", fingers: 4, last: true, scaleQ16: 1024, angleUrad: 25_132_741 }, { type: 2, fingers: 4, flags: 1, scale: 1024, angle: 25_132_741 }, 0],
  /* 5 */ [2n ** 64n - 1n, { id: 9, type: "pinch", fingers: 3, scaleQ16: 4_194_304, angleUrad: -25_132_741 }, { type: 2, fingers: 3, flags: 0, scale: 4_194_304, angle: -25_132_741 }, 1],
];

test("1: the gesture datagram is 65 bytes, as node:crypto seals the documented layout, and opens to its fields", () => {
  for (const [i, [counter, s, wire, tx]] of known.entries()) {
    const d = sealDatagram(key, sessionId, counter, gesture(s), tx);
    assert.equal(d.length, REDUNDANT_DATAGRAM_LENGTH, `case ${i + 1}`);
    const want = reference(counter, { xUm: s.xUm ?? 0, yUm: s.yUm ?? 0, tx, id: s.id, ...wire });
    assert.equal(toHex(d), want.toString("hex"), `case ${i + 1}`);
    const o = openDatagram(key, d);
    assert.deepEqual([o.counter, o.kind, o.a, o.b, o.txMicros], [BigInt(counter), Kind.gesture, s.xUm ?? 0, s.yUm ?? 0, BigInt(tx)], `case ${i + 1}`);
    assert.deepEqual(o.g, { id: s.id, type: wire.type, fingers: wire.fingers, flags: wire.flags, scaleQ16: wire.scale, angleUrad: wire.angle }, `case ${i + 1}`);
  }
  // Case 1 pinned (key 00..1f, "remolo-A", counter 0): a three-finger swipe 120 CSS px right, 20 up.
  assert.equal(toHex(sealDatagram(key, sessionId, 0, gesture(known[0][1]), 1_000_000)),
    "72656d6f6c6f2d41" + "0000000000000000" + "1ed20831ad7f552eec211e6eaf434e27f8b1f2f6e1ad5b5decf8fc122a35755c" + "729d2edce73bcffa5835b5e2c6690955e6");
});

test("2: one counter for every datagram of the session; a gesture carries no totals, with or without redundancy", () => {
  for (const redundant of [false, true]) {
    const s = new DatagramSealer(key, sessionId);
    s.redundant = redundant;
    const out = [s.seal(motion(256, 0), 1), s.seal(gesture({ id: 0, type: "swipe", fingers: 3, xUm: 10 }), 2), s.seal(heartbeat(), 3)];
    const base = redundant ? REDUNDANT_DATAGRAM_LENGTH : DATAGRAM_LENGTH;
    assert.deepEqual(out.map((d) => d.length), [base, REDUNDANT_DATAGRAM_LENGTH, base], `redundant ${redundant}`);
    const opened = out.map((d) => openDatagram(key, d));
    assert.deepEqual(opened.map((o) => o.counter), [0n, 1n, 2n], `redundant ${redundant}: counters`);
    assert.equal(opened[1].totals, undefined, "a gesture has no totals");
    if (redundant) assert.deepEqual(opened[2].totals, [256, 0, 0, 0], "the gesture moved no total");
  }
});

test("3: the bounds: the edges are sealed, one past any of them throws saying what the receiver takes", () => {
  const L = GESTURE_LIMITS;
  const edges = [
    /* 1 */ { id: 0, type: "swipe", fingers: 3, xUm: L.offsetUm, yUm: -L.offsetUm },
    /* 2 */ { id: 255, type: "swipe", fingers: 4 },
    /* 3 */ { id: 0, type: "pinch", fingers: 2, scaleQ16: L.scaleQ16[0], angleUrad: L.angleUrad },
    /* 4 */ { id: 0, type: "pinch", fingers: 4, scaleQ16: L.scaleQ16[1], angleUrad: -L.angleUrad, xUm: -L.offsetUm },
  ];
  for (const [i, s] of edges.entries()) assert.equal(sealDatagram(key, sessionId, 0, gesture(s), 0).length, 65, `edge ${i + 1}`);
  const refused = [
    /*  1 */ { id: 0, type: "swipe", fingers: 2 },
    /*  2 */ { id: 0, type: "swipe", fingers: 5 },
    /*  3 */ { id: 0, type: "swipe", fingers: 3, scaleQ16: 65537 },
    /*  4 */ { id: 0, type: "swipe", fingers: 3, angleUrad: 1 },
    /*  5 */ { id: 0, type: "pinch", fingers: 1 },
    /*  6 */ { id: 0, type: "pinch", fingers: 5 },
    /*  7 */ { id: 0, type: "pinch", fingers: 2.5 },
    /*  8 */ { id: 0, type: "pinch", fingers: 2, scaleQ16: L.scaleQ16[0] - 1 },
    /*  9 */ { id: 0, type: "pinch", fingers: 2, scaleQ16: L.scaleQ16[1] + 1 },
    /* 10 */ { id: 0, type: "pinch", fingers: 2, angleUrad: L.angleUrad + 1 },
    /* 11 */ { id: 0, type: "pinch", fingers: 2, angleUrad: -L.angleUrad - 1 },
    /* 12 */ { id: 0, type: "pinch", fingers: 2, scaleQ16: 65536.5 },
    /* 13 */ { id: 0, type: "swipe", fingers: 3, xUm: L.offsetUm + 1 },
    /* 14 */ { id: 0, type: "swipe", fingers: 3, yUm: -L.offsetUm - 1 },
    /* 15 */ { id: 0, type: "swipe", fingers: 3, xUm: 0.5 },
    /* 16 */ { id: 256, type: "swipe", fingers: 3 },
    /* 17 */ { id: -1, type: "swipe", fingers: 3 },
    /* 18 */ { id: 0, type: "tap", fingers: 3 },
    /* 19 */ { id: 0, type: "toString", fingers: 3 },
    /* 20 */ { id: 0, type: 1, fingers: 3 },
  ];
  for (const [i, s] of refused.entries()) assert.throws(() => gesture(s), (e) => e instanceof RangeError && /a swipe of 3 or 4 fingers/.test(e.message), `refused ${i + 1}`);
  assert.throws(() => sealDatagram(key, sessionId, 0, gesture(edges[0]), -1), /tx_us/, "a sender time before 0");
});

test("4: the gesture end message (0x10): its exact bytes, back, and what is refused", () => {
  const known = [
    /* 1 */ [{ type: "gestureEnd", id: 7, senderTimeNs: 123456789000n }, "10" + "07" + "0000001cbe991a08"],
    /* 2 */ [{ type: "gestureEnd", id: 0, senderTimeNs: 0n }, "10" + "00" + "0000000000000000"],
    /* 3 */ [{ type: "gestureEnd", id: 255, senderTimeNs: 2n ** 64n - 1n }, "10" + "ff" + "ffffffffffffffff"],
  ];
  for (const [i, [m, hex]] of known.entries()) {
    assert.equal(toHex(encodeControlMessage(m)), hex, `case ${i + 1}`);
    assert.deepEqual(decodeControlMessage(fromHex(hex)), m, `case ${i + 1}`);
  }
  const short = ["10" + "07" + "0000001cbe991a", "10" + "07" + "0000001cbe991a0800"];
  for (const hex of short) {
    assert.throws(() => decodeControlMessage(fromHex(hex)), (e) => e instanceof ControlFrameError && /type 0x10 is 10 bytes/.test(e.message), hex);
  }
  assert.throws(() => encodeControlMessage({ type: "gestureEnd", id: 256, senderTimeNs: 0n }), /id must be a u8/);
  assert.throws(() => encodeControlMessage({ type: "gestureEnd", id: 0, senderTimeNs: -1n }), /senderTimeNs/);
});

test("5: the hello asks for bits 0, 1 and 2 as before, and bit 3 only with the setting on", () => {
  assert.equal(Feature.gestures, 8);
  const cases = [ // [case, data channel, gestures setting, features]
    [1, false, false, 0b0001],
    [2, true, false, 0b0111],
    [3, false, true, 0b1001],
    [4, true, true, 0b1111],
  ];
  for (const [n, dataChannel, gestures, want] of cases) assert.equal(helloFeatures({ dataChannel, gestures }), want, `case ${n}`);
});

test("6: states are absolute from the gesture's start: the first marked, the last flagged, then the end with its time", () => {
  const g = new GestureFramer();
  g.begin("swipe", 3);
  g.update(1.5, -0.25, 1, 0);
  assert.deepEqual(g.frame(8333).states, [{ id: 0, type: "swipe", fingers: 3, last: false, first: true, xUm: 1500, yUm: -250, scaleQ16: 65536, angleUrad: 0 }]);
  g.update(1, 0, 1, 0);
  assert.deepEqual(g.frame(16666).states.map((s) => [s.xUm, s.first]), [[2500, false]], "the sum since the start");
  g.end();
  const f = g.frame(24999);
  assert.deepEqual(f.states.map((s) => [s.xUm, s.last]), [[2500, true]]);
  assert.deepEqual(f.ends, [{ id: 0, tUs: 24999 }], "the end carries its last state's time");
  assert.deepEqual(g.frame(33332), { states: [], ends: [] }, "nothing after the end");
  g.begin("pinch", 2);
  g.update(0, 0, 100, 30);
  const p = g.frame(41665).states[0];
  assert.deepEqual([p.id, p.scaleQ16, p.angleUrad], [1, GESTURE_LIMITS.scaleQ16[1], GESTURE_LIMITS.angleUrad], "the next id, clamped to the wire's bounds");
  g.update(1e6, 0, 0.001, -30);
  const q = g.frame(49998).states[0];
  assert.deepEqual([q.xUm, q.scaleQ16, q.angleUrad], [GESTURE_LIMITS.offsetUm, GESTURE_LIMITS.scaleQ16[0], -GESTURE_LIMITS.angleUrad]);
  for (const s of [p, q]) gesture(s); // every clamped state is sealable
});

test("7: ids go up by one modulo 256; a gesture begun and ended between frames still sends one state, first and last", () => {
  const g = new GestureFramer();
  const ids = [];
  for (let i = 0; i < 258; i++) {
    g.begin("swipe", 4);
    g.update(0.1, 0, 1, 0);
    g.end();
    const f = g.frame(i * 8333);
    assert.deepEqual(f.states.map((s) => [s.first, s.last]), [[true, true]], `gesture ${i}`);
    ids.push(f.ends[0].id);
  }
  assert.deepEqual(ids.slice(253), [253, 254, 255, 0, 1]);
});

test("8: a still gesture is renewed at least every 100 ms, whatever the frame rate; a new session sends nothing of it", () => {
  const cases = [ // [case, frame interval, FrameClock's period (0: not measured yet), fewest and most us between states]
    [1, 33_333, 33_333, RENEW_US - 33_333, RENEW_US],
    [2, 16_667, 16_667, RENEW_US - 16_667, RENEW_US],
    [3, 8_333, 8_333, RENEW_US - 8_333, RENEW_US],
    [4, 6_944, 6_944, RENEW_US - 6_944, RENEW_US],
    [5, 11_111, 11_111, RENEW_US - 11_111, RENEW_US],
    [6, 8_333, 0, RENEW_US, RENEW_US + 8_333],
  ];
  for (const [n, interval, periodUs, lo, hi] of cases) {
    const g = new GestureFramer();
    g.begin("swipe", 3);
    g.update(2, 0, 1, 0);
    const sent = [];
    for (let t = 0; t <= 2_000_000; t += interval) if (g.frame(t, periodUs).states.length) sent.push(t);
    const gaps = sent.slice(1).map((t, i) => t - sent[i]);
    assert.ok(gaps.length >= 2_000_000 / hi - 1, `case ${n}: ${gaps.length} renewals`);
    for (const gap of gaps) assert.ok(gap > lo - 1 && gap <= hi, `case ${n}: ${gap} us between states`);
  }
  const g = new GestureFramer();
  g.begin("pinch", 2);
  g.update(0, 0, 1.2, 0);
  g.frame(0);
  g.end();
  g.discard();
  assert.deepEqual(g.frame(8333), { states: [], ends: [] }, "discarded: no last state, no end");
});
