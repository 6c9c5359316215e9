// Typing from the phone, the pure rules: the difference between two states
// of the hidden field (compositions, autocorrect, Backspace), sticky
// modifiers and the keys they wrap, what the hidden field keeps, and what a
// person reads about refusals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { KEY, textDiff, graphemes, KeyboardSender, StickyModifiers, refusedMessage, RefusalTally, keyboardStatusMessage,
  LOCK_WINDOW_MS } from "../../Sources/RemoloWeb/page/keyboard.js";
import { settledValue, FIELD_SEED, FIELD_MAX_CONTEXT, FIELD_KEEP_CONTEXT } from "../../Sources/RemoloWeb/page/typing.js";

const acute = "e\u0301"; // e + combining acute: one character on screen

const diffs = [
  /*  1 */ ["", "a", 0, "a"],
  /*  2 */ ["\na", "\nab", 0, "b"],                    // insertText
  /*  3 */ ["\nk", "\nka", 0, "a"],                    // a composition grows: letters appear as typed
  /*  4 */ ["\nka", "\nか", 2, "か"],                  // ... and turns into a kana
  /*  5 */ ["\nteh", "\nthe", 2, "he"],                // autocorrect (insertReplacementText)
  /*  6 */ ["\nhello world", "\nhello ", 5, ""],       // a word deleted at once
  /*  7 */ ["\n", "", 1, ""],                          // Backspace at the seed
  /*  8 */ ["\ne", "\n" + acute, 1, acute],            // the same letter, now with its accent
  /*  9 */ ["\n" + acute, "\ne", 1, "e"],              // Backspace deletes the whole character, then e is typed again
  /* 10 */ ["\n😀", "\n", 1, ""],
  /* 11 */ ["\n👍", "\n👍🏽", 1, "👍🏽"],                  // a skin tone joins the emoji before it
  /* 12 */ ["\n🇫", "\n🇫🇷", 1, "🇫🇷"],                  // two regional indicators make one flag
  /* 13 */ ["\nㅎ", "\n하", 1, "하"],                  // a Hangul syllable composed
  /* 14 */ ["\nabc", "\nabc", 0, ""],
  /* 15 */ ["\nab", "\nxy", 2, "xy"],
  /* 16 */ ["\nhi", "\nhi\n", 0, "\n"],
];
for (const [i, [before, after, backspaces, text]] of diffs.entries()) {
  test(`field change ${i + 1}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`, () => {
    assert.deepEqual(textDiff(before, after), { backspaces, text });
  });
}

test("graphemes: what one Backspace deletes", () => {
  assert.deepEqual(graphemes("\n" + acute + "😀🇫🇷a"), ["\n", acute, "😀", "🇫🇷", "a"]);
  assert.deepEqual(graphemes("\n\u0301"), ["\n", "\u0301"], "nothing joins the seed");
});

