// From finger samples to one datagram per animation frame (design note,
// parts 1-3): the acceleration curve on every coalesced sample, Q8 sums
// with their remainders carried, scroll momentum computed here, and a
// heartbeat every 100 ms while the trackpad is visible and still.

export const HEARTBEAT_US = 100_000;
/** 1 s / ln 20: 95% of a flick's speed is gone after one second. */
export const MOMENTUM_TAU_US = 1_000_000 / Math.log(20);
/** Hi-res wheel units per second below which a glide stops. */
export const MOMENTUM_STOP = 10;
/** Hi-res wheel units (1/120 notch) per CSS pixel of finger travel, at scroll speed 1. */
export const WHEEL_UNITS_PER_PX = 2.5;

export const defaultSettings = Object.freeze({ pointerSpeed: 1.5, acceleration: 1, scrollSpeed: 1, naturalScrolling: true });

/** The brief's curve: gain for a sample that moved `distance` px in `dtUs`. */
export function gain(distance, dtUs, { pointerSpeed, acceleration }) {
  if (!(dtUs > 0)) return pointerSpeed;
  const speed = distance / (dtUs / 1e6); // px (points) per second
  const boost = 1 + acceleration * Math.min(Math.max(speed - 120, 0) / 450, 3.5);
  return pointerSpeed * boost;
}

/**
 * The animation frames' period, measured over the last 15 intervals,
 * never assumed: iPhones give 60 Hz even on 120 Hz screens and 30 Hz in
 * Low Power Mode, a desktop what its display does.
 */
export class FrameClock {
  constructor() { this.lastUs = null; this.intervals = []; this.periodUs = 0; }

  tick(frameUs) {
    if (this.lastUs !== null && frameUs > this.lastUs) {
      this.intervals.push(frameUs - this.lastUs);
      if (this.intervals.length > 15) this.intervals.shift();
      // The mean of the last intervals, leaving out a stall (a frame
      // dropped, a tab switch): those over twice the median.
      const median = [...this.intervals].sort((a, b) => a - b)[this.intervals.length >> 1];
      const kept = this.intervals.filter((d) => d <= 2 * median);
      this.periodUs = kept.reduce((a, d) => a + d, 0) / kept.length;
    }
    this.lastUs = frameUs;
    return this.periodUs;
  }

  get hz() { return this.periodUs > 0 ? Math.round(1e6 / this.periodUs) : 0; }
}

export class Framer {
  constructor(settings = defaultSettings) {
    this.settings = { ...settings };
    this.pendingMotion = [0, 0];   // Q8 pixels not yet sent (x right, y down)
    this.pendingScroll = [0, 0]; // Q8 hi-res units not yet sent (vertical up, horizontal right)
    this.buttons = [];      // {code, down, tUs} in order
    this.momentum = null;   // {v, h (units/s), startUs, lastUs}
    this.lastSentUs = -Infinity;
    this.resetSent();
  }

  /** What was sent in this session: the receiver's totals for it must equal these. */
  resetSent() {
    // gestures: states (datagrams, counted in `datagrams` too), the
    // gestures those began, and the gesture end messages (sendFrame below).
    this.sent = { motionQ8: [0, 0], scrollQ8: [0, 0], buttons: [], datagrams: 0, heartbeats: 0,
      gestures: { begun: 0, states: 0, ends: 0 } };
  }

  /** A one-finger sample (px, y down) that took intervalUs: through the curve, into Q8. */
  motion(dx, dy, intervalUs) {
    const g = gain(Math.hypot(dx, dy), intervalUs, this.settings);
    this.pendingMotion[0] += dx * g * 256;
    this.pendingMotion[1] += dy * g * 256;
  }

  /** Hi-res wheel units (vertical up, horizontal right) for finger px (y down). */
  wheel(dx, dy) {
    const k = WHEEL_UNITS_PER_PX * this.settings.scrollSpeed;
    // Natural scrolling: content follows the fingers, so fingers moving
    // down scroll up (wheel up is positive on the wire).
    const sign = this.settings.naturalScrolling ? 1 : -1;
    return [sign * dy * k, -sign * dx * k];
  }

  /** Two-finger scroll (the fingers' mean motion, px, y down). */
  scroll(dx, dy) {
    this.momentum = null;
    const [v, h] = this.wheel(dx, dy);
    this.pendingScroll[0] += v * 256;
    this.pendingScroll[1] += h * 256;
  }

  /** The fingers lifted scrolling at (vx, vy) px/s: glide (momentum computed here, part 6). */
  glide(vx, vy, tUs) {
    const [v, h] = this.wheel(vx, vy);
    this.momentum = Math.hypot(v, h) >= MOMENTUM_STOP ? { v, h, startUs: tUs, lastUs: tUs } : null;
  }

  /** A new touch stops a glide, as on a trackpad. */
  touchStart() { this.momentum = null; }

  button(code, down, tUs) { this.buttons.push({ code, down, tUs }); }

  /** Drops what is pending without counting it as sent (no session yet). */
  discard() {
    this.pendingMotion = [0, 0];
    this.pendingScroll = [0, 0];
    this.buttons = [];
    this.momentum = null;
  }

