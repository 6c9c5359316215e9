// Gestures as the wire carries them (docs/protocol.md, "Gestures (feature
// bit 3)"): the touchpad rules' begin/update/end (touchpad.js, in mm) summed
// into absolute states, one a frame while the gesture changes and one at
// least every 100 ms while it is still, in place of the heartbeat (the
// receiver ends a gesture it has not heard of for 1 s), the last one
// flagged, then its end on the session. Absolute, so a lost datagram costs
// the receiver a step, never a drift. The same rules as the Linux sender's
// (Sources/RemoloInput/GestureFrames.swift); framer.js sendFrame sends them.
//
// Units: the rules' millimetres come from CSS pixels through trackpad.js
// MM_PER_PX (a phone's CSS pixel is about 1/160 inch), so the offset is the
// fingers' real travel, as the wire asks; here only mm -> micrometres.

import { GESTURE_LIMITS } from "./datagram.js";

export const RENEW_US = 100_000;

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, Math.round(v)));

/**
 * A state in the wire's units (datagram.js gesture()'s argument); `first`
 * marks the gesture's first state (for what the page counts as sent, not
 * on the wire).
 */
function state(g, last) {
  const L = GESTURE_LIMITS;
  const pinch = g.type === "pinch";
  const first = !g.stated;
  g.stated = true;
  return {
    id: g.id, type: g.type, fingers: g.fingers, last, first,
    xUm: clamp(g.xMm * 1000, -L.offsetUm, L.offsetUm), yUm: clamp(g.yMm * 1000, -L.offsetUm, L.offsetUm),
    scaleQ16: pinch ? clamp(g.scale * 65536, L.scaleQ16[0], L.scaleQ16[1]) : 65536,
    angleUrad: pinch ? clamp(g.angle * 1e6, -L.angleUrad, L.angleUrad) : 0,
  };
}

export class GestureFramer {
  constructor() {
    this.open = null;      // {id, type, fingers, xMm, yMm, scale, angle, stated: a state of it was made}
    this.changed = false;
    this.lastSentUs = null;
    this.ended = [];       // ended since the last frame
    this.nextId = 0;
  }

  get isOpen() { return this.open !== null; }

  begin(type, fingers) {
    if (this.open) this.end();
    this.open = { id: this.nextId, type, fingers, xMm: 0, yMm: 0, scale: 1, angle: 0, stated: false };
    this.nextId = (this.nextId + 1) & 0xff;
    this.changed = true;
    this.lastSentUs = null;
  }

  /** The centroid moved by dx, dy (mm); a pinch's scale and angle are since it began. */
  update(dx, dy, scale, angle) {
    const g = this.open;
    if (!g || ![dx, dy, scale, angle].every(Number.isFinite)) return;
    g.xMm += dx;
    g.yMm += dy;
    g.scale = scale;
    g.angle = angle;
    this.changed = true;
  }

  end() {
    if (!this.open) return;
    this.ended.push(this.open);
    this.open = null;
    this.changed = false;
  }

  /** A new session: nothing of a gesture begun on the old one is sent. */
  discard() {
    this.open = null;
    this.ended = [];
    this.changed = false;
  }

  /** The touchpad rules' events (touchpad.js). */
  apply(e) {
    if (e.type === "gestureBegin") this.begin(e.kind, e.fingers);
    else if (e.type === "gestureUpdate") this.update(e.dx, e.dy, e.scale, e.angle);
    else if (e.type === "gestureEnd") this.end();
  }

  /**
   * Whether a still gesture's state is due at tUs: the frame after this
   * one (periodUs later, FrameClock's period) would be more than 100 ms
   * after the last state, so steady frames renew it every 100 ms or a
   * little sooner, never later. It replaces the heartbeat: sendFrame
   * (framer.js) sends none while a gesture is open.
   */
  due(tUs, periodUs = 0) {
    if (this.changed || this.lastSentUs === null) return true;
    const since = tUs - this.lastSentUs;
    return since >= RENEW_US || since + periodUs > RENEW_US;
  }

  /**
   * This frame's {states, ends} at tUs: ended gestures' last states and
   * ends (each end carries tUs, its last state's sender time), then the
   * open one's state if due.
   */
  frame(tUs, periodUs = 0) {
    const states = [], ends = [];
    for (const g of this.ended) {
      states.push(state(g, true));
      ends.push({ id: g.id, tUs });
    }
    this.ended = [];
    if (this.open && this.due(tUs, periodUs)) {
      states.push(state(this.open, false));
      this.changed = false;
      this.lastSentUs = tUs;
    }
    return { states, ends };
  }
}
