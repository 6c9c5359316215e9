// What the page does with the browser's clocks: a sample's interval from
// its own time (not the frames'), the frame rate measured, one datagram
// per frame and heartbeats at 100 ms whatever the rate, and the samples of
// a pointermove with and without coalesced events.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Framer, FrameClock, gain, HEARTBEAT_US } from "../../Sources/RemoloWeb/page/framer.js";
import { Trackpad, samplesOf } from "../../Sources/RemoloWeb/page/trackpad.js";

function recorder() {
  const motions = [];
  return { motions, motion: (dx, dy, intervalUs) => motions.push({ dx, dy, intervalUs }),
    scroll() {}, glide() {}, touchStart() {}, button() {} };
}

test("a sample's interval is its own time less the previous sample's, even after a later frame", () => {
  // Chrome hands a frame's touch moves over together, after the frame's
  // tick advanced the recognizer's clock past their own times.
  const out = recorder();
  const pad = new Trackpad(out);
  pad.down(1, 100, 100, 0);
  let x = 100;
  const cases = [ // [frame tick, sample times delivered after it]
    [16_667, [4_000, 8_000, 12_000]],
    [33_333, [20_000, 28_000]],
    [50_000, [36_000, 44_000, 48_000]],
  ];
  let last = 0;
  for (const [tick, samples] of cases) {
    pad.tick(tick);
    for (const t of samples) { x += 4; pad.move(1, x, 100, t); }
  }
  // The first samples decide a tap; the rest are motion. Every interval
  // is a sample's own.
  const own = cases.flatMap(([, s]) => s).map((t) => { const d = t - last; last = t; return d; });
  const got = out.motions.map((m) => m.intervalUs);
  assert.ok(got.length >= 4, `motion samples: ${got.length}`);
  assert.deepEqual(got, own.slice(own.length - got.length));
  for (const m of out.motions) assert.ok(m.intervalUs > 0, "never a zero interval");
});

test("the gain follows the curve at each finger speed when samples arrive batched", () => {
  const settings = { pointerSpeed: 1, acceleration: 1, scrollSpeed: 1, naturalScrolling: true };
  for (const [n, speedPxPerS] of [[1, 100], [2, 400], [3, 900], [4, 2000]]) {
    const out = recorder();
    const pad = new Trackpad(out);
    pad.down(1, 0, 100, 0);
    const step = speedPxPerS * 0.004; // a sample every 4 ms
    let t = 200_000; // past the tap timeout: plain motion
    pad.tick(t);
    for (let k = 1; k <= 40; k++) {
      t += 4_000;
      if (k % 4 === 1) pad.tick(t + 12_000); // a frame tick ahead of the batch it delivers
      pad.move(1, step * k, 100, t);
    }
    const m = out.motions.at(-1);
    const g = gain(Math.hypot(m.dx, m.dy), m.intervalUs, settings);
    const want = gain(step, 4_000, settings);
    assert.ok(Math.abs(g - want) < 1e-9, `case ${n}: ${speedPxPerS} px/s: gain ${g}, curve ${want}`);
  }
});

for (const hz of [30, 60, 120]) {
  test(`${hz} Hz frames: measured, one datagram per frame while moving, heartbeats at 100 ms when still`, () => {
    const period = 1e6 / hz;
    const clock = new FrameClock();
    const f = new Framer({ pointerSpeed: 1, acceleration: 0, scrollSpeed: 1, naturalScrolling: true });
    // Real frames jitter: +-0.5 ms.
    const at = (k) => Math.round(k * period + (k % 3 === 0 ? 500 : k % 3 === 1 ? -500 : 0));
    let k = 0;
    for (; k < 2 * hz; k++) {          // moving for 2 s
      clock.tick(at(k));
      f.motion(3, 1, period);
      const d = f.frame(at(k), true, clock.periodUs);
      assert.equal(d.length, 1, `frame ${k}: one datagram`);
    }
    assert.equal(clock.hz, hz, "the rate measured");
    const beats = [];
    for (; k < 4 * hz; k++) {          // still for 2 s
      clock.tick(at(k));
      for (const d of f.frame(at(k), true, clock.periodUs)) {
        assert.equal(d.kind, 4);
        beats.push(at(k));
      }
    }
    const gaps = beats.slice(1).map((t, i) => t - beats[i]);
    for (const g of gaps) assert.ok(Math.abs(g - HEARTBEAT_US) <= period / 2 + 1000, `a heartbeat ${g} us after the last`);
    assert.ok(beats.length >= 19 && beats.length <= 21, `${beats.length} heartbeats in 2 s`);
  });
}

test("samples of a pointermove: coalesced when they are this pointer's, else the event itself", () => {
  const ev = (id, coalesced) => ({ pointerId: id, clientX: 9, ...(coalesced && { getCoalescedEvents: () => coalesced }) });
  const own = [{ pointerId: 3, clientX: 1 }, { pointerId: 3, clientX: 2 }];
  const cases = [
    [ev(3), 1, "no getCoalescedEvents (Safari before 18.2): every pointermove is a sample"],
    [ev(3, []), 1, "an empty list: the event"],
    [ev(3, own), 2, "this pointer's coalesced samples"],
    [ev(3, [{ pointerId: 0, clientX: 1 }]), 1, "Safari 18.2's pointerId 0: the event"],
    [ev(4, own), 1, "another finger's samples (from the first touch only): the event"],
  ];
  for (const [i, [e, n, what]] of cases.entries()) assert.equal(samplesOf(e).length, n, `case ${i + 1}: ${what}`);
});

test("without coalesced events every pointermove is one sample, with its own time", () => {
  // Safari before 18.2 (and 18.2 with another finger down): no
  // getCoalescedEvents, or none of this pointer's. Each pointermove then
  // reaches the trackpad as exactly one sample, and its interval is the
  // time since the previous pointermove, whatever the frames do.
  const cases = [ // [case, spacing of pointermoves in us, frame period in us]
    [1, 16_667, 16_667],  // 60 Hz touches, 60 Hz frames (an iPhone)
    [2, 8_333, 16_667],   // 120 Hz touches, 60 Hz frames (ProMotion: frames stay at 60)
    [3, 16_667, 33_333],  // Low Power Mode: 30 Hz frames
  ];
  for (const [n, spacing, period] of cases) {
    const out = recorder();
    const pad = new Trackpad(out);
    pad.down(1, 0, 100, 0);
    let t = 200_000, nextFrame = t; // past the tap timeout: plain motion
    pad.tick(t);
    const moves = 30;
    for (let k = 1; k <= moves; k++) {
      t += spacing;
      while (nextFrame <= t) { pad.tick(nextFrame); nextFrame += period; }
      const e = { pointerId: 1, clientX: 5 * k, clientY: 100, timeStamp: t / 1000 }; // no getCoalescedEvents
      const samples = samplesOf(e);
      assert.equal(samples.length, 1, `case ${n}: one sample per pointermove`);
      for (const s of samples) pad.move(e.pointerId, s.clientX, s.clientY, s.timeStamp * 1000);
    }
    assert.equal(out.motions.length, moves, `case ${n}: ${out.motions.length} motion samples of ${moves} pointermoves`);
    for (const m of out.motions.slice(1)) assert.ok(Math.abs(m.intervalUs - spacing) < 1, `case ${n}: interval ${m.intervalUs} us, spacing ${spacing}`);
  }
});
