// The page's gestures (docs/protocol.md, "Gestures (feature bit 3)"): the
// 65-byte gesture datagram against an independent seal with node:crypto,
// the bounds, the gesture end message, the states the page sends per
// frame, and the phone's touches through the real rules and Trackpad: a
// three-finger swipe and a pinch become states with the right counts and
// scales where gestures are on; two fingers still scroll; nothing new
// where the receiver did not grant them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCipheriv } from "node:crypto";
import { DatagramSealer, openDatagram, gesture, motion, Kind, REDUNDANT_DATAGRAM_LENGTH } from "../../Sources/RemoloWeb/page/datagram.js";
import { encodeControlMessage, decodeControlMessage, Feature } from "../../Sources/RemoloWeb/page/control.js";
import { GestureFramer, RENEW_US } from "../../Sources/RemoloWeb/page/gestures.js";
import { Trackpad, MM_PER_PX } from "../../Sources/RemoloWeb/page/trackpad.js";
import { toHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

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
  const nonce = Buffer.alloc(12);
  nonce.writeBigUInt64LE(BigInt(counter), 4);
  const c = createCipheriv("chacha20-poly1305", Buffer.from(key), nonce, { authTagLength: 16 });
  c.setAAD(header, { plaintextLength: pt.length });
  return Buffer.concat([header, c.update(pt), c.final(), c.getAuthTag()]);
}

test("1: a gesture datagram is the 65-byte gesture layout, byte for byte, and opens to its fields", () => {
  const s = new DatagramSealer(key, sessionId);
  s.redundant = true;   // a gesture carries no totals even where redundancy is granted
  s.seal(motion(256, 0), 1);
  const d = s.seal(gesture({ id: 3, type: "pinch", fingers: 2, last: true, xUm: 1500, yUm: -20, scaleQ16: 98304, angleUrad: -785398 }), 101);
  assert.equal(d.length, REDUNDANT_DATAGRAM_LENGTH);
  const want = reference(1, { xUm: 1500, yUm: -20, tx: 101, id: 3, type: 2, fingers: 2, flags: 1, scale: 98304, angle: -785398 });
  assert.equal(toHex(d), want.toString("hex"));
  const o = openDatagram(key, d);
  assert.equal(o.kind, Kind.gesture);
  assert.deepEqual([o.a, o.b, o.txMicros], [1500, -20, 101n]);
  assert.deepEqual(o.g, { id: 3, type: 2, fingers: 2, flags: 1, scaleQ16: 98304, angleUrad: -785398 });
  assert.deepEqual([...s.totals], [256, 0, 0, 0], "the totals do not move");
});

test("2: what the receiver would refuse is never sealed", () => {
  const bad = [
    { id: 0, type: "swipe", fingers: 2 }, { id: 0, type: "swipe", fingers: 3, scaleQ16: 70000 },
    { id: 0, type: "swipe", fingers: 3, angleUrad: 1 }, { id: 0, type: "pinch", fingers: 5 },
    { id: 0, type: "pinch", fingers: 2, scaleQ16: 1023 }, { id: 0, type: "pinch", fingers: 2, angleUrad: 25_132_742 },
    { id: 256, type: "swipe", fingers: 3 }, { id: 0, type: "tap", fingers: 3 }, { id: 0, type: "swipe", fingers: 3, xUm: 500_001 },
  ];
  for (const [i, b] of bad.entries()) assert.throws(() => gesture(b), RangeError, `case ${i + 1}`);
});

test("3: the gesture end message, exact bytes and back", () => {
  const b = encodeControlMessage({ type: "gestureEnd", id: 7, senderTimeNs: 123456789000n });
  assert.equal(toHex(b), "10" + "07" + "0000001cbe991a08");
  assert.deepEqual(decodeControlMessage(b), { type: "gestureEnd", id: 7, senderTimeNs: 123456789000n });
  assert.throws(() => decodeControlMessage(b.subarray(0, 9)), /10 bytes/);
  assert.equal(Feature.gestures, 8);
});

test("4: states per frame: absolute, one a frame while moving, one every 100 ms while still, the last flagged and ended", () => {
  const g = new GestureFramer();
  g.begin("swipe", 3);
  g.update(1.5, -0.25, 1, 0);
  let f = g.frame(8333);
  assert.deepEqual(f.states, [{ id: 0, type: "swipe", fingers: 3, last: false, xUm: 1500, yUm: -250, scaleQ16: 65536, angleUrad: 0 }]);
  g.update(1, 0, 1, 0);
  assert.deepEqual(g.frame(16666).states.map((s) => s.xUm), [2500]);
  let t = 24999;
  while (t < 16666 + RENEW_US) { assert.deepEqual(g.frame(t).states, [], `still at ${t}`); t += 8333; }
  assert.deepEqual(g.frame(t).states.map((s) => s.xUm), [2500], "renewed");
  g.end();
  f = g.frame(t + 8333);
  assert.deepEqual(f.states.map((s) => s.last), [true]);
  assert.deepEqual(f.ends, [{ id: 0, tUs: t + 8333 }]);
  g.begin("pinch", 2);
  g.update(0, 0, 100, 30);
  const p = g.frame(t + 16666).states[0];
  assert.deepEqual([p.id, p.scaleQ16, p.angleUrad], [1, 4194304, 25_132_741], "clamped to the wire's bounds");
});