// Each case: steps, then the messages sent, as ["down"|"up", code] or ["text", s].
const { leftCtrl: CTRL, leftAlt: ALT, leftMeta: SUPER, tab: TAB, left: LEFT, up: UP, backspace: BS, enter: ENTER } = KEY;
const sticky = [
  /*  1 */ ["tap Ctrl, type c: Ctrl down, c, Ctrl up; then d alone",
    [["mod", CTRL, 0], ["edit", 0, "c", 100], ["edit", 0, "d", 200]],
    [["down", CTRL], ["text", "c"], ["up", CTRL], ["text", "d"]]],
  /*  2 */ ["two latched modifiers: pressed in order, released in reverse",
    [["mod", CTRL, 0], ["mod", ALT, 10], ["edit", 0, "t", 100]],
    [["down", CTRL], ["down", ALT], ["text", "t"], ["up", ALT], ["up", CTRL]]],
  /*  3 */ ["a slow second tap unlatches",
    [["mod", CTRL, 0], ["mod", CTRL, LOCK_WINDOW_MS + 1], ["edit", 0, "c", 1000]],
    [["text", "c"]]],
  /*  4 */ ["double tap locks Alt: down at once, held over two Tabs, up on the next tap",
    [["mod", ALT, 0], ["mod", ALT, 100], ["press", TAB, 200], ["release", TAB, 250], ["press", TAB, 300], ["release", TAB, 350], ["mod", ALT, 400]],
    [["down", ALT], ["down", TAB], ["up", TAB], ["down", TAB], ["up", TAB], ["up", ALT]]],
  /*  5 */ ["a latched Ctrl wraps a held arrow: released after the arrow",
    [["mod", CTRL, 0], ["press", LEFT, 100], ["release", LEFT, 900]],
    [["down", CTRL], ["down", LEFT], ["up", LEFT], ["up", CTRL]]],
  /*  6 */ ["a latched Ctrl wraps a whole edit (Ctrl+Backspace twice, then Ctrl+x)",
    [["mod", CTRL, 0], ["edit", 2, "x", 100]],
    [["down", CTRL], ["down", BS], ["up", BS], ["down", BS], ["up", BS], ["text", "x"], ["up", CTRL]]],
  /*  7 */ ["a key held by two fingers goes down once and up once",
    [["press", UP, 0], ["press", UP, 10], ["release", UP, 20], ["release", UP, 30]],
    [["down", UP], ["up", UP]]],
  /*  8 */ ["releaseAll: the held arrow, then the locked Ctrl",
    [["mod", CTRL, 0], ["mod", CTRL, 50], ["press", LEFT, 100], ["releaseAll", 200]],
    [["down", CTRL], ["down", LEFT], ["up", LEFT], ["up", CTRL]]],
  /*  9 */ ["releaseAll with a modifier only latched sends nothing and turns it off",
    [["mod", SUPER, 0], ["releaseAll", 100], ["edit", 0, "a", 200]],
    [["text", "a"]]],
  /* 10 */ ["forget (the session ended): nothing sent, nothing held",
    [["mod", CTRL, 0], ["mod", CTRL, 50], ["forget"], ["mod", CTRL, 1000], ["release", LEFT, 1100], ["releaseAll", 1200]],
    [["down", CTRL]]],
  /* 11 */ ["a release of a key never pressed sends nothing",
    [["release", LEFT, 0]],
    []],
  /* 12 */ ["Super locked then tapped: Super alone (the desktop's overview)",
    [["mod", SUPER, 0], ["mod", SUPER, 100], ["mod", SUPER, 200]],
    [["down", SUPER], ["up", SUPER]]],
  /* 13 */ ["Enter from the phone's keyboard with Ctrl latched",
    [["mod", CTRL, 0], ["tap", ENTER, 100]],
    [["down", CTRL], ["down", ENTER], ["up", ENTER], ["up", CTRL]]],
  /* 14 */ ["a locked Ctrl stays down over several texts",
    [["mod", CTRL, 0], ["mod", CTRL, 10], ["edit", 0, "c", 100], ["edit", 0, "v", 200]],
    [["down", CTRL], ["text", "c"], ["text", "v"]]],
  /* 15 */ ["an empty edit sends nothing and keeps the latch",
    [["mod", CTRL, 0], ["edit", 0, "", 100], ["edit", 0, "z", 200]],
    [["down", CTRL], ["text", "z"], ["up", CTRL]]],
  /* 16 */ ["a third tap after locking unlocks; a fourth latches again",
    [["mod", ALT, 0], ["mod", ALT, 10], ["mod", ALT, 20], ["mod", ALT, 30], ["edit", 0, "x", 100]],
    [["down", ALT], ["up", ALT], ["down", ALT], ["text", "x"], ["up", ALT]]],
];
for (const [i, [name, steps, want]] of sticky.entries()) {
  test(`sticky modifiers ${i + 1}: ${name}`, () => {
    const got = [];
    const times = [];
    const k = new KeyboardSender({
      key: (code, down, t) => { got.push([down ? "down" : "up", code]); times.push(t); },
      text: (s, t) => { got.push(["text", s]); times.push(t); },
    });
    for (const [op, a, b, c] of steps) {
      switch (op) {
        case "mod": k.tapModifier(a, b); break;
        case "press": k.press(a, b); break;
        case "release": k.release(a, b); break;
        case "tap": k.tap(a, b); break;
        case "edit": k.edit({ backspaces: a, text: b }, c); break;
        case "releaseAll": k.releaseAll(a); break;
        case "forget": k.forget(); break;
      }
    }
    assert.deepEqual(got, want);
    assert.deepEqual(times, [...times].sort((x, y) => x - y), "times never go back");
  });
}

