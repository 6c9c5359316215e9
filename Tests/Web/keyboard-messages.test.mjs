// The keyboard extension's control messages (hello 0x09, key 0x0a, text
// 0x0b, refused 0x0c): known answers, round trips, and every malformed
// plaintext refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ControlFrameSealer, ControlFrameOpener, ControlFrameError, encodeControlMessage, decodeControlMessage, splitText,
  MAX_TEXT_BYTES } from "../../Sources/RemoloWeb/page/control.js";
import { toHex, fromHex } from "../../Sources/RemoloWeb/page/bytes.js";

// The IK transcript's Split() keys, as in control.test.mjs.
const k1 = fromHex("e5a7ef420e26421734c82df62522251fa2f56a6626d64039756ffec438b2883f");
const k2 = fromHex("065bc21e75d5ac1c0d227dcd158cc9e1979fc30efeb558622535b4b84eb6c80a");

// Plaintexts written from the protocol table alone (big-endian fields).
const known = [
  /* 1 */ [{ type: "hello", features: 1, keyboardStatus: 0 }, "09" + "00000001" + "00"],
  /* 2 */ [{ type: "hello", features: 0, keyboardStatus: 2 }, "09" + "00000000" + "02"],
  /* 3 */ [{ type: "hello", features: 0xfffffffe, keyboardStatus: 3 }, "09" + "fffffffe" + "03"],
  /* 4 */ [{ type: "key", code: 29, down: true, senderTimeNs: 1234567890123n, sequence: 0 }, "0a" + "001d" + "01" + "0000011f71fb04cb" + "00000000"],
  /* 5 */ [{ type: "key", code: 0xffff, down: false, senderTimeNs: 2n ** 64n - 1n, sequence: 0xffffffff }, "0a" + "ffff" + "00" + "ffffffffffffffff" + "ffffffff"],
  /* 6 */ [{ type: "text", senderTimeNs: 1234567890124n, sequence: 1, text: "cé€😀" }, "0b" + "0000011f71fb04cc" + "00000001" + "63" + "c3a9" + "e282ac" + "f09f9880"],
  /* 7 */ [{ type: "text", senderTimeNs: 0n, sequence: 7, text: "\n" }, "0b" + "0000000000000000" + "00000007" + "0a"],
  /* 8 */ [{ type: "refused", sequence: 1, reason: 8, reasonName: "untypable", count: 2 }, "0c" + "00000001" + "08" + "0002"],
  /* 9 */ [{ type: "refused", sequence: 0xdeadbeef, reason: 9, reasonName: "alreadyHeld", count: 65535 }, "0c" + "deadbeef" + "09" + "ffff"],
  /* 10 */ [{ type: "hello", features: 0, keyboardStatus: 200 }, "09" + "00000000" + "c8"], // a status of a newer receiver: not allowed
];

for (const [i, [message, hex]] of known.entries()) {
  test(`keyboard message ${i + 1}: ${message.type} encodes to its known bytes and back`, () => {
    const { reasonName, ...fields } = message;
    assert.equal(toHex(encodeControlMessage(fields)), hex);
    assert.deepEqual(decodeControlMessage(fromHex(hex)), message);
  });
}

test("text: the longest (256 bytes of UTF-8, 269 in all) and shortest round-trip", () => {
  const cases = [["a".repeat(256), 269], ["€".repeat(85) + "a", 269], ["x", 14], ["😀".repeat(64), 269]];
  for (const [i, [text, length]] of cases.entries()) {
    const p = encodeControlMessage({ type: "text", senderTimeNs: 9n, sequence: 9, text });
    assert.equal(p.length, length, `case ${i + 1}`);
    assert.equal(decodeControlMessage(p).text, text, `case ${i + 1}`);
  }
});

// Each must be refused with a ControlFrameError saying why.
const te = (hexText) => "0b" + "0000000000000001" + "00000002" + hexText;
const refused = [
  /*  1 */ ["09" + "00000001", /type 0x9 is 6 bytes, got 5/],
  /*  2 */ ["09" + "0000000100" + "00", /type 0x9 is 6 bytes, got 7/],
  /*  3 */ ["09" + "00000001" + "04", /grants the keyboard with status 4/],
  /*  4 */ ["09" + "00000001" + "01", /grants the keyboard with status 1/],
  /*  5 */ ["0a" + "001d" + "01" + "0000000000000000" + "000000", /type 0xa is 16 bytes, got 15/],
  /*  6 */ ["0a" + "001d" + "01" + "0000000000000000" + "0000000000", /type 0xa is 16 bytes, got 17/],
  /*  7 */ ["0a" + "001d" + "02" + "0000000000000000" + "00000000", /key state 2/],
  /*  8 */ ["0b" + "0000000000000001" + "00000002", /text\) is 14..269 bytes, got 13/],
  /*  9 */ ["0b" + "00000000000000", /text\) is 14..269 bytes, got 8/],
  /* 10 */ [te("61".repeat(257)), /text\) is 14..269 bytes, got 270/],
  /* 11 */ [te("ff"), /not valid UTF-8/],
  /* 12 */ [te("c3"), /not valid UTF-8/],                 // a truncated 2-byte sequence
  /* 13 */ [te("c0af"), /not valid UTF-8/],               // an overlong "/"
  /* 14 */ [te("eda080"), /not valid UTF-8/],             // a UTF-16 surrogate (U+D800)
  /* 15 */ [te("f4908080"), /not valid UTF-8/],           // above U+10FFFF
  /* 16 */ [te("61".repeat(255) + "e2"), /not valid UTF-8/], // 256 bytes, cut inside a character
  /* 17 */ ["0c" + "00000001" + "08" + "00", /type 0xc is 8 bytes, got 7/],
  /* 18 */ ["0c" + "00000001" + "00" + "0001", /unknown refused reason 0/],
  /* 19 */ ["0c" + "00000001" + "0a" + "0001", /unknown refused reason 10/],
  /* 20 */ ["11", /unknown type 0x11/],   // 0x0d-0x0f are the data channel's (control.test.mjs), 0x10 the gesture end
];
for (const [i, [hex, why]] of refused.entries()) {
  test(`malformed keyboard message ${i + 1} is refused: ${why.source}`, () => {
    assert.throws(() => decodeControlMessage(fromHex(hex)), (e) => e instanceof ControlFrameError && e.code === "badMessage" && why.test(e.message));
  });
}

