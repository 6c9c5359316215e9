// The page's Noise against the transcripts NoiseVectorTests.swift checks:
// the published cacophony vector for Noise_IK_25519_ChaChaPoly_BLAKE2b and
// the independent (Python noiseprotocol 0.3.1) Noise_XXpsk3 one, same keys,
// prologue and payloads, byte for byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HandshakeState, CipherState, PATTERNS, NoiseError } from "../../Sources/RemoloWeb/page/noise.js";
import { toHex, fromHex } from "../../Sources/RemoloWeb/page/bytes.js";
import { vectors, pair, payloads, prologue } from "./support/vectors.mjs";

for (const [name, v] of Object.entries(vectors)) {
  test(`${name}: handshake and transport messages match the known transcript`, async () => {
    const [i, r] = await pair(v);
    const n = v.pattern.messages.length;
    for (let m = 0; m < n; m++) {
      const [w, rd] = m % 2 === 0 ? [i, r] : [r, i];
      const msg = await w.writeMessage(payloads[m]);
      assert.equal(toHex(msg), v.ciphertexts[m], `handshake message ${m}`);
      assert.deepEqual(await rd.readMessage(msg), payloads[m]);
    }
    assert.ok(i.isFinished && r.isFinished);
    assert.equal(toHex(i.handshakeHash), v.handshakeHash);
    assert.equal(toHex(r.handshakeHash), v.handshakeHash);
    // Transport: Split() k1 for initiator -> responder, k2 back.
    const [ik1, ik2] = i.split(), [rk1, rk2] = r.split();
    const cs = (k) => { const c = new CipherState(); c.initializeKey(k); return c; };
    const isend = cs(ik1), irecv = cs(ik2), rsend = cs(rk2), rrecv = cs(rk1);
    for (let m = n; m < payloads.length; m++) {
      const [s, d] = m % 2 === 0 ? [isend, rrecv] : [rsend, irecv];
      const c = s.encryptWithAd(new Uint8Array(0), payloads[m]);
      assert.equal(toHex(c), v.ciphertexts[m], `transport message ${m}`);
      assert.deepEqual(d.decryptWithAd(new Uint8Array(0), c), payloads[m]);
    }
  });

  test(`${name}: a one-bit flip in any byte of any handshake message is refused, and a truncated message too`, async () => {
    const count = v.pattern.messages.length;
    for (let target = 0; target < count; target++) {
      const good = fromHex(v.ciphertexts[target]);
      // Bring a fresh reader up to the message under test, then feed it a flipped copy.
      const readerFor = async () => {
        const [i, r] = await pair(v);
        for (let m = 0; m < target; m++) {
          const [w, rd] = m % 2 === 0 ? [i, r] : [r, i];
          await rd.readMessage(await w.writeMessage(payloads[m]));
        }
        return target % 2 === 0 ? r : i;
      };
      // Sample bits across the whole message (every 7th bit keeps the run short
      // while touching every byte and every bit position).
      for (let bit = 0; bit < good.length * 8; bit += 7) {
        const bad = good.slice();
        bad[bit >> 3] ^= 1 << (bit & 7);
        const reader = await readerFor();
        await assert.rejects(reader.readMessage(bad), NoiseError, `message ${target} bit ${bit}`);
      }
      const reader = await readerFor();
      await assert.rejects(reader.readMessage(good.subarray(0, good.length - 1)), NoiseError, `message ${target} truncated`);
    }
  });
}

test("out-of-turn calls and missing keys are refused with a hint", async () => {
  const [i, r] = await pair(vectors.IK);
  await assert.rejects(i.readMessage(new Uint8Array(100)), /this side's turn to send/);
  await assert.rejects(r.writeMessage(new Uint8Array(0)), /peer's turn/);
  assert.throws(() => new HandshakeState({ pattern: PATTERNS.IK, initiator: true, prologue, staticKey: i.s }),
    /receiver's 32-byte static public key/);
  assert.throws(() => new HandshakeState({ pattern: PATTERNS.XXpsk3, initiator: true, prologue, staticKey: i.s }),
    /32-byte PSK/);
});

test("a low-order ephemeral key from the peer stops the handshake", async () => {
  const [i] = await pair(vectors.IK);
  await i.writeMessage(new Uint8Array(0));
  const msg2 = fromHex(vectors.IK.ciphertexts[1]);
  msg2.fill(0, 0, 32); // e = 0: every DH with it is all zeros
  await assert.rejects(i.readMessage(msg2), (e) => e instanceof NoiseError && e.code === "invalidPublicKey");
});
