// RFC 8439 test vectors for the page's ChaCha20, Poly1305 and AEAD, plus
// tamper rejection and a cross-check against Node's OpenSSL on random input.
import { test } from "node:test";
import assert from "node:assert/strict";
import nodeCrypto from "node:crypto";
import { chacha20Block, chacha20, poly1305, aeadSeal, aeadOpen } from "../../Sources/RemoloWeb/page/chacha20poly1305.js";
import { toHex, fromHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

const sunscreen = utf8("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.");
const key0to31 = fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");

test("RFC 8439 2.3.2: ChaCha20 block function", () => {
  const out = chacha20Block(key0to31, 1, fromHex("000000090000004a00000000"));
  assert.equal(toHex(out),
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e" +
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e");
});

test("RFC 8439 2.4.2: ChaCha20 encryption", () => {
  const ct = chacha20(key0to31, 1, fromHex("000000000000004a00000000"), sunscreen);
  assert.equal(toHex(ct),
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b" +
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8" +
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736" +
    "5af90bbf74a35be6b40b8eedf2785e42874d");
  assert.deepEqual(chacha20(key0to31, 1, fromHex("000000000000004a00000000"), ct), sunscreen);
});

test("RFC 8439 2.5.2: Poly1305", () => {
  const tag = poly1305(fromHex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b"),
    utf8("Cryptographic Forum Research Group"));
  assert.equal(toHex(tag), "a8061dc1305136c6c22b8baf0c0127a9");
});

test("RFC 8439 A.3: Poly1305 vectors for the carries and the final reduction", () => {
  // A.3 #6: r = 2, s = 2^128 - 1: adding s must wrap mod 2^128.
  const key = fromHex("02000000000000000000000000000000ffffffffffffffffffffffffffffffff");
  const msg = fromHex("02000000000000000000000000000000");
  assert.equal(toHex(poly1305(key, msg)), "03000000000000000000000000000000");
  // A.3 #7: the accumulator passes 2^130 and must be folded back.
  const key7 = fromHex("0100000000000000000000000000000000000000000000000000000000000000");
  const msg7 = fromHex("ffffffffffffffffffffffffffffffff" + "f0ffffffffffffffffffffffffffffff" + "11000000000000000000000000000000");
  assert.equal(toHex(poly1305(key7, msg7)), "05000000000000000000000000000000");
});

const aeadKey = fromHex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
const aeadNonce = fromHex("070000004041424344454647");
const aeadAad = fromHex("50515253c0c1c2c3c4c5c6c7");
const aeadExpected =
  "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6" +
  "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36" +
  "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc" +
  "3ff4def08e4b7a9de576d26586cec64b6116" + "1ae10b594f09e26a7e902ecbd0600691";

test("RFC 8439 2.8.2: AEAD_CHACHA20_POLY1305 seal and open", () => {
  const sealed = aeadSeal(aeadKey, aeadNonce, sunscreen, aeadAad);
  assert.equal(toHex(sealed), aeadExpected);
  assert.deepEqual(aeadOpen(aeadKey, aeadNonce, sealed, aeadAad), sunscreen);
});

test("every one-bit change of ciphertext, tag, aad, nonce or key is refused with no plaintext", () => {
  const sealed = fromHex(aeadExpected);
  const flips = (bytes, use) => {
    for (let i = 0; i < bytes.length * 8; i++) {
      const bad = bytes.slice();
      bad[i >> 3] ^= 1 << (i & 7);
      assert.equal(use(bad), null, `bit ${i}`);
    }
  };
  flips(sealed, (b) => aeadOpen(aeadKey, aeadNonce, b, aeadAad));
  flips(aeadAad, (b) => aeadOpen(aeadKey, aeadNonce, sealed, b));
  flips(aeadNonce, (b) => aeadOpen(aeadKey, b, sealed, aeadAad));
  flips(aeadKey, (b) => aeadOpen(b, aeadNonce, sealed, aeadAad));
  assert.equal(aeadOpen(aeadKey, aeadNonce, sealed.subarray(0, sealed.length - 1), aeadAad), null, "truncated");
  assert.equal(aeadOpen(aeadKey, aeadNonce, sealed.subarray(0, 15), aeadAad), null, "shorter than a tag");
});

test("AEAD agrees with Node's OpenSSL on random lengths", () => {
  for (let t = 0; t < 200; t++) {
    const key = nodeCrypto.randomBytes(32), nonce = nodeCrypto.randomBytes(12);
    const pt = nodeCrypto.randomBytes(nodeCrypto.randomInt(0, 300)), aad = nodeCrypto.randomBytes(nodeCrypto.randomInt(0, 40));
    const c = nodeCrypto.createCipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
    c.setAAD(aad, { plaintextLength: pt.length });
    const expected = Buffer.concat([c.update(pt), c.final(), c.getAuthTag()]).toString("hex");
    const sealed = aeadSeal(new Uint8Array(key), new Uint8Array(nonce), new Uint8Array(pt), new Uint8Array(aad));
    assert.equal(toHex(sealed), expected, `plaintext ${pt.length} bytes, aad ${aad.length} bytes`);
    assert.equal(toHex(aeadOpen(new Uint8Array(key), new Uint8Array(nonce), sealed, new Uint8Array(aad))), pt.toString("hex"));
  }
});

// Poly1305 straight from RFC 8439 section 2.5.1 in BigInt arithmetic: slow
// and not constant-time, but obviously right, to check the limb code on
// inputs that stress its carries.
function poly1305Reference(key, msg) {
  const le = (b) => b.reduceRight((acc, x) => (acc << 8n) | BigInt(x), 0n);
  const r = le(key.subarray(0, 16)) & 0x0ffffffc0ffffffc0ffffffc0fffffffn;
  const s = le(key.subarray(16, 32));
  const p = (1n << 130n) - 5n;
  let a = 0n;
  for (let o = 0; o < msg.length; o += 16) {
    const block = msg.subarray(o, Math.min(o + 16, msg.length));
    a = ((a + le(block) + (1n << BigInt(8 * block.length))) * r) % p;
  }
  a = (a + s) & ((1n << 128n) - 1n);
  return Uint8Array.from({ length: 16 }, (_, i) => Number((a >> BigInt(8 * i)) & 0xffn));
}

test("Poly1305 agrees with a BigInt transcription of RFC 8439 2.5.1, extreme inputs included", () => {
  for (let t = 0; t < 1500; t++) {
    const key = new Uint8Array(nodeCrypto.randomBytes(32));
    const msg = new Uint8Array(nodeCrypto.randomBytes(nodeCrypto.randomInt(0, 200)));
    if (t % 3 === 0) { key.fill(0xff, 0, t % 2 ? 32 : 16); msg.fill(0xff); }
    assert.equal(toHex(poly1305(key, msg)), toHex(poly1305Reference(key, msg)), `key ${toHex(key)}, ${msg.length} bytes`);
  }
});