test("the encoder refuses what no receiver would take", () => {
  const cases = [
    /* 1 */ [{ type: "text", senderTimeNs: 0, sequence: 0, text: "" }, /1\.\.256 bytes of UTF-8, got 0/],
    /* 2 */ [{ type: "text", senderTimeNs: 0, sequence: 0, text: "a".repeat(257) }, /got 257; split longer text/],
    /* 3 */ [{ type: "text", senderTimeNs: 0, sequence: 0, text: "é".repeat(129) }, /got 258/],
    /* 4 */ [{ type: "text", senderTimeNs: 0, sequence: 0, text: "a\ud800" }, /lone surrogate/],
    /* 5 */ [{ type: "key", code: 0x10000, down: true, senderTimeNs: 0, sequence: 0 }, /u16/],
    /* 6 */ [{ type: "key", code: 1, down: true, senderTimeNs: -1, sequence: 0 }, /senderTimeNs/],
    /* 7 */ [{ type: "key", code: 1, down: true, senderTimeNs: 0, sequence: 2 ** 32 }, /sequence must be a u32/],
    /* 8 */ [{ type: "hello", features: -1, keyboardStatus: 0 }, /features must be a u32/],
    /* 9 */ [{ type: "refused", sequence: 0, reason: 8, count: 70000 }, /count must be a u16/],
  ];
  for (const [i, [m, why]] of cases.entries()) assert.throws(() => encodeControlMessage(m), why, `case ${i + 1}`);
});

test("splitText: pieces of at most 256 bytes, never inside a character, nothing lost", () => {
  const cases = [
    /* 1 */ ["", []],
    /* 2 */ ["abc", [3]],
    /* 3 */ ["a".repeat(256), [256]],
    /* 4 */ ["a".repeat(257), [256, 1]],
    /* 5 */ ["a".repeat(255) + "é", [255, 2]],
    /* 6 */ ["a".repeat(254) + "é", [256]],
    /* 7 */ ["😀".repeat(65), [256, 4]],
    /* 8 */ ["€".repeat(86), [255, 3]],
  ];
  const enc = new TextEncoder();
  for (const [i, [text, sizes]] of cases.entries()) {
    const pieces = splitText(text);
    assert.deepEqual(pieces.map((p) => enc.encode(p).length), sizes, `case ${i + 1}`);
    assert.equal(pieces.join(""), text, `case ${i + 1}`);
    for (const p of pieces) assert.ok(enc.encode(p).length <= MAX_TEXT_BYTES);
  }
});

// Sealed frames computed from the protocol with Python's cryptography
// package, as control.test.mjs's: hello as the sender's frame 1 (after the
// confirmation ping), then a key and a text; the receiver's hello and a
// refusal as its frames 1 and 2.
const frames = {
  hello1: "001e00000000000000010a6351ea9e87c4bebf9b9214573739d5117e35527c35",
  key2: "00280000000000000002ab5681e80945950ca037fa67c698b19b0710fc8c7edcfde49fd96424463ffef1",
  text3: "002f000000000000000342290ac008454432ea5142858ec48eaf6e113a67b0a7763fe2ce81ca87d10290726a03bd0201bf",
  pong0: "00210000000000000000ed36a3d0260edcad194824801c343e0d6e8ed0148cdbf2ffb8",
  rhello1: "001e0000000000000001c7e26eb755656023c84382b0f829e666df8f0064ec0b",
  refused2: "0020000000000000000208ba1535cab9de46204d1eccc26170f61f0413249d1e4985",
};

test("sealed keyboard frames: the sender's hello, key and text; the receiver's hello and refusal", () => {
  const s = new ControlFrameSealer(k1);
  s.seal({ type: "ping", token: 0x0102030405060708n });
  assert.equal(toHex(s.seal({ type: "hello", features: 1, keyboardStatus: 0 })), frames.hello1);
  assert.equal(toHex(s.seal({ type: "key", code: 29, down: true, senderTimeNs: 1234567890123n, sequence: 0 })), frames.key2);
  assert.equal(toHex(s.seal({ type: "text", senderTimeNs: 1234567890124n, sequence: 1, text: "cé€😀" })), frames.text3);
  const o = new ControlFrameOpener(k2);
  assert.deepEqual(o.feed(fromHex(frames.pong0 + frames.rhello1 + frames.refused2)), [
    { type: "pong", token: 0x0102030405060708n },
    { type: "hello", features: 0, keyboardStatus: 2 },
    { type: "refused", sequence: 1, reason: 8, reasonName: "untypable", count: 2 },
  ]);
});
