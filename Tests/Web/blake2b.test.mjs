// BLAKE2b (RFC 7693) and HMAC-BLAKE2b as the page computes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import nodeCrypto from "node:crypto";
import { Blake2b, blake2b, hmacBlake2b } from "../../Sources/RemoloWeb/page/blake2b.js";
import { toHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";

const range = (n) => Uint8Array.from({ length: n }, (_, i) => i & 0xff);

test('RFC 7693 appendix A: BLAKE2b-512("abc")', () => {
  assert.equal(toHex(blake2b(utf8("abc"))),
    "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1" +
    "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
});

// blake2b-kat.txt of the BLAKE2 reference: key 00..3f, input 00..(n-1).
// n = 0 is a key block alone; 127/128/129 straddle the one-block edge where
// the final flag must land on the right block.
const keyedKAT = {
  0: "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568",
  1: "961f6dd1e4dd30f63901690c512e78e4b45e4742ed197c3c5e45c549fd25f2e4187b0bc9fe30492b16b0d0bc4ef9b0f34c7003fac09a5ef1532e69430234cebd",
  2: "da2cfbe2d8409a0f38026113884f84b50156371ae304c4430173d08a99d9fb1b983164a3770706d537f49e0c916d9f32b95cc37a95b99d857436f0232c88a965",
  127: "76d2d819c92bce55fa8e092ab1bf9b9eab237a25267986cacf2b8ee14d214d730dc9a5aa2d7b596e86a1fd8fa0804c77402d2fcd45083688b218b1cdfa0dcbcb",
  128: "72065ee4dd91c2d8509fa1fc28a37c7fc9fa7d5b3f8ad3d0d7a25626b57b1b44788d4caf806290425f9890a3a2a35a905ab4b37acfd0da6e4517b2525c9651e4",
  129: "64475dfe7600d7171bea0b394e27c9b00d8e74dd1e416a79473682ad3dfdbb706631558055cfc8a40e07bd015a4540dcdea15883cbbf31412df1de1cd4152b91",
  255: "142709d62e28fcccd0af97fad0f8465b971e82201dc51070faa0372aa43e92484be1c1e73ba10906d5d1853db6a4106e0a7bf9800d373d6dee2d46d62ef2a461",
};

test("BLAKE2 reference keyed vectors (blake2b-kat.txt)", () => {
  for (const [n, expected] of Object.entries(keyedKAT)) {
    assert.equal(toHex(blake2b(range(Number(n)), { key: range(64) })), expected, `input of ${n} bytes`);
  }
});

test("shorter digests and short keys change the parameter block", () => {
  // Python's hashlib.blake2b(b"abc", digest_size=20) and (digest_size=32, key=b"k"*7).
  assert.equal(toHex(blake2b(utf8("abc"), { outLength: 20 })), "384264f676f39536840523f284921cdc68b6846b");
  assert.equal(toHex(blake2b(utf8("abc"), { outLength: 32, key: utf8("kkkkkkk") })),
    "0bcd9c1725b518230ceb95097f4b4d8a98bfccdfd29227aa4124822be2678732");
});

test("unkeyed BLAKE2b-512 agrees with Node's OpenSSL at every length up to 300, fed in any chunks", () => {
  const data = nodeCrypto.randomBytes(300);
  for (let n = 0; n <= 300; n++) {
    const msg = new Uint8Array(data.subarray(0, n));
    const expected = nodeCrypto.createHash("blake2b512").update(msg).digest("hex");
    assert.equal(toHex(blake2b(msg)), expected, `${n} bytes in one piece`);
    const cut = n % 131;
    assert.equal(toHex(new Blake2b().update(msg.subarray(0, cut)).update(msg.subarray(cut)).digest()), expected, `${n} bytes cut at ${cut}`);
  }
});

test("HMAC-BLAKE2b-512 (RFC 2104) matches the Swift suite's known answer", () => {
  // NoiseVectorTests.hmacKnownAnswer: key 0x0b * 20, "Hi There" (Python's hmac module).
  assert.equal(toHex(hmacBlake2b(new Uint8Array(20).fill(0x0b), [utf8("Hi There")])),
    "358a6a184924894fc34bee5680eedf57d84a37bb38832f288e3b27dc63a98cc8c91e76da476b508bc6b2d408a248857452906e4a20b48c6b4b55d2df0fe1dd24");
  // A key longer than the 128-byte block is hashed first (Python: hmac.new(bytes(range(200)), b"x", hashlib.blake2b)).
  assert.equal(toHex(hmacBlake2b(range(200), [utf8("x")])),
    "ee62e43c15dddc2a8f729afa95cd53649f20cfde0b3ef8c95e3a98209b0ff11c628667a1bba4694e37a688f1b553c63feb3af8ed212bfdfb58cfd96b75e974cb");
});

test("bad parameters say what is allowed", () => {
  assert.throws(() => new Blake2b(65), /1\.\.64/);
  assert.throws(() => new Blake2b(64, new Uint8Array(65)), /at most 64 bytes/);
  const h = new Blake2b();
  h.digest();
  assert.throws(() => h.update(new Uint8Array(1)), /start a new hash/);
});
