// Sealed control frames, key confirmation, and a whole sender handshake
// against an in-memory receiver built from the Noise responder.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ControlFrameSealer, ControlFrameOpener, ControlFrameError, encodeControlMessage, decodeControlMessage, MouseButton } from "../../Sources/RemoloWeb/page/control.js";
import { SenderSession } from "../../Sources/RemoloWeb/page/session.js";
import { SenderHandshake, HandshakeMessageReader, HandshakeError, PROLOGUE, DATAGRAM_KEY_LABEL, MessageType, encodeHandshakeMessage } from "../../Sources/RemoloWeb/page/handshake.js";
import { HandshakeState, PATTERNS } from "../../Sources/RemoloWeb/page/noise.js";
import { generateKeyPair } from "../../Sources/RemoloWeb/page/x25519.js";
import { pairingPsk, decodePairingCode } from "../../Sources/RemoloWeb/page/pairing.js";
import { toHex, fromHex, concat } from "../../Sources/RemoloWeb/page/bytes.js";

// The IK transcript's Split() keys (KnownAnswerTests.swift).
const k1 = fromHex("e5a7ef420e26421734c82df62522251fa2f56a6626d64039756ffec438b2883f");
const k2 = fromHex("065bc21e75d5ac1c0d227dcd158cc9e1979fc30efeb558622535b4b84eb6c80a");
// Frames computed from docs/protocol.md alone with Python's cryptography package:
// u16 L | u64 BE counter | ChaCha20Poly1305(key).encrypt(00000000 || counter LE, message, L || counter).
const frames = {
  ping0: "002100000000000000008e7b1a724ac2ece245a4043e8436a7ef87ea5581b6f1379943",
  button1: "00270000000000000001016250ea9f877e7eac93adfe7653ce9e9c079b43463e5b8e9d2875886173e9",
  pong0: "00210000000000000000ed36a3d0260edcad194824801c343e0d6e8ed0148cdbf2ffb8",
  bye1: "001a0000000000000001c9e1c500b06e5c5297f6471ee03ed86f0bec",
};
const token = 0x0102030405060708n;

test("control frames: L, big-endian counter, little-endian nonce, header as associated data", () => {
  const s = new ControlFrameSealer(k1);
  assert.equal(toHex(s.seal({ type: "ping", token })), frames.ping0);
  assert.equal(toHex(s.seal({ type: "button", button: MouseButton.left, down: true, senderTimeNs: 123456789, sequence: 7 })), frames.button1);
  const o = new ControlFrameOpener(k2);
  // Any chunking: one byte at a time.
  const all = fromHex(frames.pong0 + frames.bye1);
  const got = [];
  for (const b of all) got.push(...o.feed(Uint8Array.of(b)));
  assert.deepEqual(got, [{ type: "pong", token }, { type: "bye", reason: 3, reasonName: "shuttingDown" }]);
});

test("every message type round-trips with its exact length; invalid plaintexts are refused", () => {
  const messages = [
    { type: "settings", pointerSpeed: 1.5, acceleration: 0, scrollSpeed: 20, naturalScrolling: true },
    { type: "button", button: 5, down: false, senderTimeNs: 2n ** 64n - 1n, sequence: 0xffffffff },
    { type: "motion", dx: -2147483648, dy: 2147483647, senderTimeNs: 1n },
    { type: "scroll", dx: 256, dy: -256, senderTimeNs: 0n },
    { type: "ping", token: 0n }, { type: "pong", token: 2n ** 64n - 1n },
  ];
  const lengths = [14, 15, 17, 17, 9, 9];
  messages.forEach((m, i) => {
    const p = encodeControlMessage(m);
    assert.equal(p.length, lengths[i], m.type);
    assert.deepEqual(decodeControlMessage(p), m);
  });
  for (const bad of [[], [0x00], [0x7e], [0x05, 1, 2], [0x07], [0x07, 9], [0x02, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0x02, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0x01, 0x7f, 0xc0, 0, 0, 0x3f, 0x80, 0, 0, 0x3f, 0x80, 0, 0, 0]]) {
    assert.throws(() => decodeControlMessage(Uint8Array.from(bad)), ControlFrameError, toHex(Uint8Array.from(bad)));
  }
});

test("a frame out of order, altered, or of a bad length closes the channel for good", () => {
  const cases = [
    [fromHex(frames.bye1), "outOfOrder"], // counter 1 where 0 is next
    [(() => { const f = fromHex(frames.pong0); f[f.length - 3] ^= 0x10; return f; })(), "badTag"],
    [fromHex("ffff"), "oversize"],
    [fromHex("0018"), "badLength"],
  ];
  for (const [bytes, code] of cases) {
    const o = new ControlFrameOpener(k2);
    assert.throws(() => o.feed(bytes), (e) => e.code === code, code);
    assert.throws(() => o.feed(fromHex(frames.pong0)), (e) => e.code === code, `${code}, then still failed`);
  }
});

