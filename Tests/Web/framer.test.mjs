// The page's frames: the brief's acceleration curve, Q8 sums with carried
// remainders (nothing lost or invented), buttons before motion, heartbeats
// only when visible and still, and momentum that loses 95% of its speed in
// one second whatever the frame rate.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Framer, gain, HEARTBEAT_US, MOMENTUM_TAU_US, WHEEL_UNITS_PER_PX } from "../../Sources/RemoloWeb/page/framer.js";
import { Trackpad, MM_PER_PX } from "../../Sources/RemoloWeb/page/trackpad.js";

const flat = { pointerSpeed: 1, acceleration: 0, scrollSpeed: 1, naturalScrolling: true };

test("the acceleration curve: 1 up to 120 pt/s, then linear to 1 + 3.5 * acceleration", () => {
  const s = { pointerSpeed: 2, acceleration: 1 };
  assert.equal(gain(1.2, 10_000, s), 2);            // 120 pt/s
  assert.equal(gain(5.7, 10_000, s), 2 * (1 + 1));  // 570 pt/s: +450
  assert.equal(gain(100, 10_000, s), 2 * 4.5);      // capped at 3.5
  assert.equal(gain(3, 0, s), 2, "no interval: no boost");
});

test("Q8 sums carry their remainders: the sent total is the truncated exact total", () => {
  const f = new Framer(flat);
  let exact = 0;
  for (let i = 0; i < 1000; i++) {
    f.motion(0.3337, -0.25, 8000);
    exact += 0.3337 * 256;
    f.frame(i * 8333);
  }
  assert.equal(f.sent.motionQ8[0], Math.trunc(exact));
  assert.equal(f.sent.motionQ8[1], -64000);
});

test("buttons go before the motion of their frame; heartbeats every 100 ms when still and visible only", () => {
  const f = new Framer(flat);
  f.button(0x110, true, 0);
  f.motion(2, 0, 8000);
  assert.deepEqual(f.frame(0), [{ kind: 3, a: 0x110, b: 1 }, { kind: 1, a: 512, b: 0 }]);
  assert.deepEqual(f.frame(50_000), [], "50 ms after the last datagram: nothing");
  assert.deepEqual(f.frame(HEARTBEAT_US), [{ kind: 4, a: 0, b: 0 }]);
  assert.deepEqual(f.frame(HEARTBEAT_US + 8_333), []);
  assert.deepEqual(f.frame(10 * HEARTBEAT_US, false), [], "hidden: no heartbeat");
});

test("a datagram the link did not send is taken back out of what was sent, whatever its kind", () => {
  const f = new Framer(flat);
  f.button(0x110, true, 0);
  f.motion(2, 0, 8000);
  f.scroll(0, 3);
  const out = f.frame(0);
  const before = structuredClone(f.sent);
  for (const d of out) f.unsent(d);
  assert.deepEqual(f.sent, { motionQ8: [0, 0], scrollQ8: [0, 0], buttons: [], datagrams: 0, heartbeats: 0,
    gestures: { begun: 0, states: 0, ends: 0 } });
  assert.equal(before.datagrams, 3);
  const hb = f.frame(HEARTBEAT_US);
  assert.deepEqual(hb, [{ kind: 4, a: 0, b: 0 }]);
  f.unsent(hb[0]);
  assert.equal(f.sent.heartbeats, 0);
  assert.equal(f.sent.datagrams, 0);
});

test("momentum: 95% of the speed gone after one second, the distance independent of the frame rate", () => {
  const run = (hz) => {
    const f = new Framer(flat);
    f.glide(0, 400, 0); // fingers moving down at 400 px/s: natural scrolling, wheel up
    for (let t = 0; t <= 3_000_000; t += 1e6 / hz) f.frame(Math.round(t));
    return f.sent.scrollQ8[0] / 256;
  };
  assert.ok(Math.abs(Math.exp(-1e6 / MOMENTUM_TAU_US) - 0.05) < 1e-12);
  const full = 400 * WHEEL_UNITS_PER_PX * (MOMENTUM_TAU_US / 1e6); // the integral to infinity
  for (const hz of [60, 120]) assert.ok(Math.abs(run(hz) - full) < 0.02 * full, `${hz} Hz: ${run(hz)} vs ${full}`);
  const f = new Framer(flat);
  f.glide(0, 400, 0);
  f.touchStart();
  f.frame(8333);
  assert.equal(f.sent.scrollQ8[0], 0, "a touch stops the glide");
});

test("the screen as a touchpad: one finger moves, two scroll, tap clicks and releases after the drag timeout", () => {
  const out = [];
  const rec = { motion: (dx, dy) => out.push(["motion", dx, dy]), scroll: (dx, dy) => out.push(["scroll", dx, dy]),
    glide: () => out.push(["glide"]), touchStart: () => {}, button: (c, d, t) => out.push(["button", c, d, t]) };
  const pad = new Trackpad(rec, { widthPx: 390, heightPx: 700 });
  pad.down(7, 100, 100, 0);
  for (let i = 1; i <= 10; i++) pad.move(7, 100 + 5 * i, 100, i * 8000);
  pad.up(7, 90_000);
  const moved = out.filter((e) => e[0] === "motion").reduce((a, e) => a + e[1], 0);
  assert.ok(Math.abs(moved - 50) < 1e-9, `all 50 px of motion, held back while a tap was possible (${moved})`);
  out.length = 0;
  pad.down(8, 100, 100, 1_000_000);
  pad.up(8, 1_050_000);
  pad.tick(1_300_000);
  assert.deepEqual(out.filter((e) => e[0] === "button"), [["button", 0x110, true, 1_050_000], ["button", 0x110, false, 1_230_000]]);
  out.length = 0;
  pad.down(1, 100, 100, 2_000_000);
  pad.down(2, 200, 100, 2_000_000);
  for (let i = 1; i <= 10; i++) { pad.move(1, 100, 100 + 4 * i, 2_000_000 + i * 8000); pad.move(2, 200, 100 + 4 * i, 2_000_000 + i * 8000); }
  pad.up(1, 2_090_000);
  pad.up(2, 2_090_000);
  const scrolled = out.filter((e) => e[0] === "scroll").reduce((a, e) => a + e[2], 0);
  assert.ok(Math.abs(scrolled - 40) < 1e-9, `the fingers' mean motion (${scrolled})`);
  assert.ok(out.some((e) => e[0] === "glide"), "lifted while moving: momentum");
  assert.ok(Math.abs(MM_PER_PX - 0.15875) < 1e-12);
});
