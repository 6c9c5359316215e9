// The page's gestures from touches to bytes: CSS-pixel touches through
// the Trackpad and the real touchpad rules, the Framer and GestureFramer,
// framer.js sendFrame (what app.js runs each animation frame) and a Link
// whose socket keeps what it is given: the datagrams opened with the
// session's key, the control messages decoded. Docs: docs/protocol.md,
// "Gestures (feature bit 3)"; docs/phone-page.md, "Gestures".
import { test } from "node:test";
import assert from "node:assert/strict";
import { Link } from "../../Sources/RemoloWeb/page/link.js";
import { Framer, sendFrame, HEARTBEAT_US } from "../../Sources/RemoloWeb/page/framer.js";
import { GestureFramer } from "../../Sources/RemoloWeb/page/gestures.js";
import { Trackpad, MM_PER_PX } from "../../Sources/RemoloWeb/page/trackpad.js";
import { openDatagram, Kind } from "../../Sources/RemoloWeb/page/datagram.js";
import { encodeControlMessage, decodeControlMessage, Feature } from "../../Sources/RemoloWeb/page/control.js";
import { utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

const key = Uint8Array.from({ length: 32 }, (_, i) => i);
const sessionId = utf8("remolo-A");
const PERIOD = 16_667; // 60 Hz
const flat = { pointerSpeed: 1, acceleration: 0, scrollSpeed: 1, naturalScrolling: true };
const GRANTED = Feature.keyboard | Feature.gestures;
const OLDER = Feature.keyboard; // a receiver from before bit 3

/** A WebSocket stand-in (link.js Socket's shape) that keeps what the link sends. */
class Wire {
  constructor() { this.chunks = []; this.ws = { bufferedAmount: 0 }; this.datagrams = []; this.messages = []; }
  write(bytes) { this.messages.push(decodeControlMessage(bytes)); } // the session below seals nothing
  datagram(d) { this.datagrams.push(openDatagram(key, d)); }
  close() { this.closed = true; }
}

/** A link as connect() makes it once the receiver's hello granted `granted`. */
function link(granted) {
  const wire = new Wire();
  const session = { seal: (m) => encodeControlMessage(m), feed: () => [] };
  const l = new Link(wire, session, { peer: new Uint8Array(32), datagramKey: key, sessionId },
    { granted, early: [], keyboard: { spoken: true, granted: true, status: 0 } });
  return { l, wire };
}

/** The page as app.js wires it, at 60 Hz, over a link granted `granted`; `wanted`: the Gestures setting. */
function page(granted, { wanted = true } = {}) {
  const framer = new Framer(flat);
  const gestures = new GestureFramer();
  const trackpad = new Trackpad(framer, { widthPx: 400, heightPx: 800 });
  const p = { framer, gestures, trackpad, t: 1_000_000, ...link(granted) };
  p.connect = (g) => { Object.assign(p, link(g)); gestures.discard(); trackpad.useGestures(gestures, p.l.gesturesGranted && wanted); };
  p.frame = () => {
    p.t += PERIOD;
    trackpad.tick(p.t);
    sendFrame({ framer, gestures, link: p.l, frameUs: p.t, visible: true, periodUs: PERIOD });
  };
  p.down = (pts) => pts.forEach(([x, y], i) => trackpad.down(i, x, y, p.t));
  p.move = (pts) => pts.forEach(([x, y], i) => trackpad.move(i, x, y, p.t));
  p.up = (n) => { for (let i = 0; i < n; i++) trackpad.up(i, p.t); };
  /** Fingers down at `starts`, `frames` frames along at(k, i, start), lifted, then 1 s of frames. */
  p.stroke = (starts, frames, at) => {
    p.down(starts);
    for (let k = 1; k <= frames; k++) { p.move(starts.map((s, i) => at(k, i, s))); p.frame(); }
    p.up(starts.length);
    for (let k = 0; k < 60; k++) p.frame();
  };
  p.idle = (ms) => { for (let k = 0; k < ms * 1000 / PERIOD; k++) p.frame(); };
  p.connect(granted);
  return p;
}

const three = [[100, 400], [180, 400], [260, 400]];
const states = (w) => w.datagrams.filter((d) => d.kind === Kind.gesture);
const ends = (w) => w.messages.filter((m) => m.type === "gestureEnd");

/** Every gesture's states and end on a wire, by id, checked against the protocol's rules for the sender. */
function gesturesOn(w) {
  const all = states(w);
  const out = [];
  for (const s of all) {
    let g = out.at(-1);
    if (!g || g.id !== s.g.id) { g = { id: s.g.id, states: [] }; out.push(g); }
    g.states.push(s);
  }
  for (const g of out) {
    const last = g.states.at(-1);
    assert.equal(last.g.flags, 1, `gesture ${g.id}: its final state is flagged last`);
    assert.ok(g.states.slice(0, -1).every((s) => s.g.flags === 0), `gesture ${g.id}: only the final state is last`);
    const tx = g.states.map((s) => Number(s.txMicros));
    for (let i = 1; i < tx.length; i++) assert.ok(tx[i] - tx[i - 1] <= 100_000, `gesture ${g.id}: ${tx[i] - tx[i - 1]} us between states`);
    const end = ends(w).filter((e) => e.id === g.id);
    assert.equal(end.length, 1, `gesture ${g.id}: one end message`);
    assert.equal(end[0].senderTimeNs, last.txMicros * 1000n, `gesture ${g.id}: the end carries its last state's time, in ns`);
    g.fingers = new Set(g.states.map((s) => s.g.fingers));
    g.type = new Set(g.states.map((s) => s.g.type));
    g.last = last;
    // No heartbeat while it lasts: its states are the heartbeat.
    const between = w.datagrams.filter((d) => d.kind === Kind.heartbeat && d.counter > g.states[0].counter && d.counter < last.counter);
    assert.deepEqual(between, [], `gesture ${g.id}: no heartbeat beside its states`);
  }
  assert.equal(ends(w).length, out.length, "an end for each gesture, none for anything else");
  const counters = w.datagrams.map((d) => d.counter);
  assert.ok(counters.every((c, i) => i === 0 || c === counters[i - 1] + 1n), "one counter for every datagram, no gap");
  return out;
}

test("1: a three-finger swipe, held still midway: one gesture of 3, renewed while still, flagged last, one end; the pointer stays", () => {
  const p = page(GRANTED);
  p.down(three);
  for (let k = 1; k <= 20; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  p.idle(500); // the fingers rest on the glass: no change, renewals only
  for (let k = 21; k <= 30; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  p.up(3);
  p.idle(1000);
  const [g, ...more] = gesturesOn(p.wire);
  assert.deepEqual(more, [], "one gesture");
  assert.deepEqual([g.id, [...g.type], [...g.fingers]], [0, [1], [3]]);
  assert.equal(g.states[0].g.flags, 0, "it begins with a state that is not the last");
  assert.ok(g.states.length >= 5 + 20, `${g.states.length} states: one a frame while moving, renewals while still`);
  // 120 CSS px right is the fingers' travel in micrometres, less what the rules held back for a tap's wobble.
  const um = 120 * MM_PER_PX * 1000;
  assert.ok(g.last.a <= Math.round(um) && g.last.a > um - 3500, `x ${g.last.a} um for ${um}`);
  assert.equal(g.last.b, 0);
  assert.ok(g.states.every((s) => s.g.scaleQ16 === 65536 && s.g.angleUrad === 0), "a swipe's scale is 1, its angle 0");
  assert.deepEqual(p.wire.datagrams.filter((d) => d.kind === Kind.motion || d.kind === Kind.scroll), [], "no motion, no scroll");
  assert.deepEqual(p.framer.sent.gestures, { begun: 1, states: g.states.length, ends: 1 });
  assert.equal(p.framer.sent.datagrams, p.wire.datagrams.length, "sent counts every datagram, gesture states included");
  const hb = p.wire.datagrams.filter((d) => d.kind === Kind.heartbeat && d.counter > g.last.counter);
  assert.ok(hb.length >= 9, `heartbeats again once it ended (${hb.length} in 1 s)`);
  assert.ok(Number(hb[0].txMicros - g.last.txMicros) >= HEARTBEAT_US - PERIOD, "the last state counted as the heartbeat");
  p.l.close();
});

test("2: two fingers spreading are a pinch of 2 whose scale is their spread; two moving together scroll", () => {
  const p = page(GRANTED);
  // 80 px apart, each 3 px out a frame: 260 px apart after 30 frames.
  p.stroke([[160, 300], [240, 300]], 30, (k, i, [x, y]) => [x + (i ? 3 : -3) * k, y]);
  const [g, ...more] = gesturesOn(p.wire);
  assert.deepEqual(more, []);
  assert.deepEqual([g.id, [...g.type], [...g.fingers]], [0, [2], [2]]);
  const want = Math.round((260 / 80) * 65536);
  assert.ok(Math.abs(g.last.g.scaleQ16 - want) <= 2, `scale ${g.last.g.scaleQ16} for ${want}`);
  assert.ok(Math.abs(g.last.g.angleUrad) <= 1, "no turn");
  assert.ok(Math.abs(g.last.a) <= 1 && Math.abs(g.last.b) <= 1, "the centroid stayed");
  const d = page(GRANTED);
  d.stroke([[160, 300], [240, 300]], 30, (k, i, [x, y]) => [x + (i ? 4 : -1) * k, y]);
  assert.deepEqual(gesturesOn(d.wire).map((g) => [...g.type]), [[2]], "spreading while drifting right is a pinch too");
  assert.deepEqual(d.wire.datagrams.filter((x) => x.kind === Kind.scroll), [], "and no scroll");
  const s = page(GRANTED);
  s.stroke([[150, 300], [230, 300]], 20, (k, i, [x, y]) => [x, y + 6 * k]);
  assert.deepEqual(states(s.wire), [], "a scroll is no gesture");
  assert.ok(s.wire.datagrams.some((d) => d.kind === Kind.scroll), "it scrolls");
  p.l.close(); d.l.close(); s.l.close();
});

test("3: the finger count changes mid-swipe: the gesture of 3 ends, one of 4 begins with the next id", () => {
  const p = page(GRANTED);
  p.down(three);
  for (let k = 1; k <= 15; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  p.trackpad.down(3, 340, 400, p.t);
  const four = [...three, [340, 400]];
  for (let k = 16; k <= 30; k++) { p.move(four.map(([x, y], i) => [x + 4 * (i < 3 ? k : k - 15), y])); p.frame(); }
  p.up(4);
  p.idle(200);
  const gs = gesturesOn(p.wire);
  assert.deepEqual(gs.map((g) => [g.id, [...g.fingers]]), [[0, [3]], [1, [4]]]);
  const endOf0 = p.wire.messages.findIndex((m) => m.type === "gestureEnd" && m.id === 0);
  assert.ok(endOf0 >= 0 && gs[0].last.counter < gs[1].states[0].counter, "the last state of 3 before the first of 4");
  assert.deepEqual(p.framer.sent.gestures, { begun: 2, states: gs[0].states.length + gs[1].states.length, ends: 2 });
  p.l.close();
});

test("4: an older receiver (no bit 3), or the setting off: no gesture datagram, no end; three fingers do nothing, two always scroll", () => {
  const cases = [ // [case, granted, Gestures setting]
    [1, OLDER, true],
    [2, Feature.keyboard | Feature.redundancy | Feature.dataChannel, true],
    [3, GRANTED, false],
  ];
  for (const [n, granted, wanted] of cases) {
    const p = page(granted, { wanted });
    p.stroke(three, 30, (k, i, [x, y]) => [x + 4 * k, y]);
    // A pinch that drifts right: where gestures are on, a pinch (test 2's rules); here a scroll of its mean motion.
    p.stroke([[160, 300], [240, 300]], 30, (k, i, [x, y]) => [x + (i ? 4 : -1) * k, y]);
    assert.deepEqual([states(p.wire).length, ends(p.wire).length], [0, 0], `case ${n}: nothing of gestures`);
    assert.deepEqual(p.wire.datagrams.filter((d) => d.kind === Kind.motion), [], `case ${n}: three fingers moved nothing`);
    const h = p.wire.datagrams.filter((d) => d.kind === Kind.scroll).reduce((a, d) => a + d.b, 0);
    assert.ok(h < -256 * 100, `case ${n}: the pinch scrolled horizontally (${h}), as before gestures`);
    assert.deepEqual(p.framer.sent.gestures, { begun: 0, states: 0, ends: 0 }, `case ${n}`);
    p.l.close();
  }
  // Not granted, the link sends neither even when asked to.
  const { l, wire } = link(OLDER);
  assert.equal(l.sendGesture({ id: 0, type: "swipe", fingers: 3, xUm: 1 }, 1), false);
  assert.equal(l.endGesture(0, 1), false);
  assert.deepEqual([wire.datagrams, wire.messages], [[], []]);
  l.close();
});

test("5: a gesture ends when the setting goes off or the page hides: its last state and end at once; the next touch works", () => {
  for (const how of ["setting", "hidden"]) {
    const p = page(GRANTED);
    p.down(three);
    for (let k = 1; k <= 15; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
    const before = states(p.wire).length;
    if (how === "setting") p.trackpad.useGestures(p.gestures, false);
    else p.trackpad.cancel(p.t);
    p.frame();
    const after = states(p.wire);
    assert.deepEqual(after.slice(before).map((s) => s.g.flags), [1], `${how}: its last state in the next frame`);
    assert.deepEqual(ends(p.wire).map((e) => e.id), [0], `${how}: and its end`);
    for (let k = 16; k <= 25; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
    p.up(3);
    p.idle(200);
    assert.equal(states(p.wire).length, after.length, `${how}: the same fingers send nothing more`);
    if (how === "setting") p.trackpad.useGestures(p.gestures, true);
    p.stroke(three, 20, (k, i, [x, y]) => [x, y - 4 * k]);
    const gs = gesturesOn(p.wire);
    assert.deepEqual(gs.map((g) => [g.id, [...g.fingers]]), [[0, [3]], [1, [3]]], `${how}: the next swipe is gesture 1`);
    assert.ok(gs[1].last.b < -10_000, `${how}: up`);
    p.l.close();
  }
});

test("6: the link ends mid-gesture: nothing more on it, nothing of that gesture on the next session, whose gestures start at a new touch", () => {
  const p = page(GRANTED);
  p.down(three);
  for (let k = 1; k <= 15; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  const old = p.wire;
  const sentBefore = old.datagrams.length;
  p.l.end("the receiver went away");
  // app.js onClose: gestures off and dropped.
  p.trackpad.useGestures(p.gestures, false);
  p.gestures.discard();
  for (let k = 16; k <= 20; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  assert.equal(old.datagrams.length, sentBefore, "nothing on an ended link");
  // A new session while the fingers are still down: they begin nothing.
  p.connect(GRANTED);
  p.framer.resetSent();
  for (let k = 21; k <= 40; k++) { p.move(three.map(([x, y]) => [x + 4 * k, y])); p.frame(); }
  p.up(3);
  p.idle(200);
  assert.deepEqual([states(p.wire).length, ends(p.wire).length], [0, 0], "nothing of the old gesture, nor of its fingers");
  p.stroke(three, 20, (k, i, [x, y]) => [x - 4 * k, y]);
  const gs = gesturesOn(p.wire);
  assert.deepEqual(gs.map((g) => [g.id, [...g.fingers]]), [[1, [3]]], "a new touch: a new gesture, the next id");
  assert.ok(gs[0].last.a < -10_000, "left");
  assert.deepEqual(p.framer.sent.gestures, { begun: 1, states: gs[0].states.length, ends: 1 });
  p.l.close();
});

test("7: gesture states take the path and counter every datagram takes, the data channel's sessions included", () => {
  // Node has no RTCPeerConnection: the data channel's session keeps its datagrams on the WebSocket.
  const p = page(GRANTED | Feature.redundancy | Feature.dataChannel);
  p.stroke(three, 30, (k, i, [x, y]) => [x + 4 * k, y]);
  const [g] = gesturesOn(p.wire);
  assert.ok(g.states.length > 10);
  assert.equal(p.l.dataPath.diagnostics.webSocketDatagrams, p.wire.datagrams.length, "every datagram asked the data path first");
  assert.ok(p.wire.datagrams.filter((d) => d.kind !== Kind.gesture).every((d) => d.totals), "the others carry the totals");
  assert.ok(g.states.every((s) => s.totals === undefined), "a gesture state does not");
  p.l.close();
});

test("8: the setting goes off while the rules still hold a swipe back for a tap: nothing of it is ever sent", () => {
  const p = page(GRANTED);
  p.down(three);
  for (let k = 1; k <= 4; k++) { p.move(three.map(([x, y]) => [x + 2 * k, y])); p.frame(); } // 8 px: a tap is still possible
  assert.equal(p.trackpad.recognizer.phase.name, "deciding");
  p.trackpad.useGestures(p.gestures, false);
  for (let k = 5; k <= 30; k++) { p.move(three.map(([x, y]) => [x + 2 * k, y])); p.frame(); }
  p.up(3);
  p.idle(500);
  assert.deepEqual([states(p.wire).length, ends(p.wire).length], [0, 0]);
  assert.deepEqual(p.wire.datagrams.filter((d) => d.kind !== Kind.heartbeat), [], "and three fingers moved nothing");
  p.l.close();
});