  /** Takes a datagram of frame() back out of what was sent: the link did not send it. */
  unsent(d) {
    this.sent.datagrams--;
    if (d.kind === 1) { this.sent.motionQ8[0] -= d.a; this.sent.motionQ8[1] -= d.b; }
    else if (d.kind === 2) { this.sent.scrollQ8[0] -= d.a; this.sent.scrollQ8[1] -= d.b; }
    else if (d.kind === 4) this.sent.heartbeats--;
    else if (d.kind === 3) {
      const i = this.sent.buttons.findLastIndex((x) => x.code === d.a && x.down === (d.b === 1));
      if (i >= 0) this.sent.buttons.splice(i, 1);
    }
  }

  get gliding() { return this.momentum !== null; }

  /**
   * The datagrams of the frame at `frameUs` (each {kind, a, b}), in order:
   * buttons (a press before the motion it drags), motion, scroll, or a
   * heartbeat when nothing was sent for 100 ms and `visible`. periodUs
   * (FrameClock) lets the heartbeat come at the frame nearest 100 ms: at
   * 30 Hz three frames, not four when the third is a little early.
   */
  frame(frameUs, visible = true, periodUs = 0) {
    const out = [];
    const m = this.momentum;
    if (m) {
      // The exact integral of v0 e^(-t/tau) over the frame: how far a
      // flick goes does not depend on the frame rate.
      const tau = MOMENTUM_TAU_US;
      const a = Math.max(m.lastUs, m.startUs), b = Math.max(frameUs, a);
      const k = (tau / 1e6) * (Math.exp(-(a - m.startUs) / tau) - Math.exp(-(b - m.startUs) / tau));
      this.pendingScroll[0] += m.v * k * 256;
      this.pendingScroll[1] += m.h * k * 256;
      m.lastUs = b;
      if (Math.hypot(m.v, m.h) * Math.exp(-(b - m.startUs) / tau) < MOMENTUM_STOP) this.momentum = null;
    }
    for (const btn of this.buttons) {
      out.push({ kind: 3, a: btn.code, b: btn.down ? 1 : 0 });
      this.sent.buttons.push({ code: btn.code, down: btn.down });
    }
    this.buttons = [];
    const take = (arr, i) => { const w = Math.trunc(arr[i]); arr[i] -= w; return w; };
    const mx = take(this.pendingMotion, 0), my = take(this.pendingMotion, 1);
    if (mx || my) {
      out.push({ kind: 1, a: mx, b: my });
      this.sent.motionQ8[0] += mx; this.sent.motionQ8[1] += my;
    }
    const sv = take(this.pendingScroll, 0), sh = take(this.pendingScroll, 1);
    if (sv || sh) {
      out.push({ kind: 2, a: sv, b: sh });
      this.sent.scrollQ8[0] += sv; this.sent.scrollQ8[1] += sh;
    }
    if (out.length === 0 && visible && frameUs - this.lastSentUs >= HEARTBEAT_US - periodUs / 2) {
      out.push({ kind: 4, a: 0, b: 0 });
      this.sent.heartbeats++;
    }
    if (out.length) this.lastSentUs = frameUs;
    this.sent.datagrams += out.length;
    return out;
  }
}

/**
 * The gesture states and ends due at frameUs (gestures.js GestureFramer)
 * through the link (link.js sendGesture, endGesture), counted in
 * framer.sent; returns the datagrams sent. Each end follows its last
 * state and carries its sender time. A state sent counts as the frame's
 * datagram for the heartbeat's 100 ms, as any datagram does.
 */
export function sendGestures({ framer, gestures, link, frameUs, periodUs = 0 }) {
  const g = gestures.frame(frameUs, periodUs);
  const sent = framer.sent.gestures;
  let n = 0;
  for (const s of g.states) {
    if (!link.sendGesture(s, frameUs)) continue;
    n++;
    sent.states++;
    if (s.first) sent.begun++;
    framer.sent.datagrams++;
    framer.lastSentUs = frameUs;
  }
  for (const e of g.ends) if (link.endGesture(e.id, e.tUs)) sent.ends++;
  return n;
}

/**
 * One animation frame out through the link: gesture states first, then
 * the framer's datagrams. While a gesture is open its states are the
 * heartbeat (gestures.js renews them at least every 100 ms), so the
 * framer sends none beside them. A button the link sent as a button
 * message (on the data channel's sessions) is no datagram, and one the
 * link did not send (it had ended) is taken back out of what was sent.
 * Returns how many datagrams and messages went to the link.
 */
export function sendFrame({ framer, gestures, link, frameUs, visible = true, periodUs = 0 }) {
  let n = sendGestures({ framer, gestures, link, frameUs, periodUs });
  for (const d of framer.frame(frameUs, visible && !gestures.isOpen, periodUs)) {
    const how = link.send(d, frameUs);
    if (how === "message") { framer.sent.datagrams--; framer.sent.buttonMessages = (framer.sent.buttonMessages ?? 0) + 1; }
    else if (how !== "datagram") framer.unsent(d);
    n++;
  }
  return n;
}
