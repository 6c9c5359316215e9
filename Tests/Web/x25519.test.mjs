// The WebCrypto X25519 wrapper: RFC 7748 section 6.1, public keys of
// imported secrets, non-extractable keys, low-order points refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPair, importPrivateKey, dh, X25519Error } from "../../Sources/RemoloWeb/page/x25519.js";
import { toHex, fromHex } from "../../Sources/RemoloWeb/page/bytes.js";

test("RFC 7748 6.1: both public keys and the shared secret", async () => {
  const alice = await importPrivateKey(fromHex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"));
  const bob = await importPrivateKey(fromHex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"));
  assert.equal(toHex(alice.publicKey), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  assert.equal(toHex(bob.publicKey), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
  const shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
  assert.equal(toHex(await dh(alice.privateKey, bob.publicKey)), shared);
  assert.equal(toHex(await dh(bob.privateKey, alice.publicKey)), shared);
});

test("the cacophony initiator secret gives the public key KnownAnswerTests.swift expects", async () => {
  const k = await importPrivateKey(fromHex("e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1"));
  assert.equal(toHex(k.publicKey), "6bc3822a2aa7f4e6981d6538692b3cdf3e6df9eea6ed269eb41d93c22757b75a");
  assert.equal(k.privateKey.extractable, false);
});

test("generated keys are non-extractable by default and agree", async () => {
  const a = await generateKeyPair(), b = await generateKeyPair();
  assert.equal(a.privateKey.extractable, false);
  assert.equal(a.publicKey.length, 32);
  assert.deepEqual(await dh(a.privateKey, b.publicKey), await dh(b.privateKey, a.publicKey));
});

test("low-order peer points are refused", async () => {
  const a = await generateKeyPair();
  for (const hex of ["0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"]) {
    await assert.rejects(dh(a.privateKey, fromHex(hex)), X25519Error, hex);
  }
});
