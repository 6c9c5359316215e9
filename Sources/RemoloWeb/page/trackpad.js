// The phone's screen as a touchpad: pointer events (CSS pixels) become
// contact samples in millimetres for the shared touchpad rules
// (touchpad.js), whose events drive the framer. One finger moves, two
// scroll, taps click (two fingers: right, three: middle), tap-and-drag
// with drag lock; the phone has no clickpad, so no button area.

import { TouchpadRecognizer } from "./touchpad.js";

/**
 * A CSS pixel on a phone is about 1/160 inch: phone browsers make one CSS
 * pixel one Android dp (1/160 inch) or one UIKit point (1/163 inch on most
 * iPhones), not CSS's nominal 1/96 inch. So px * MM_PER_PX is the finger's
 * real travel, which the touchpad rules' thresholds and a gesture's offset
 * on the wire (micrometres, the receiver's touchpad in mm) both need.
 */
export const MM_PER_PX = 25.4 / 160;

export const BUTTON_CODES = Object.freeze({ left: 0x110, right: 0x111, middle: 0x112 });

/**
 * The samples of one pointermove: its coalesced events where the browser
 * has them (Safari from 18.2) and they are this pointer's, else the event
 * itself. Safari 18.2's carried pointerId 0, and from the first touch
 * only: those would move one finger along another's path.
 */
export function samplesOf(e) {
  const c = typeof e.getCoalescedEvents === "function" ? e.getCoalescedEvents() : [];
  return c.length && c.every((s) => s.pointerId === e.pointerId) ? c : [e];
}

export class Trackpad {
  /**
   * @param {{motion(dx,dy,intervalUs,tUs), scroll(dx,dy,tUs), glide(vx,vy,tUs), touchStart(tUs), button(code,down,tUs)}} out
   *   pixel units (CSS px, px/s), y down
   * @param {{widthPx:number, heightPx:number}} size the surface
   */
  constructor(out, { widthPx = 390, heightPx = 700 } = {}) {
    this.out = out;
    this.slots = new Map(); // pointerId -> slot
    this.held = new Set();
    this.wantGestures = false; // the rules' gestures, from the next touch with no finger down
    this.resize({ widthPx, heightPx });
  }

  resize({ widthPx, heightPx }) {
    // The rules want a plausible surface (at least 10 mm each way).
    const widthMm = Math.min(1000, Math.max(10, widthPx * MM_PER_PX));
    const heightMm = Math.min(1000, Math.max(10, heightPx * MM_PER_PX));
    // A new size keeps the gesture state (a tap's button may be down).
    if (this.recognizer) this.recognizer.surface = { widthMm, heightMm };
    else this.recognizer = new TouchpadRecognizer({ widthMm, heightMm }, { buttonAreaFraction: 0 });
  }

  get touching() { return this.slots.size; }

  deliver(events) {
    for (const e of events) {
      switch (e.type) {
        case "motion": this.out.motion(e.dx / MM_PER_PX, e.dy / MM_PER_PX, e.intervalUs, e.atUs); break;
        case "scroll": this.out.scroll(e.dx / MM_PER_PX, e.dy / MM_PER_PX, e.atUs); break;
        case "glide": this.out.glide(e.vx / MM_PER_PX, e.vy / MM_PER_PX, e.atUs); break;
        case "touchDown": this.out.touchStart(e.atUs); break;
        // Swipes and pinches (only where the rules' gestures are on), in mm.
        case "gestureBegin": case "gestureUpdate": case "gestureEnd": this.gestures?.apply(e); break;
        case "button": {
          const code = BUTTON_CODES[e.button];
          if (e.down) this.held.add(code); else this.held.delete(code);
          this.out.button(code, e.down, e.atUs);
          break;
        }
      }
    }
  }

  down(id, x, y, tUs) {
    // Gestures turned on while fingers were down start with the next
    // touch: those fingers may have been an old session's gesture.
    if (this.slots.size === 0) this.recognizer.config.gestures = this.wantGestures;
    let slot = 0;
    const used = new Set(this.slots.values());
    while (used.has(slot)) slot++;
    this.slots.set(id, slot);
    this.deliver(this.recognizer.contact({ slot, x: x * MM_PER_PX, y: y * MM_PER_PX, touching: true, t: tUs }));
  }

  move(id, x, y, tUs) {
    const slot = this.slots.get(id);
    if (slot === undefined) return;
    this.deliver(this.recognizer.contact({ slot, x: x * MM_PER_PX, y: y * MM_PER_PX, touching: true, t: tUs }));
  }

  up(id, tUs) {
    const slot = this.slots.get(id);
    if (slot === undefined) return;
    this.slots.delete(id);
    this.deliver(this.recognizer.contact({ slot, x: 0, y: 0, touching: false, t: tUs }));
  }

  /** Timeouts due by now (a tap's release, drag lock's end). */
  tick(tUs) { this.deliver(this.recognizer.advance(tUs)); }

  /**
   * Where the rules' gestures go (gestures.js GestureFramer), and whether
   * they are on. Off takes effect at once: an open gesture ends (its last
   * state and end go out with the next frame). On waits for a touch with
   * no finger down, so fingers that were down before never begin one.
   */
  useGestures(framer, on) {
    this.gestures = framer;
    this.wantGestures = on;
    if (!on) this.deliver(this.recognizer.setGestures(false));
    else if (this.slots.size === 0) this.recognizer.config.gestures = true;
  }

  /** The page hid: forget the touches, let go of every button (and end a gesture). */
  cancel(tUs) {
    this.recognizer.reset();
    // The forgotten pointers' lifts never reach the rules (their slots
    // go), so their contacts go too: kept, a contact would take the next
    // touch of its slot for its own and leave it dead.
    this.recognizer.contacts = [];
    this.gestures?.end();
    this.slots.clear();
    for (const code of [...this.held]) { this.held.delete(code); this.out.button(code, false, tUs); }
  }
}
