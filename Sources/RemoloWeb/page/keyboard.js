// Typing from the phone, the pure part (no DOM): evdev key codes, the
// difference between two states of the hidden text field, sticky
// modifiers, and the sender that turns all of it into key and text
// messages while keeping track of every key it holds, so that it can let
// go of all of them at once. Times are milliseconds on the page's
// performance clock, the one motion is stamped with.

/** Linux evdev codes (<linux/input-event-codes.h>) of the keys the page sends itself. */
export const KEY = Object.freeze({
  esc: 1, backspace: 14, tab: 15, enter: 28, leftCtrl: 29, leftAlt: 56, leftMeta: 125,
  up: 103, left: 105, right: 106, down: 108, delete: 111,
  mute: 113, volumeDown: 114, volumeUp: 115, playPause: 164,
});

/** The modifiers of the special-keys row, sticky (see StickyModifiers). */
export const MODIFIER_CODES = Object.freeze([KEY.leftCtrl, KEY.leftAlt, KEY.leftMeta]);

/** A second tap of a latched modifier within this long locks it (as a phone's Shift key does). */
export const LOCK_WINDOW_MS = 400;

const segmenter = typeof Intl !== "undefined" && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

/**
 * The user-perceived characters of a string (grapheme clusters, UAX #29),
 * what one Backspace deletes in a desktop text field: "e" + U+0301 or a
 * flag is one. Code points where Intl.Segmenter is missing.
 */
export function graphemes(s) {
  return segmenter ? Array.from(segmenter.segment(s), (g) => g.segment) : Array.from(s);
}

/**
 * From one state of the field's text to the next, as typing: how many
 * characters to delete from the end of `before` with Backspace, then which
 * text to type. Both keep their common prefix; the caret is at the end of
 * both. This serves every way a phone keyboard changes text: a letter
 * typed (insertText), a composition growing or changing (IMEs, Gboard's
 * underlined word: insertCompositionText), a word replaced by autocorrect
 * or a suggestion (insertReplacementText), Backspace (deleteContentBackward)
 * or a word deleted at once.
 */
export function textDiff(before, after) {
  const a = graphemes(before), b = graphemes(after);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return { backspaces: a.length - common, text: b.slice(common).join("") };
}

/**
 * Ctrl, Alt and Super of the special-keys row. A tap latches a modifier:
 * it is pressed just before the next key or text and released just after
 * it (tap Ctrl, type c: Ctrl down, "c", Ctrl up). A second tap within
 * LOCK_WINDOW_MS locks it: it goes down at once and stays down (Alt held
 * over several Tabs, Ctrl held for a click on the trackpad) until it is
 * tapped again. A later tap of a latched modifier unlatches it. Every
 * method returns the key changes to send, [{code, down}], in order.
 */
export class StickyModifiers {
  constructor({ lockWindowMs = LOCK_WINDOW_MS } = {}) {
    this.lockWindowMs = lockWindowMs;
    this.states = new Map();   // code -> {state: "latched"|"locked", tappedMs}; off when absent
    this.pressed = [];         // codes down on the receiver, in the order pressed
  }

  /** "off", "latched" or "locked". */
  state(code) { return this.states.get(code)?.state ?? "off"; }

  get active() { return this.states.size > 0; }

  tap(code, tMs) {
    const s = this.states.get(code);
    if (!s) {
      this.states.set(code, { state: "latched", tappedMs: tMs });
      return [];
    }
    if (s.state === "latched" && tMs - s.tappedMs <= this.lockWindowMs) {
      s.state = "locked";
      return this.pressed.includes(code) ? [] : this.press(code);
    }
    this.states.delete(code);
    return this.release(code);
  }

  /** Before a key or text: latched modifiers go down. */
  before() {
    const out = [];
    for (const [code, s] of this.states) if (s.state === "latched" && !this.pressed.includes(code)) out.push(...this.press(code));
    return out;
  }

  /** After that key or text: latched modifiers come up and are off. */
  after() {
    const out = [];
    for (const [code, s] of [...this.states].reverse()) {
      if (s.state !== "latched") continue;
      this.states.delete(code);
      out.push(...this.release(code));
    }
    return out;
  }

  /** Everything up and off (the page hid, the keyboard closed). */
  releaseAll() {
    this.states.clear();
    return this.pressed.splice(0).reverse().map((code) => ({ code, down: false }));
  }

  /** The session ended (the receiver released everything): off, nothing to send. */
  forget() { this.states.clear(); this.pressed = []; }

  press(code) { this.pressed.push(code); return [{ code, down: true }]; }

