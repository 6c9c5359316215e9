// Typing from the phone, the DOM part: the phone's own soft keyboard,
// opened on a real but invisible textarea, read through beforeinput and
// input (never keydown codes: Android's soft keyboards report keyCode 229
// for nearly every key), and the special-keys row, whose keys go down on
// pointerdown and up on pointerup so the desktop repeats a held arrow or
// Backspace itself. keyboard.js holds the rules; this file only reads
// events.
import { KEY, textDiff, graphemes } from "./keyboard.js";

// What the hidden field holds. A phone keyboard edits the text before the
// caret (Gboard through Android's InputConnection: deleteSurroundingText,
// setComposingText, commitText; iOS the same way), so the field must hold
// something there:
// - With nothing before the caret, Backspace has nothing to delete: the
//   browser fires no beforeinput or input at all, and Android's keyboards
//   send at best a keydown with keyCode 229. So the field always starts
//   with FIELD_SEED, one character that is not on the desktop; deleting
//   it is a Backspace like any other, and it is put back at once.
// - The seed is a line break: it is a grapheme of its own (UAX #29 breaks
//   after LF), so nothing typed after it joins it into one character, and
//   no keyboard takes it for part of a word to recompose or autocorrect.
// - After the seed, the field keeps what was just typed (up to
//   FIELD_MAX_CONTEXT characters, trimmed to the last FIELD_KEEP_CONTEXT),
//   because the keyboard reads it: Gboard's underlined word, its
//   word-at-once Backspace and its autocorrection replace text that must
//   be in the field, and those replacements reach the desktop as
//   Backspaces plus the new text (textDiff).
// - Why not empty it after every change: setting the value while the
//   keyboard is editing makes Chrome restart the keyboard's input
//   connection, which ends Gboard's composition mid-word (the word is
//   committed or lost) and resets its suggestions and shift state. So the
//   field is rewritten only when no composition runs, and only when it has
//   to be: it grew past FIELD_MAX_CONTEXT, the seed was deleted, or the
//   desktop's text no longer matches it (Enter, an arrow, a modifier
//   combination, a click on the trackpad: then back to the seed alone).
export const FIELD_SEED = "\n";
export const FIELD_MAX_CONTEXT = 48;
export const FIELD_KEEP_CONTEXT = 16;

/**
 * The value the field should hold once no composition runs: `value` itself
 * (nothing to rewrite) or a shorter one. `stale`: the desktop's text moved
 * away from the field's, keep nothing.
 */
export function settledValue(value, { stale = false } = {}) {
  if (stale || !value.startsWith(FIELD_SEED)) return FIELD_SEED;
  const context = graphemes(value.slice(FIELD_SEED.length));
  if (context.length <= FIELD_MAX_CONTEXT) return value;
  return FIELD_SEED + context.slice(-FIELD_KEEP_CONTEXT).join("");
}

// Keys of a hardware keyboard paired with the phone that make no input
// event (a soft keyboard has none of them): sent as keys.
const HARDWARE_KEYS = { Escape: KEY.esc, Tab: KEY.tab, ArrowUp: KEY.up, ArrowDown: KEY.down, ArrowLeft: KEY.left, ArrowRight: KEY.right };

export class SoftKeyboard {
  /**
   * @param {HTMLTextAreaElement} field the hidden field
   * @param {import("./keyboard.js").KeyboardSender} sender
   * @param {{now?: () => number, onBlur?: () => void}} options
   */
  constructor(field, sender, { now = () => performance.now(), onBlur } = {}) {
    this.field = field;
    this.sender = sender;
    this.now = now;
    this.composing = false;
    this.stale = false;
    this.field.value = this.shadow = FIELD_SEED;
    field.addEventListener("beforeinput", (e) => this.beforeInput(e));
    field.addEventListener("input", (e) => this.input(e));
    field.addEventListener("compositionstart", () => { this.composing = true; });
    field.addEventListener("compositionend", () => { this.composing = false; this.settle(); });
    field.addEventListener("keydown", (e) => this.keyDown(e));
    field.addEventListener("keyup", (e) => this.keyUp(e));
    field.addEventListener("blur", () => { this.sender.releaseAll(this.now()); onBlur?.(); });
    // The caret stays at the end: every edit is then an edit of the end,
    // which is what textDiff reads (a keyboard's cursor drag or a long
    // press moves it; the desktop's caret did not move).
    document.addEventListener("selectionchange", () => {
      if (document.activeElement === field && !this.composing) this.caretToEnd();
    });
  }

  get focused() { return document.activeElement === this.field; }

  /** Opens the phone's keyboard: call from a user gesture (a click), or iOS will not show it. */
  open() {
    this.settle();
    this.field.focus({ preventScroll: true });
    this.caretToEnd();
  }

