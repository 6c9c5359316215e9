// The sender's touchpad rules (libinput's thresholds: tap timeout, tap
// move threshold, drag timeouts, drag lock, button area, clickpad
// buttons), the same as every Remolo sender runs, checked against the
// shared table Tests/Shared/gesture-cases.json. Pure: positions in
// millimetres from the top-left corner (x right, y down), times in
// microseconds on the sender's clock; every time comes in as an argument.
//
// Events out, in finger space before any curve or scroll setting:
//   {type: "motion", dx, dy, intervalUs, atUs}   one contact's sample
//   {type: "scroll", dx, dy, atUs}               half of each of two contacts' motion
//   {type: "button", button: "left"|"right"|"middle", down, atUs}
//   {type: "glide", vx, vy, atUs}                 mm/s: momentum starts
//   {type: "touchDown", atUs}                     momentum stops
// and with config.gestures (off by default: three fingers then do nothing
// and two always scroll):
//   {type: "gestureBegin", kind: "swipe"|"pinch", fingers, atUs}
//   {type: "gestureUpdate", dx, dy, scale, angle, atUs}   centroid motion; a pinch's
//                                  distance over where it began, its turn (radians, ccw)
//   {type: "gestureEnd", atUs}     the fingers lifted or their count changed

export const defaultTouchpadConfig = Object.freeze({
  tapToClick: true,
  tapAndDrag: true,
  dragLock: true,
  tapTimeoutUs: 180_000,          // libinput DEFAULT_TAP_TIMEOUT_PERIOD
  tapMoveThresholdMm: 3,          // a fingertip flattening on glass wanders
  dragTimeoutBaseUs: 160_000,     // libinput DEFAULT_DRAG_TIMEOUT_PERIOD_BASE
  dragTimeoutPerFingerUs: 20_000, // ... _PERFINGER
  dragLockTimeoutUs: 300_000,     // libinput DEFAULT_DRAGLOCK_TIMEOUT_PERIOD
  buttonAreaFraction: 0.12,       // resting thumbs along the bottom edge
  rightButtonLeftFraction: 0.5,
  glideWindowUs: 50_000,
  glideMinimumMmPerSecond: 10,
  gestures: false,                // three- and four-finger swipes, two-finger pinches
  pinchDecisionMm: 3,             // two fingers: a pinch or a scroll once either has come this far
});

export class TouchpadRecognizer {
  /** @param {{widthMm:number, heightMm:number}} surface */
  constructor(surface, config = {}) {
    this.surface = { ...surface };
    this.config = { ...defaultTouchpadConfig, ...config };
    this.contacts = [];     // {slot, x, y, startX, startY, lastUs, sampleUs, resting, ignored}
    this.phase = { name: "idle" };
    this.held = [];
    this.physical = null;
    this.scrolled = false;
    this.scrollHistory = [];
    this.nowUs = 0;
    this.out = [];
    this.gesture = null;    // the kind of the gesture begun and not ended
    this.two = null;        // two fingers: {state: "undecided", base, pending} | {state: "scroll"} | {state: "pinch", base, cx, cy}
  }

  get buttonAreaTopMm() { return this.surface.heightMm * (1 - this.config.buttonAreaFraction); }
  get activeCount() { return this.contacts.reduce((n, c) => n + (c.resting || c.ignored ? 0 : 1), 0); }

  get holdsTapButton() {
    const p = this.phase;
    return p.name === "tapped" || p.name === "dragging" || p.name === "dragLockWait" || (p.name === "deciding" && p.kind !== "fresh");
  }

  advance(tUs) {
    this.nowUs = Math.max(this.nowUs, tUs);
    this.fireTimers();
    return this.drain();
  }

  /** One sample: {slot, x, y, touching, t}. */
  contact({ slot, x, y, touching, t }) {
    this.nowUs = Math.max(this.nowUs, t);
    this.fireTimers();
    const now = this.nowUs;
    const i = this.contacts.findIndex((c) => c.slot === slot);
    if (i >= 0) {
      if (touching) this.move(i, x, y, now, t); else this.lift(i, now);
    } else if (touching) {
      this.touchDown(slot, x, y, now, t);
    }
    return this.drain();
  }

  physicalButton(down, tUs) {
    this.nowUs = Math.max(this.nowUs, tUs);
    this.fireTimers();
    const t = this.nowUs;
    if (down) {
      if (this.physical !== null) return this.drain();
      if (this.holdsTapButton) this.button("left", false, t);
      this.flushHeld();
      this.phase = { name: this.activeCount > 0 ? "dead" : "idle" };
      const b = this.clickButton();
      this.physical = b;
      this.button(b, true, t);
    } else if (this.physical !== null) {
      const b = this.physical;
      this.physical = null;
      this.button(b, false, t);
    }
    return this.drain();
  }