  release(code) {
    const i = this.pressed.indexOf(code);
    if (i < 0) return [];
    this.pressed.splice(i, 1);
    return [{ code, down: false }];
  }
}

/**
 * Turns the page's keyboard actions into key and text messages for `out`
 * ({key(code, down, tMs), text(string, tMs)}), with sticky modifiers
 * around them. It never sends a release of a key it does not hold or a
 * press of one it holds, and `releaseAll` lets go of every key it holds.
 */
export class KeyboardSender {
  constructor(out, options) {
    this.out = out;
    this.modifiers = new StickyModifiers(options);
    this.held = new Set(); // non-modifier keys down on the receiver (pressed on the page and not yet released)
  }

  /** Something was sent with a modifier held: the hidden field's text no longer matches the desktop's. */
  get modifiersActive() { return this.modifiers.active; }

  emit(changes, tMs) { for (const { code, down } of changes) this.out.key(code, down, tMs); }

  /** A modifier key of the row was tapped. */
  tapModifier(code, tMs) { this.emit(this.modifiers.tap(code, tMs), tMs); }

  /** A key of the row went down (pointerdown): latched modifiers first. The desktop repeats it while held. */
  press(code, tMs) {
    if (this.held.has(code)) return;
    this.emit(this.modifiers.before(), tMs);
    this.held.add(code);
    this.out.key(code, true, tMs);
  }

  /** That key came up (pointerup or pointercancel): then the latched modifiers. */
  release(code, tMs) {
    if (!this.held.delete(code)) return;
    this.out.key(code, false, tMs);
    this.emit(this.modifiers.after(), tMs);
  }

  /** A key pressed and released at once (Enter or Backspace from the phone's keyboard). */
  tap(code, tMs) {
    if (this.held.has(code)) this.release(code, tMs);
    this.press(code, tMs);
    this.release(code, tMs);
  }

  /** The field changed ({backspaces, text} from textDiff): one Backspace per character removed, then the text. */
  edit({ backspaces, text }, tMs) {
    if (backspaces === 0 && text === "") return;
    this.emit(this.modifiers.before(), tMs);
    for (let i = 0; i < backspaces; i++) {
      this.out.key(KEY.backspace, true, tMs);
      this.out.key(KEY.backspace, false, tMs);
    }
    if (text) this.out.text(text, tMs);
    this.emit(this.modifiers.after(), tMs);
  }

  /** Every key this page holds comes up, modifiers last; sticky ones are off. */
  releaseAll(tMs) {
    for (const code of [...this.held]) this.release(code, tMs);
    this.emit(this.modifiers.releaseAll(), tMs);
  }

  /** The session ended: the receiver released every key; start clean, sending nothing. */
  forget() { this.held.clear(); this.modifiers.forget(); }
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * What a person reads when the receiver refused key or text messages:
 * `count` is, for reason 8 (untypable), the characters skipped, else the
 * messages refused.
 */
export function refusedMessage(reason, count) {
  switch (reason) {
    case 1: return "typing is off on this receiver";
    case 2: return "this phone may not type on this receiver";
    case 3: return `${plural(count, "key")} the receiver's keyboard does not have`;
    case 4: return `${plural(count, "release")} of a key not held`;
    case 5: return `too many keys at once: ${plural(count, "key")} dropped`;
    case 6: return `${plural(count, "text")} not valid UTF-8`;
    case 7: return `${plural(count, "text")} over 256 bytes`;
    case 8: return `${plural(count, "character")} this layout cannot type`;
    case 9: return `${plural(count, "key")} already held`;
    default: return `${plural(count, "key")} refused (reason ${reason})`;
  }
}

/** Why the keyboard is not available, from the receiver's hello (control.js KeyboardStatus). */
export function keyboardStatusMessage(status, pageFingerprint) {
  switch (status) {
    case 0: return "";
    case 1: return "typing is off on this receiver (remolo receive --no-keyboard)";
    case 2: return `this phone may not type: on the receiver run remolo peers allow-keyboard ${pageFingerprint}`;
    case 3: return "the receiver has no keyboard device";
    default: return `the receiver does not take keys (keyboard status ${status})`;
  }
}

/**
 * Refusals shown together for a moment: each (reason, count) adds to the
 * count already shown for its reason; `text` lists them, most recent
 * reason last.
 */
export class RefusalTally {
  constructor() { this.counts = new Map(); }
  add(reason, count) {
    const n = (this.counts.get(reason) ?? 0) + (reason === 8 ? count : 1);
    this.counts.delete(reason);
    this.counts.set(reason, n);
  }
  clear() { this.counts.clear(); }
  get text() { return [...this.counts].map(([r, n]) => refusedMessage(r, n)).join(" · "); }
}
