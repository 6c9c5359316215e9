// The data channel's control messages (docs/protocol.md, "The data
// channel") byte for byte: the same vectors as the Swift side's
// ControlDataChannelTests, so the page and the receiver agree. And the
// redundant datagram layout the page seals with the data channel.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeControlMessage, decodeControlMessage, ChannelAnswerStatus, Feature } from "../../Sources/RemoloWeb/page/control.js";
import { DatagramSealer, openDatagram, motion, scroll, heartbeat, REDUNDANT_DATAGRAM_LENGTH, DATAGRAM_LENGTH } from "../../Sources/RemoloWeb/page/datagram.js";

const ascii = (s) => [...s].map((c) => c.charCodeAt(0));
const fp = Uint8Array.from({ length: 32 }, (_, i) => i);
const offerBytes = [0x0d, 4, ...ascii("aB3+"), 22, ...ascii("abcdefghijklmnopqrst/+"), ...fp];
const answerBytes = [0x0e, 0, 0x20, 0xfb, ...new Array(32).fill(0xaa), 16, ...ascii("U1u2U3u4U5u6U7u8"), 24,
  ...ascii("P1p2P3p4P5p6P7p8P9p0P1p2"), 2, 4, 192, 168, 1, 20, 6, 0xfd, 0, ...new Array(13).fill(0), 1];

const cases = [
  /* 1 */ [{ type: "channelOffer", ufrag: "aB3+", pwd: "abcdefghijklmnopqrst/+", fingerprint: fp }, offerBytes],
  /* 2 */ [{ type: "channelAnswer", status: ChannelAnswerStatus.ready, port: 8443, fingerprint: new Uint8Array(32).fill(0xaa),
    ufrag: "U1u2U3u4U5u6U7u8", pwd: "P1p2P3p4P5p6P7p8P9p0P1p2",
    addresses: [Uint8Array.from([192, 168, 1, 20]), Uint8Array.from([0xfd, 0, ...new Array(13).fill(0), 1])] }, answerBytes],
  /* 3 */ [{ type: "channelAnswer", status: ChannelAnswerStatus.unavailable }, [0x0e, 1]],
  /* 4 */ [{ type: "channelAnswer", status: ChannelAnswerStatus.busy }, [0x0e, 2]],
  /* 5 */ [{ type: "channelPath", path: 1, reason: 0 }, [0x0f, 1, 0]],
  /* 6 */ [{ type: "channelPath", path: 0, reason: 4 }, [0x0f, 0, 4]],
];
cases.forEach(([m, bytes], i) => test(`channel message ${i + 1} encodes as the table says and decodes back`, () => {
  assert.deepEqual([...encodeControlMessage(m)], bytes);
  const d = decodeControlMessage(Uint8Array.from(bytes));
  for (const [k, v] of Object.entries(m)) assert.deepEqual(v instanceof Uint8Array ? d[k] : d[k], v, k);
}));

const hostile = [
  /* 1 */ [0x0d],
  /* 2 */ [0x0d, 3, ...ascii("abc"), 22, ...new Array(22).fill(0x61), ...fp],
  /* 3 */ [0x0d, 4, ...ascii("ab c"), 22, ...new Array(22).fill(0x61), ...fp],
  /* 4 */ offerBytes.slice(0, -1),
  /* 5 */ [...offerBytes, 0],
  /* 6 */ [0x0e, 4],
  /* 7 */ [0x0e, 1, 0],
  /* 8 */ [0x0e, 0, 0, 0, ...answerBytes.slice(4)],
  /* 9 */ [...answerBytes.slice(0, -27), 0],
  /* 10 */ [...answerBytes.slice(0, -27), 1, 5, 1, 2, 3, 4],
  /* 11 */ [0x0f, 2, 0], /* 12 */ [0x0f, 0, 6], /* 13 */ [0x0f, 0, 0, 0],
];
hostile.forEach((bytes, i) => test(`hostile channel message ${i + 1} is refused`, () => {
  assert.throws(() => decodeControlMessage(Uint8Array.from(bytes)), { name: "ControlFrameError" });
}));

test("the data channel is feature bit 2", () => {
  assert.equal(Feature.dataChannel, 4);
  assert.deepEqual([...encodeControlMessage({ type: "hello", features: 7, keyboardStatus: 0 })], [0x09, 0, 0, 0, 7, 0]);
});

test("the redundant layout carries the running totals of every datagram sealed, wrapping at 2^32", () => {
  const key = new Uint8Array(32).fill(3), id = new Uint8Array(8).fill(9);
  const s = new DatagramSealer(key, id);
  const a = s.seal(motion(100, -50), 1n);          // before the grant: 49 bytes, still counted
  assert.equal(a.length, DATAGRAM_LENGTH);
  s.redundant = true;
  s.seal(scroll(7, -2), 2n);
  s.seal(motion(0x7fffffff, 0), 3n);
  const d = s.seal(heartbeat(), 4n);
  assert.equal(d.length, REDUNDANT_DATAGRAM_LENGTH);
  const o = openDatagram(key, d);
  assert.equal(o.counter, 3n);
  assert.deepEqual(o.totals, [(100 + 0x7fffffff) >>> 0, (-50) >>> 0, 7, (-2) >>> 0]);
  const bad = d.slice();
  bad[40] ^= 1;
  assert.equal(openDatagram(key, bad), null, "one bit flipped: refused");
});