test("key confirmation: frame 0 is ping(token); only pong(token) confirms; a refusal is reported", () => {
  const result = { senderToReceiver: k1, receiverToSender: k2 };
  const s = new SenderSession(result, { token });
  assert.throws(() => s.seal({ type: "ping", token: 1n }), /confirmationPing\(\) before/);
  assert.equal(toHex(s.confirmationPing()), frames.ping0);
  assert.deepEqual(s.feed(fromHex(frames.pong0).subarray(0, 7)), []);
  assert.equal(s.confirmed, false);
  assert.deepEqual(s.feed(fromHex(frames.pong0 + frames.bye1).subarray(7)), [{ type: "bye", reason: 3, reasonName: "shuttingDown" }]);
  assert.equal(s.confirmed, true);

  const wrong = new SenderSession(result, { token: 99n });
  wrong.confirmationPing();
  assert.throws(() => wrong.feed(fromHex(frames.pong0)), /key confirmation failed/);

  const refused = new SenderSession(result, { token });
  refused.confirmationPing();
  assert.deepEqual(refused.feed(fromHex("0002")), []);
  assert.throws(() => refused.feed(fromHex("7f03")), (e) => e instanceof HandshakeError && e.reason === "pairingSecretWrong");
});

// A receiver in memory: the Noise responder with docs/protocol.md's framing and payloads.
async function receiverSide(pattern, staticKey, psk) {
  const noise = new HandshakeState({ pattern, initiator: false, prologue: PROLOGUE, staticKey, psk });
  const sessionId = globalThis.crypto.getRandomValues(new Uint8Array(8));
  return {
    noise, sessionId,
    async reply(msg) {
      const payload = await noise.readMessage(msg.noiseMessage);
      if (noise.isFinished) return null;
      const type = pattern === PATTERNS.IK ? MessageType.sessionResponse : MessageType.pairResponse;
      if (pattern === PATTERNS.IK) assert.equal(payload.length, 13);
      return encodeHandshakeMessage(type, await noise.writeMessage(concat(Uint8Array.of(1), sessionId)));
    },
    keys() {
      const datagramKey = noise.symmetric.deriveExtraKey(DATAGRAM_KEY_LABEL);
      const [a, b] = noise.split();
      return { datagramKey, senderToReceiver: a, receiverToSender: b };
    },
  };
}

async function run(sender, receiver) {
  const toReceiver = new HandshakeMessageReader(), toSender = new HandshakeMessageReader();
  let out = await sender.start();
  while (out) {
    const reply = await receiver.reply(toReceiver.feed(out));
    out = reply ? await sender.receive(toSender.feed(reply)) : null;
  }
}

test("pairing then a session with fresh random keys, against an in-memory receiver", async () => {
  const phone = await generateKeyPair(), box = await generateKeyPair();
  const psk = pairingPsk(decodePairingCode("7KQ2-M9XD-AB12-CD34-EF56-GH78"));
  const p = SenderHandshake.pairing({ identity: phone, psk });
  const pr = await receiverSide(PATTERNS.XXpsk3, box, psk);
  await run(p, pr);
  assert.deepEqual(p.result.peer, box.publicKey, "pairing reveals the receiver's static key");
  assert.deepEqual(pr.noise.remoteStatic, phone.publicKey);
  assert.deepEqual(p.result.sessionId, pr.sessionId);
  const pk = pr.keys();
  assert.deepEqual([p.result.datagramKey, p.result.senderToReceiver, p.result.receiverToSender], [pk.datagramKey, pk.senderToReceiver, pk.receiverToSender]);

  const s = SenderHandshake.session({ identity: phone, receiverPublicKey: p.result.peer });
  const sr = await receiverSide(PATTERNS.IK, box);
  await run(s, sr);
  assert.deepEqual(s.result.datagramKey, sr.keys().datagramKey);
  assert.notDeepEqual(s.result.datagramKey, p.result.datagramKey, "every connection has fresh keys");
});

test("a wrong pairing code fails at the receiver on message 3; a wrong receiver key fails at message 2", async () => {
  const phone = await generateKeyPair(), box = await generateKeyPair(), other = await generateKeyPair();
  const p = SenderHandshake.pairing({ identity: phone, psk: pairingPsk(new Uint8Array(15)) });
  const pr = await receiverSide(PATTERNS.XXpsk3, box, pairingPsk(new Uint8Array(15).fill(1)));
  await assert.rejects(run(p, pr), /did not authenticate/);

  const s = SenderHandshake.session({ identity: phone, receiverPublicKey: other.publicKey });
  const sr = await receiverSide(PATTERNS.IK, box);
  await assert.rejects(run(s, sr), /did not authenticate/); // message 1 is not addressed to this receiver
});

test("handshake framing: wrong lengths, types and sizes are refused before any cryptography", () => {
  for (const hex of ["0001", "0101", "000202ff", "00037777aa", "0002" + "02ff"]) {
    assert.throws(() => new HandshakeMessageReader().feed(fromHex(hex)), HandshakeError, hex);
  }
  const r = new HandshakeMessageReader();
  assert.deepEqual(r.feed(fromHex("00027f05")), { type: 0x7f, noiseMessage: Uint8Array.of(5) });
});

test("a refusal from the receiver throws its reason with what to do", async () => {
  const s = SenderHandshake.session({ identity: await generateKeyPair(), receiverPublicKey: (await generateKeyPair()).publicKey });
  await s.start();
  await assert.rejects(s.receive({ type: 0x7f, noiseMessage: Uint8Array.of(1) }),
    (e) => e instanceof HandshakeError && e.reason === "notPaired" && /pair it first/.test(e.message));
});