  /** Forgets every state; fingers still down are ignored until they lift. The caller releases buttons. */
  reset() {
    for (const c of this.contacts) c.ignored = true;
    this.phase = { name: "idle" };
    this.held = [];
    this.physical = null;
    this.scrolled = false;
    this.scrollHistory = [];
    this.out = [];
    this.gesture = null;
    this.two = null;
  }

  /**
   * Turns the gesture rules on or off now. Off ends an open gesture (its
   * gestureEnd comes out), drops one still held back for a tap (it never
   * began where anyone saw it) and lets two fingers held back for the
   * pinch-or-scroll decision scroll: from here on two fingers scroll and
   * three do nothing.
   */
  setGestures(on) {
    if (!on) {
      this.fingersChanged(this.nowUs);
      this.held = this.held.filter((e) => !e.type.startsWith("gesture"));
    }
    this.config.gestures = on;
    return this.drain();
  }

  // --- contacts

  touchDown(slot, x, y, t, sampleUs = t) {
    this.emit({ type: "touchDown", atUs: t });
    const resting = y >= this.buttonAreaTopMm;
    this.contacts.push({ slot, x, y, startX: x, startY: y, lastUs: t, sampleUs, resting, ignored: false });
    if (!resting) this.fingerLanded(t);
  }

  fingerLanded(t) {
    this.fingersChanged(t);
    const n = this.activeCount;
    if (this.physical !== null) {
      if (this.phase.name === "idle") this.phase = { name: "dead" };
      return;
    }
    const p = this.phase;
    switch (p.name) {
      case "idle":
        this.phase = this.config.tapToClick
          ? { name: "deciding", kind: "fresh", startUs: t, lastTouchUs: t, maxFingers: n, anyLifted: false }
          : { name: "moving" };
        break;
      case "deciding":
        if (p.kind === "fresh") {
          if (p.anyLifted) this.decidingFails();
          else { p.maxFingers = Math.max(p.maxFingers, n); p.lastTouchUs = t; }
        } else {
          // Only one finger starts a drag or a double tap.
          this.button("left", false, t);
          this.flushHeld();
          this.phase = { name: "dead" };
        }
        break;
      case "tapped":
        this.phase = { name: "deciding", kind: "afterTap", startUs: t, lastTouchUs: t, maxFingers: n, anyLifted: false };
        break;
      case "dragLockWait":
        this.phase = { name: "deciding", kind: "dragLock", startUs: t, lastTouchUs: t, maxFingers: n, anyLifted: false };
        break;
      default:
        break;
    }
  }

  move(i, x, y, t, sampleUs = t) {
    const c = this.contacts[i];
    const dx = x - c.x, dy = y - c.y;
    // The interval of a sample is its own time less the contact's previous
    // sample's, never the recognizer's clock: the frames advance that too,
    // and a browser that hands a frame's touch moves over at once (Chrome)
    // would give every sample after a frame's tick a zero interval (the
    // curve's base gain, whatever the finger's speed).
    const interval = sampleUs - Math.min(sampleUs, c.sampleUs);
    c.x = x; c.y = y; c.lastUs = t; c.sampleUs = Math.max(c.sampleUs, sampleUs);
    if (c.ignored) return;
    if (c.resting) {
      if (y < this.buttonAreaTopMm) {
        // Up out of the button area: a finger from here on, no jump.
        c.resting = false;
        c.startX = x; c.startY = y;
        this.fingerEscaped(t);
      }
      return;
    }
    this.route(i, dx, dy, interval, t);
    if (this.phase.name === "deciding" && Math.hypot(x - c.startX, y - c.startY) > this.config.tapMoveThresholdMm) {
      this.decidingFails();
    }
  }

  fingerEscaped(t) {
    this.fingersChanged(t);
    if (this.physical !== null) { if (this.phase.name === "idle") this.phase = { name: "dead" }; return; }
    switch (this.phase.name) {
      case "idle": this.phase = { name: "moving" }; break;
      case "deciding": this.decidingFails(); break;
      case "tapped": case "dragLockWait": this.phase = { name: "dragging" }; break;
      default: break;
    }
  }

