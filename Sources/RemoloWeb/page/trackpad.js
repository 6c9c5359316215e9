// The page's trackpad rules: touches in, finger-space motion, scroll and
// button changes out. Pure: no DOM, no clock (every time is an argument,
// microseconds on the page's performance.now() clock), so the same rules
// run in the browser and under `node --test`.
//
// One finger moves. Two fingers scroll (the mean motion of the fingers).
// A tap (down and up within tapTimeoutUs, moving less than tapMovePx)
// clicks left; a two-finger tap clicks right. Tap-and-drag: a touch that
// starts within dragTimeoutUs of a tap's lift holds the left button down
// until it lifts, so "tap, then touch and hold" drags.

export const BTN_LEFT = 0x110;
export const BTN_RIGHT = 0x111;

export const defaultRules = Object.freeze({
  tapTimeoutUs: 180_000,   // libinput's tap timeout
  tapMovePx: 12,           // about 3 mm on a phone screen: a wobble, not a move
  dragTimeoutUs: 180_000,  // after a tap's lift: a new touch this soon drags
});

export class Trackpad {
  /**
   * @param {{motion(dx:number,dy:number,tUs:number):void, scroll(dx:number,dy:number,tUs:number):void,
   *          button(code:number,down:boolean,tUs:number):void, scrollEnd(tUs:number):void,
   *          touchStart?(tUs:number):void}} out
   */
  constructor(out, rules = defaultRules) {
    this.out = out;
    this.rules = rules;
    this.touches = new Map(); // id -> {x, y, startX, startY}
    this.gesture = null;      // {startUs, maxFingers, moved, scrolling, dragging}
    this.pendingRelease = null; // {code, atUs}: a tap's button, released at atUs unless a drag starts
    this.held = new Set();
  }

  /** Releases that are due (a tap's button after the drag timeout). */
  tick(tUs) {
    if (this.pendingRelease && tUs >= this.pendingRelease.atUs) {
      const { code, atUs } = this.pendingRelease;
      this.pendingRelease = null;
      this.release(code, atUs);
    }
  }

  press(code, tUs) { if (!this.held.has(code)) { this.held.add(code); this.out.button(code, true, tUs); } }
  release(code, tUs) { if (this.held.delete(code)) this.out.button(code, false, tUs); }

  down(id, x, y, tUs) {
    this.tick(tUs);
    this.touches.set(id, { x, y, startX: x, startY: y });
    this.out.touchStart?.(tUs);
    if (!this.gesture) {
      // A touch soon after a tap's lift turns the tap's click into a drag.
      const dragging = this.pendingRelease?.code === BTN_LEFT;
      if (dragging) this.pendingRelease = null;
      this.gesture = { startUs: tUs, maxFingers: 1, moved: false, scrolling: false, dragging };
    } else {
      this.gesture.maxFingers = Math.max(this.gesture.maxFingers, this.touches.size);
      if (this.touches.size >= 2 && !this.gesture.dragging) this.gesture.scrolling = true;
    }
  }

  /** One (coalesced) sample of a touching finger. */
  move(id, x, y, tUs) {
    const t = this.touches.get(id);
    if (!t || !this.gesture) return;
    this.tick(tUs);
    const dx = x - t.x, dy = y - t.y;
    t.x = x; t.y = y;
    const g = this.gesture;
    if (!g.moved && Math.hypot(x - t.startX, y - t.startY) >= this.rules.tapMovePx) g.moved = true;
    if (!g.moved) return; // inside the tap's wobble: nothing moves yet
    if (g.scrolling) {
      if (this.touches.size >= 2) this.out.scroll(dx / this.touches.size, dy / this.touches.size, tUs);
    } else if (this.touches.size === 1) {
      this.out.motion(dx, dy, tUs);
    }
  }

  up(id, tUs) {
    if (!this.touches.delete(id) || !this.gesture) return;
    this.tick(tUs);
    if (this.touches.size > 0) return;
    const g = this.gesture;
    this.gesture = null;
    if (g.dragging) { this.release(BTN_LEFT, tUs); return; }
    if (g.scrolling && g.moved) { this.out.scrollEnd(tUs); return; }
    if (!g.moved && tUs - g.startUs < this.rules.tapTimeoutUs) {
      if (g.maxFingers >= 2) {
        this.press(BTN_RIGHT, tUs);
        this.release(BTN_RIGHT, tUs);
      } else {
        this.press(BTN_LEFT, tUs);
        this.pendingRelease = { code: BTN_LEFT, atUs: tUs + this.rules.dragTimeoutUs };
      }
    }
  }

  /** Every finger gone at once (pointercancel, page hidden): release what is held. */
  cancel(tUs) {
    this.touches.clear();
    this.gesture = null;
    this.pendingRelease = null;
    for (const code of [...this.held]) this.release(code, tUs);
  }
}