  /** Closes it; the blur lets go of every key. */
  close() { this.field.blur(); }

  /** The desktop's caret or text changed by other means: the field's context no longer applies. */
  forgetContext() {
    this.stale = true;
    this.settle();
  }

  beforeInput(e) {
    const t = this.now();
    switch (e.inputType) {
      case "insertLineBreak":
      case "insertParagraph":
        // Enter is a key (a chat's "send", a terminal's "run"), not text.
        if (!e.cancelable) return; // then it arrives as input, below
        e.preventDefault();
        this.sender.tap(KEY.enter, t);
        this.forgetContext();
        return;
      case "deleteContentForward":
      case "deleteWordForward":
        // Nothing follows the caret in the field; the desktop may have text there.
        e.preventDefault();
        this.sender.tap(KEY.delete, t);
        return;
      case "historyUndo":
      case "historyRedo":
        e.preventDefault(); // the field's history is not the desktop's
        return;
      default:
        if (e.inputType.startsWith("format")) e.preventDefault();
    }
  }

  input(e) {
    const t = this.now();
    if (e.inputType === "insertLineBreak" || e.inputType === "insertParagraph") {
      this.sender.tap(KEY.enter, t);
      this.shadow = this.field.value;
      this.forgetContext();
      return;
    }
    // insertText, insertCompositionText (each step of a composition, so
    // letters appear as they are typed), insertReplacementText
    // (autocorrect, a suggestion), deleteContentBackward, deleteWordBackward,
    // insertFromPaste...: whatever changed, as Backspaces and text.
    const value = this.field.value;
    const diff = textDiff(this.shadow, value);
    this.shadow = value;
    // With a sticky modifier, text is a shortcut (Ctrl+C), not text.
    if (this.sender.modifiersActive && (diff.backspaces || diff.text)) this.stale = true;
    this.sender.edit(diff, t);
    if (!this.composing && !e.isComposing) this.settle();
  }

  /** Rewrites the field when it has to (see FIELD_SEED); never during a composition. */
  settle() {
    if (this.composing) return;
    const v = settledValue(this.field.value, { stale: this.stale });
    this.stale = false;
    if (v !== this.field.value) this.field.value = v;
    this.shadow = v;
    this.caretToEnd();
  }

  caretToEnd() {
    const n = this.field.value.length;
    if (this.field.selectionStart !== n || this.field.selectionEnd !== n) this.field.setSelectionRange(n, n);
  }

  keyDown(e) {
    if (e.isComposing || e.keyCode === 229) return;
    const code = HARDWARE_KEYS[e.key];
    if (code === undefined) return;
    e.preventDefault(); // Tab would move the focus away and close the keyboard
    if (!e.repeat) this.sender.press(code, this.now());
    this.forgetContext();
  }

  keyUp(e) {
    const code = HARDWARE_KEYS[e.key];
    if (code !== undefined) this.sender.release(code, this.now());
  }
}

/**
 * The special-keys row: buttons with data-key (an evdev code, pressed
 * while the finger is on it) or data-mod (a sticky modifier, toggled on
 * touch). `onKey()` is called after each, to update the row and forget
 * the field's context.
 */
export function bindKeyRow(row, sender, { now = () => performance.now(), onKey } = {}) {
  const down = new Map(); // pointerId -> code
  const up = (e) => {
    const code = down.get(e.pointerId);
    if (code === undefined) return;
    down.delete(e.pointerId);
    if (![...down.values()].includes(code)) sender.release(code, now());
    e.currentTarget.classList?.remove("down");
    onKey?.();
  };
  for (const b of row.querySelectorAll("button[data-key], button[data-mod]")) {
    // Taking the pointer on pointerdown (and no mouse events after it)
    // keeps the focus, and so the phone's keyboard, on the hidden field.
    b.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      b.setPointerCapture?.(e.pointerId);
      if (b.dataset.mod) {
        sender.tapModifier(Number(b.dataset.mod), now());
      } else {
        const code = Number(b.dataset.key);
        down.set(e.pointerId, code);
        b.classList.add("down");
        sender.press(code, now());
      }
      onKey?.();
    });
    b.addEventListener("pointerup", up);
    b.addEventListener("pointercancel", up);
    b.addEventListener("lostpointercapture", up);
    b.addEventListener("mousedown", (e) => e.preventDefault());
    b.addEventListener("contextmenu", (e) => e.preventDefault());
  }
  /** The page forgot the keys (released elsewhere): later pointerups send nothing. */
  return { forget() { down.clear(); for (const b of row.querySelectorAll(".down")) b.classList.remove("down"); } };
}
