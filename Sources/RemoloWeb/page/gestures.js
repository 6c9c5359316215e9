// Gestures as the wire carries them (docs/protocol.md, "Gestures (feature
// bit 3)"): the touchpad rules' begin/update/end (touchpad.js, in mm) summed
// into absolute states, one a frame while the gesture changes and one
// every 100 ms while it is still (the receiver ends a gesture it has not
// heard of for 1 s), the last one flagged, then its end on the session.
// Absolute, so a lost datagram costs the receiver a step, never a drift.
// The same rules as the Linux sender's (Sources/RemoloInput/GestureFrames.swift).

import { GESTURE_LIMITS } from "./datagram.js";

export const RENEW_US = 100_000;

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, Math.round(v)));

/** A state in the wire's units (datagram.js gesture()'s argument). */
function state(g, last) {
  const L = GESTURE_LIMITS;
  const pinch = g.type === "pinch";
  return {
    id: g.id, type: g.type, fingers: g.fingers, last,
    xUm: clamp(g.xMm * 1000, -L.offsetUm, L.offsetUm), yUm: clamp(g.yMm * 1000, -L.offsetUm, L.offsetUm),
    scaleQ16: pinch ? clamp(g.scale * 65536, L.scaleQ16[0], L.scaleQ16[1]) : 65536,
    angleUrad: pinch ? clamp(g.angle * 1e6, -L.angleUrad, L.angleUrad) : 0,
  };
}

export class GestureFramer {
  constructor() {
    this.open = null;      // {id, type, fingers, xMm, yMm, scale, angle}
    this.changed = false;
    this.lastSentUs = null;
    this.ended = [];       // ended since the last frame
    this.nextId = 0;
  }

  get isOpen() { return this.open !== null; }

  begin(type, fingers) {
    if (this.open) this.end();
    this.open = { id: this.nextId, type, fingers, xMm: 0, yMm: 0, scale: 1, angle: 0 };
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

  /** This frame's {states, ends} at tUs: ended gestures' last states and ends, then the open one's state if due. */
  frame(tUs) {
    const states = [], ends = [];
    for (const g of this.ended) {
      states.push(state(g, true));
      ends.push({ id: g.id, tUs });
    }
    this.ended = [];
    if (this.open && (this.changed || this.lastSentUs === null || tUs - this.lastSentUs >= RENEW_US)) {
      states.push(state(this.open, false));
      this.changed = false;
      this.lastSentUs = tUs;
    }
    return { states, ends };
  }
}
