// The page's Noise against the transcripts NoiseVectorTests.swift checks:
// the published cacophony vector for Noise_IK_25519_ChaChaPoly_BLAKE2b and
// the independent (Python noiseprotocol 0.3.1) Noise_XXpsk3 one, same keys,
// prologue and payloads, byte for byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HandshakeState, CipherState, PATTERNS, NoiseError } from "../../Sources/RemoloWeb/page/noise.js";
import { importPrivateKey } from "../../Sources/RemoloWeb/page/x25519.js";
import { toHex, fromHex } from "../../Sources/RemoloWeb/page/bytes.js";

// The cacophony key set (cacophony.txt, shared by all 25519 vectors).
export const initStatic = "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1";
export const initEphemeral = "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a";
export const respStatic = "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893";
export const respEphemeral = "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b";
const prologue = fromHex("4a6f686e2047616c74"); // "John Galt"
const payloads = ["4c756477696720766f6e204d69736573", "4d757272617920526f746862617264",
  "462e20412e20486179656b", "4361726c204d656e676572",
  "4a65616e2d426170746973746520536179", "457567656e2042f6686d20766f6e2042617765726b"].map(fromHex);

export const vectors = {
  IK: {
    pattern: PATTERNS.IK, psk: undefined,
    ciphertexts: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e13bf70439c538e3602a7127af71a29cc",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088439f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571",
      "cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07",
      "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2",
      "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7",
      "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3",
    ],
    handshakeHash: "1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81",
  },
  XXpsk3: {
    pattern: PATTERNS.XXpsk3, psk: Uint8Array.from({ length: 32 }, (_, i) => i),
    ciphertexts: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c79440aa831d1e3bbd16bd7ffda87e9f7b6eeca2510006499a573ac27af3392ed1b69",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381a78489d56c9e2ac962826f25684980b25244dbfd505b7d903a94d4f4fd84004a1c7fbe94d686bc4c1f67259364f6f2a41cb40bf5198b9b3975be2cdd49d3e065a554e12c477d82029fabc6555bc1",
      "291dfeff6eff386e29adb0bdbd5a1ae9e09de4449c8695d109adcb63e80e489555792a3e9150eff75d6d45571f824ed23fbb6b147e16261207bb663cde9287589c608bac51a8a2f9b06ca8",
      "f951ee9dc0a4c0c69145096895b8360ab618256f6cd404f34fea95",
      "8f5bf4db08bd9f8b3aee23272468c64592c2eea1ac4d2317855fd07731b9d6b8ec",
      "520439dda571637467d70bc9680b351906afa9e541255bcfca8373aea4e3e213bf81ee0a08",
    ],
    handshakeHash: "c25ca67acae99c52ef9655c813bf6f2e9a68a07b570255363da68882bbd107f80eaf2e6c0565ca97fd7694ce8861c7623352ac61d06f661ab0f50aad87aa480f",
  },
};

const kp = (hex) => importPrivateKey(fromHex(hex));

export async function pair(v, p = prologue) {
  const rs = await kp(respStatic);
  const i = new HandshakeState({ pattern: v.pattern, initiator: true, prologue: p, staticKey: await kp(initStatic),
    remoteStatic: v.pattern === PATTERNS.IK ? rs.publicKey : undefined, psk: v.psk, ephemeral: await kp(initEphemeral) });
  const r = new HandshakeState({ pattern: v.pattern, initiator: false, prologue: p, staticKey: rs,
    psk: v.psk, ephemeral: await kp(respEphemeral) });
  return [i, r];
}

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

  test(`${name}: every one-bit flip of every handshake message is refused, and a truncated one too`, async () => {
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