  route(i, dx, dy, interval, t) {
    let ev = null;
    const n = this.activeCount;
    const first = this.contacts.findIndex((c) => !c.resting && !c.ignored);
    const motion = { type: "motion", dx, dy, intervalUs: interval, atUs: t };
    if (this.physical !== null) {
      ev = motion; // click-and-hold drag: any finger that moves carries the pointer
    } else {
      const p = this.phase;
      const dragLike = p.name === "dragging" || (p.name === "deciding" && p.kind !== "fresh");
      if (dragLike) {
        if (i === first) ev = motion;
      } else if (n === 1 && !this.scrolled) {
        ev = motion;
      } else if (this.config.gestures && n >= 2) {
        this.scrolled = true;
        if (n === 2) this.twoFingers(i, dx, dy, t); else this.swipe(n, dx, dy, t);
        return;
      } else if (n === 2) {
        this.scrolled = true;
        const sx = dx / 2, sy = dy / 2;
        this.scrollHistory.push([t, sx, sy]);
        const horizon = t - Math.min(t, this.config.glideWindowUs);
        this.scrollHistory = this.scrollHistory.filter((s) => s[0] > horizon);
        ev = { type: "scroll", dx: sx, dy: sy, atUs: t };
      }
    }
    if (!ev) return;
    if (this.phase.name === "deciding") this.held.push(ev); else this.emit(ev);
  }

  lift(i, t) {
    const [c] = this.contacts.splice(i, 1);
    if (c.resting || c.ignored) return;
    this.fingersChanged(t);
    const n = this.activeCount;
    if (this.scrolled && n === 1) this.glide(t);
    const p = this.phase;
    switch (p.name) {
      case "deciding":
        if (n > 0) {
          p.anyLifted = true;
        } else {
          this.held = []; // a tap's wobble is not motion
          if (p.kind === "fresh") {
            this.tap(p.maxFingers, t);
          } else if (p.kind === "afterTap") {
            // Double tap: the first click ends when the second touch
            // landed; the second is held for a possible drag.
            this.button("left", false, p.startUs);
            this.button("left", true, t);
            this.phase = { name: "tapped", deadlineUs: t + this.dragTimeoutUs(1) };
          } else {
            this.button("left", false, t);
            this.phase = { name: "idle" };
          }
        }
        break;
      case "dragging":
        if (n === 0) {
          if (this.config.dragLock) {
            this.phase = { name: "dragLockWait", deadlineUs: t + this.config.dragLockTimeoutUs };
          } else {
            this.button("left", false, t);
            this.phase = { name: "idle" };
          }
        }
        break;
      case "moving": case "dead":
        if (n === 0) this.phase = { name: "idle" };
        break;
      default:
        break;
    }
    if (n === 0) {
      this.scrolled = false;
      this.scrollHistory = [];
    }
  }

  dragTimeoutUs(fingers) { return this.config.dragTimeoutBaseUs + fingers * this.config.dragTimeoutPerFingerUs; }

  tap(fingers, t) {
    if (fingers === 1) {
      this.button("left", true, t);
      if (this.config.tapAndDrag) {
        this.phase = { name: "tapped", deadlineUs: t + this.dragTimeoutUs(1) };
      } else {
        this.button("left", false, t);
        this.phase = { name: "idle" };
      }
    } else if (fingers === 2 || fingers === 3) {
      const b = fingers === 2 ? "right" : "middle";
      this.button(b, true, t);
      this.button(b, false, t);
      this.phase = { name: "idle" };
    } else {
      this.phase = { name: "idle" };
    }
  }

  glide(t) {
    const horizon = t - Math.min(t, this.config.glideWindowUs);
    const recent = this.scrollHistory.filter((s) => s[0] > horizon);
    this.scrollHistory = [];
    if (recent.length === 0) return;
    const seconds = this.config.glideWindowUs / 1e6;
    const vx = recent.reduce((a, s) => a + s[1], 0) / seconds;
    const vy = recent.reduce((a, s) => a + s[2], 0) / seconds;
    if (Math.hypot(vx, vy) < this.config.glideMinimumMmPerSecond) return;
    this.emit({ type: "glide", vx, vy, atUs: t });
  }

  // --- gestures (config.gestures)

  put(e) { if (this.phase.name === "deciding") this.held.push(e); else this.emit(e); }

  // The count changed: the gesture ends (a desktop binds a swipe to its
  // finger count); scrolling held back for a decision was no pinch: sent.
  fingersChanged(t) {
    if (!this.config.gestures) return;
    if (this.gesture !== null) { this.put({ type: "gestureEnd", atUs: t }); this.gesture = null; }
    if (this.two && this.two.state === "undecided") for (const p of this.two.pending) this.scrollStep(p[0], p[1], p[2]);
    this.two = null;
  }

  // Three or four fingers: the centroid moves by each sample's share;
  // five or more are no gesture a desktop binds.
  swipe(n, dx, dy, t) {
    if (n > 4) return;
    if (this.gesture === null) { this.gesture = "swipe"; this.put({ type: "gestureBegin", kind: "swipe", fingers: n, atUs: t }); }
    this.put({ type: "gestureUpdate", dx: dx / n, dy: dy / n, scale: 1, angle: 0, atUs: t });
  }