/** A Trackpad with gestures on or off, and what it sent. */
function rig(on) {
  const out = { motion: [], scroll: [], buttons: [] };
  const sink = {
    motion: (dx, dy) => out.motion.push([dx, dy]), scroll: (dx, dy) => out.scroll.push([dx, dy]),
    glide() {}, touchStart() {}, button: (code, down) => out.buttons.push([code, down]),
  };
  const tp = new Trackpad(sink, { widthPx: 400, heightPx: 800 });
  const g = new GestureFramer();
  tp.useGestures(g, on);
  return { tp, g, out };
}

/** n fingers 80 px apart moving together by (dx, dy) px a frame, for frames frames; or spreading by `spread` px a frame. */
function touches(r, n, frames, { dx = 0, dy = 0, spread = 0 } = {}) {
  const states = [], ends = [];
  let t = 1_000_000;
  for (let i = 0; i < n; i++) r.tp.down(i, 100 + 80 * i, 400, t);
  for (let k = 1; k <= frames; k++) {
    t += 8333;
    for (let i = 0; i < n; i++) r.tp.move(i, 100 + 80 * i + dx * k + (i - (n - 1) / 2) * spread * k, 400 + dy * k, t);
    r.tp.tick(t);
    const f = r.g.frame(t);
    states.push(...f.states); ends.push(...f.ends);
  }
  t += 8333;
  for (let i = 0; i < n; i++) r.tp.up(i, t);
  r.tp.tick(t);
  const f = r.g.frame(t);
  states.push(...f.states); ends.push(...f.ends);
  return { states, ends };
}

test("5: three fingers swiping are one swipe of 3: its offset is the fingers' travel in micrometres, the last state flagged, one end", () => {
  const r = rig(true);
  const { states, ends } = touches(r, 3, 30, { dx: 4 });
  assert.ok(states.length >= 20, `${states.length} states`);
  assert.ok(states.every((s) => s.type === "swipe" && s.fingers === 3 && s.id === 0));
  const last = states.at(-1);
  assert.equal(last.last, true);
  assert.deepEqual(ends.map((e) => e.id), [0]);
  // 30 frames of 4 px: 120 px, less what the rules held back for the tap's wobble.
  const um = 120 * MM_PER_PX * 1000;
  assert.ok(last.xUm <= um + 1 && last.xUm > um - 3000 * 2, `x ${last.xUm} for ${um}`);
  assert.deepEqual(r.out.motion, [], "the pointer did not move");
  for (const s of states) gesture(s);   // every state is sealable
});

test("6: two fingers spreading are a pinch whose scale grows; two moving together still scroll", () => {
  const p = rig(true);
  const { states } = touches(p, 2, 30, { spread: 3 });
  assert.ok(states.length > 0 && states.every((s) => s.type === "pinch" && s.fingers === 2));
  // 80 px apart, spreading 3 px a frame: 170 px after 30 frames, from where the second landed.
  const want = Math.round((170 / 80) * 65536);
  assert.ok(Math.abs(states.at(-1).scaleQ16 - want) < 1500, `scale ${states.at(-1).scaleQ16} for ${want}`);
  const s = rig(true);
  const sc = touches(s, 2, 30, { dy: 4 });
  assert.deepEqual(sc.states, [], "a scroll is no gesture");
  assert.ok(s.out.scroll.length > 0, "it scrolls");
});

test("7: where the receiver did not grant gestures, three fingers send nothing and two always scroll", () => {
  const r = rig(false);
  assert.deepEqual(touches(r, 3, 30, { dx: 4 }), { states: [], ends: [] });
  assert.deepEqual(r.out.motion, []);
  const p = rig(false);
  assert.deepEqual(touches(p, 2, 30, { spread: 3 }).states, []);
  assert.ok(p.out.scroll.length > 0, "the spread scrolls, as before gestures");
});

test("8: hiding the page mid-gesture ends it: the next frame has its last state and its end", () => {
  const r = rig(true);
  let t = 1_000_000;
  for (let i = 0; i < 3; i++) r.tp.down(i, 100 + 80 * i, 400, t);
  for (let k = 1; k <= 10; k++) { t += 8333; for (let i = 0; i < 3; i++) r.tp.move(i, 100 + 80 * i + 5 * k, 400, t); r.g.frame(t); }
  r.tp.cancel(t);
  const f = r.g.frame(t + 8333);
  assert.deepEqual([f.states.map((s) => s.last), f.ends.length], [[true], 1]);
});