test("after releaseAll nothing is held and every modifier is off", () => {
  const m = new StickyModifiers();
  m.tap(CTRL, 0); m.tap(CTRL, 10); m.tap(ALT, 20);
  assert.deepEqual([m.state(CTRL), m.state(ALT), m.state(SUPER)], ["locked", "latched", "off"]);
  assert.deepEqual(m.before(), [{ code: ALT, down: true }]);
  assert.deepEqual(m.releaseAll(), [{ code: ALT, down: false }, { code: CTRL, down: false }]);
  assert.deepEqual([m.state(CTRL), m.state(ALT), m.pressed], ["off", "off", []]);
});

const x = (n) => "x".repeat(n);
const settle = [
  /* 1 */ ["\n", {}, "\n"],
  /* 2 */ ["", {}, "\n"],                                  // the seed was deleted: back
  /* 3 */ ["\nabc", {}, "\nabc"],                          // context kept for the keyboard
  /* 4 */ ["\n" + x(FIELD_MAX_CONTEXT), {}, "\n" + x(FIELD_MAX_CONTEXT)],
  /* 5 */ ["\n" + x(FIELD_MAX_CONTEXT + 1), {}, "\n" + x(FIELD_KEEP_CONTEXT)],
  /* 6 */ ["\nabc", { stale: true }, "\n"],                // the desktop's caret moved
  /* 7 */ ["abc", {}, "\n"],
  /* 8 */ ["\n" + acute.repeat(FIELD_MAX_CONTEXT + 1), {}, "\n" + acute.repeat(FIELD_KEEP_CONTEXT)], // cut between characters
];
for (const [i, [value, options, want]] of settle.entries()) {
  test(`hidden field ${i + 1}: ${JSON.stringify(value).slice(0, 30)} settles to ${JSON.stringify(want).slice(0, 30)}`, () => {
    assert.equal(settledValue(value, options), want);
    assert.ok(want.startsWith(FIELD_SEED));
  });
}

test("refusals as a person reads them, added up while shown", () => {
  const cases = [
    /* 1 */ [8, 1, "1 character this layout cannot type"],
    /* 2 */ [8, 2, "2 characters this layout cannot type"],
    /* 3 */ [3, 1, "1 key the receiver's keyboard does not have"],
    /* 4 */ [5, 3, "too many keys at once: 3 keys dropped"],
    /* 5 */ [1, 1, "typing is off on this receiver"],
    /* 6 */ [42, 1, "1 key refused (reason 42)"],
  ];
  for (const [i, [reason, count, text]] of cases.entries()) assert.equal(refusedMessage(reason, count), text, `case ${i + 1}`);
  const t = new RefusalTally();
  t.add(8, 1);
  t.add(8, 1);
  assert.equal(t.text, "2 characters this layout cannot type");
  t.add(5, 7); // a flood refusal counts messages
  t.add(5, 7);
  assert.equal(t.text, "2 characters this layout cannot type · too many keys at once: 2 keys dropped");
  t.clear();
  assert.equal(t.text, "");
});

test("why the keyboard is not available, from the receiver's hello", () => {
  const fp = "ABCD-EFGH-JKMN-PQRS-TVWX-YZ01-2345-6789";
  assert.equal(keyboardStatusMessage(0, fp), "");
  assert.equal(keyboardStatusMessage(1, fp), "typing is off on this receiver (remolo receive --no-keyboard)");
  assert.equal(keyboardStatusMessage(2, fp), `this phone may not type: on the receiver run remolo peers allow-keyboard ${fp}`);
  assert.equal(keyboardStatusMessage(3, fp), "the receiver has no keyboard device");
});