  scrollStep(t, sx, sy) {
    this.scrollHistory.push([t, sx, sy]);
    const horizon = t - Math.min(t, this.config.glideWindowUs);
    this.scrollHistory = this.scrollHistory.filter((s) => s[0] > horizon);
    this.put({ type: "scroll", dx: sx, dy: sy, atUs: t });
  }

  // Two fingers: a pinch when they move against each other (apart,
  // together, turning) more than together, a scroll otherwise, decided once
  // either has reached pinchDecisionMm (Sources/RemoloInput/TouchpadInput.swift).
  twoFingers(i, dx, dy, t) {
    const idx = [];
    this.contacts.forEach((c, j) => { if (!c.resting && !c.ignored) idx.push(j); });
    if (idx.length !== 2) return;
    const a = this.contacts[idx[0]], b = this.contacts[idx[1]];
    const now = shape(a.x, a.y, b.x, b.y);
    if (this.two === null) {
      const ax = idx[0] === i ? a.x - dx : a.x, ay = idx[0] === i ? a.y - dy : a.y;
      const bx = idx[1] === i ? b.x - dx : b.x, by = idx[1] === i ? b.y - dy : b.y;
      this.two = { state: "undecided", base: shape(ax, ay, bx, by), pending: [] };
    }
    const w = this.two;
    if (w.state === "undecided") {
      w.pending.push([t, dx / 2, dy / 2]);
      const rel = Math.hypot((now.vx - w.base.vx) / 2, (now.vy - w.base.vy) / 2);
      const dc = Math.hypot(now.cx - w.base.cx, now.cy - w.base.cy);
      if (Math.max(rel, dc) < this.config.pinchDecisionMm) return;
      if (rel > dc) {
        this.gesture = "pinch";
        this.put({ type: "gestureBegin", kind: "pinch", fingers: 2, atUs: t });
        this.two = { state: "pinch", base: w.base, cx: w.base.cx, cy: w.base.cy };
        this.pinchStep(now, t);
      } else {
        this.two = { state: "scroll" };
        for (const p of w.pending) this.scrollStep(p[0], p[1], p[2]);
      }
    } else if (w.state === "scroll") {
      this.scrollStep(t, dx / 2, dy / 2);
    } else {
      this.pinchStep(now, t);
    }
  }

  pinchStep(now, t) {
    const w = this.two;
    let turn = now.angle - w.base.angle;
    if (turn > Math.PI) turn -= 2 * Math.PI; else if (turn < -Math.PI) turn += 2 * Math.PI;
    // Fingers landed on one spot: a pinch of them is measured from 1 mm.
    const scale = now.distance / Math.max(w.base.distance, 1);
    this.put({ type: "gestureUpdate", dx: now.cx - w.cx, dy: now.cy - w.cy, scale, angle: turn, atUs: t });
    w.cx = now.cx; w.cy = now.cy;
  }

  // --- buttons and timeouts

  clickButton() {
    const n = this.activeCount;
    if (n >= 3) return "middle";
    if (n === 2) return "right";
    const top = this.buttonAreaTopMm, right = this.surface.widthMm * this.config.rightButtonLeftFraction;
    return this.contacts.some((c) => !c.ignored && c.y >= top && c.x >= right) ? "right" : "left";
  }

  decidingFails() {
    const p = this.phase;
    if (p.name !== "deciding") return;
    this.phase = { name: p.kind === "fresh" ? "moving" : "dragging" };
    this.flushHeld();
  }

  fireTimers() {
    for (;;) {
      const p = this.phase;
      if (p.name === "deciding" && p.lastTouchUs + this.config.tapTimeoutUs <= this.nowUs) {
        // Held too long for a tap: a touch after a tap becomes a drag even
        // before it moves (libinput does the same).
        this.decidingFails();
      } else if ((p.name === "tapped" || p.name === "dragLockWait") && p.deadlineUs <= this.nowUs) {
        this.button("left", false, p.deadlineUs);
        this.phase = { name: this.activeCount > 0 ? "dead" : "idle" };
      } else {
        return;
      }
    }
  }

  flushHeld() { this.out.push(...this.held); this.held = []; }
  button(button, down, atUs) { this.emit({ type: "button", button, down, atUs }); }
  emit(e) { this.out.push(e); }
  drain() { const o = this.out; this.out = []; return o; }
}

// Two fingers' shape: the line from the first to the second, its length and
// angle (counter-clockwise on screen: y grows downwards), their centroid.
function shape(ax, ay, bx, by) {
  const vx = bx - ax, vy = by - ay;
  return { vx, vy, distance: Math.hypot(vx, vy), angle: Math.atan2(-vy, vx), cx: (ax + bx) / 2, cy: (ay + by) / 2 };
}
