// The Noise Protocol Framework, revision 34 (https://noiseprotocol.org/noise.html),
// for the two patterns and the one cipher suite Remolo uses
// (docs/protocol.md, "Sessions"):
//
//   Noise_IK_25519_ChaChaPoly_BLAKE2b      every session of a paired sender
//   Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b  pairing, with the pairing code's PSK
//
// Section 5 step by step, with the spec's names (MixHash, MixKey,
// MixKeyAndHash, EncryptAndHash, Split) so it reads side by side with it.
// DH is WebCrypto's X25519 and therefore asynchronous; so are
// writeMessage and readMessage. Both roles are here (the page is an
// initiator; the responder lets tests run a whole handshake in memory).

import { aeadSeal, aeadOpen, TAG_LENGTH } from "./chacha20poly1305.js";
import { blake2b, noiseHkdf, HASH_LENGTH } from "./blake2b.js";
import { dh, generateKeyPair, X25519Error } from "./x25519.js";
import { concat, utf8, wipe } from "./bytes.js";

const DH_LENGTH = 32;

/** Why a handshake message was refused; `code` is one of the static names below. */
export class NoiseError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "NoiseError";
    this.code = code;
  }
}
const malformed = (what) => new NoiseError("malformedMessage", `malformed Noise message: ${what}`);
const decryptFailed = () => new NoiseError("decryptFailed",
  "a Noise ciphertext did not authenticate: wrong keys, a wrong pairing code, or tampering on the way");
const outOfOrder = (what) => new NoiseError("outOfOrder", `Noise message out of turn: ${what}`);

/** Section 12.3 (ChaChaPoly): 4 zero bytes, then the 64-bit counter little-endian. */
export function noiseNonce(n) {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setBigUint64(4, BigInt(n), true);
  return nonce;
}

/** CipherState (section 5.1): a key k or none, and a nonce n never reused. */
export class CipherState {
  constructor() {
    this.key = null;
    this.nonce = 0;
  }

  get hasKey() {
    return this.key !== null;
  }

  initializeKey(key) {
    if (this.key) wipe(this.key);
    this.key = key;
    this.nonce = 0;
  }

  encryptWithAd(ad, plaintext) {
    if (!this.key) return plaintext.slice();
    // A CipherState seals a handful of messages here; 2^53 is far off, and
    // refusing beyond it keeps the Number nonce exact.
    if (this.nonce >= Number.MAX_SAFE_INTEGER) throw new Error("Noise nonce exhausted: start a new handshake");
    const c = aeadSeal(this.key, noiseNonce(this.nonce), plaintext, ad);
    this.nonce += 1;
    return c;
  }

  decryptWithAd(ad, ciphertext) {
    if (!this.key) return ciphertext.slice();
    const p = aeadOpen(this.key, noiseNonce(this.nonce), ciphertext, ad);
    if (p === null) throw decryptFailed();
    this.nonce += 1; // section 5.1: only after a successful decryption
    return p;
  }
}

/** SymmetricState (section 5.2): chaining key ck, handshake hash h, a CipherState. */
export class SymmetricState {
  /** InitializeSymmetric: a name of at most HASHLEN bytes is zero-padded, a longer one hashed; ck = h. */
  constructor(protocolName) {
    const name = utf8(protocolName);
    if (name.length <= HASH_LENGTH) {
      this.h = new Uint8Array(HASH_LENGTH);
      this.h.set(name);
    } else {
      this.h = blake2b(name);
    }
    this.ck = this.h.slice();
    this.cipher = new CipherState();
  }

  /** MixKey(ikm): ck, temp_k = HKDF(ck, ikm, 2); temp_k truncated to 32 bytes (HASHLEN is 64). */
  mixKey(ikm) {
    const [ck, tempK] = noiseHkdf(this.ck, ikm, 2);
    wipe(this.ck);
    this.ck = ck;
    this.cipher.initializeKey(tempK.slice(0, 32));
    wipe(tempK);
  }

  /** MixHash(data): h = HASH(h || data). */
  mixHash(data) {
    this.h = blake2b([this.h, data]);
  }

  /** MixKeyAndHash(ikm), the "psk" token: ck, temp_h, temp_k = HKDF(ck, ikm, 3). */
  mixKeyAndHash(ikm) {
    const [ck, tempH, tempK] = noiseHkdf(this.ck, ikm, 3);
    wipe(this.ck);
    this.ck = ck;
    this.mixHash(tempH);
    this.cipher.initializeKey(tempK.slice(0, 32));
    wipe(tempH); wipe(tempK);
  }

  encryptAndHash(plaintext) {
    const c = this.cipher.encryptWithAd(this.h, plaintext);
    this.mixHash(c);
    return c;
  }

  decryptAndHash(ciphertext) {
    const p = this.cipher.decryptWithAd(this.h, ciphertext);
    this.mixHash(ciphertext);
    return p;
  }

  /** Split(): HKDF(ck, empty, 2), each truncated to 32 bytes; k1 initiator->responder, k2 back. */
  split() {
    const [t1, t2] = noiseHkdf(this.ck, new Uint8Array(0), 2);
    const keys = [t1.slice(0, 32), t2.slice(0, 32)];
    wipe(t1); wipe(t2);
    return keys;
  }

  /**
   * A further 32-byte key bound to the finished handshake: output 1 of
   * HKDF(ck, label, 2), truncated. Its input key material differs from
   * Split()'s empty one, so it is independent of k1 and k2.
   */
  deriveExtraKey(label) {
    const [t1, t2] = noiseHkdf(this.ck, utf8(label), 2);
    const k = t1.slice(0, 32);
    wipe(t1); wipe(t2);
    return k;
  }
}

/** The two handshake patterns (sections 7.5 and 9), as token lists per message. */
export const PATTERNS = Object.freeze({
  IK: Object.freeze({
    protocolName: "Noise_IK_25519_ChaChaPoly_BLAKE2b",
    // <- s  ...  -> e, es, s, ss   <- e, ee, se
    messages: [["e", "es", "s", "ss"], ["e", "ee", "se"]],
    responderStaticPremessage: true,
    usesPsk: false,
  }),
  XXpsk3: Object.freeze({
    protocolName: "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b",
    // -> e   <- e, ee, s, es   -> s, se, psk
    messages: [["e"], ["e", "ee", "s", "es"], ["s", "se", "psk"]],
    responderStaticPremessage: false,
    usesPsk: true,
  }),
});

/** HandshakeState (section 5.3) for one role of one pattern. */
export class HandshakeState {
  /**
   * @param {object} o
   * @param {object} o.pattern PATTERNS.IK or PATTERNS.XXpsk3
   * @param {boolean} o.initiator
   * @param {Uint8Array} o.prologue
   * @param {{privateKey: CryptoKey, publicKey: Uint8Array}} o.staticKey this side's s
   * @param {Uint8Array} [o.remoteStatic] the responder's s, for an IK initiator
   * @param {Uint8Array} [o.psk] 32 bytes, for XXpsk3
   * @param {{privateKey: CryptoKey, publicKey: Uint8Array}} [o.ephemeral] a fixed e, for test vectors only
   */
  constructor({ pattern, initiator, prologue, staticKey, remoteStatic, psk, ephemeral }) {
    if (pattern !== PATTERNS.IK && pattern !== PATTERNS.XXpsk3) {
      throw new TypeError("pattern must be PATTERNS.IK or PATTERNS.XXpsk3");
    }
    if (pattern.usesPsk && !(psk instanceof Uint8Array && psk.length === 32)) {
      throw new TypeError("XXpsk3 needs a 32-byte PSK (the pairing code's, see pairing.js)");
    }
    if (pattern.responderStaticPremessage && initiator && !(remoteStatic instanceof Uint8Array && remoteStatic.length === 32)) {
      throw new TypeError("an IK initiator needs the receiver's 32-byte static public key (from known-receivers or a pairing)");
    }
    this.pattern = pattern;
    this.initiator = initiator;
    this.symmetric = new SymmetricState(pattern.protocolName);
    this.s = staticKey;
    this.e = ephemeral ?? null;
    this.psk = psk ? psk.slice() : null;
    this.remoteStatic = initiator && remoteStatic ? remoteStatic.slice() : null;
    this.remoteEphemeral = null;
    this.messageIndex = 0;
    this.busy = false;
    /**
     * Called with the remote static key right after it is decrypted, before
     * any DH with it or the payload: return false to refuse (a receiver
     * refusing an unpaired sender).
     */
    this.remoteStaticCheck = null;
    this.symmetric.mixHash(prologue);
    // Pre-message "<- s" of IK: both sides hash the responder's static key.
    if (pattern.responderStaticPremessage) {
      this.symmetric.mixHash(initiator ? this.remoteStatic : staticKey.publicKey);
    }
  }

  get isFinished() {
    return this.messageIndex >= this.pattern.messages.length;
  }

  get handshakeHash() {
    return this.symmetric.h;
  }

  get isMyTurn() {
    return (this.messageIndex % 2 === 0) === this.initiator;
  }

  enter(writing) {
    if (this.busy) throw outOfOrder("the previous message is still being processed; await it first");
    if (this.isFinished) throw outOfOrder("the handshake is already finished");
    if (this.isMyTurn !== writing) {
      throw outOfOrder(writing ? "it is the peer's turn to send" : "it is this side's turn to send");
    }
    this.busy = true;
  }

  /** WriteMessage(payload): this side's next token list, then the payload. */
  async writeMessage(payload) {
    this.enter(true);
    try {
      const out = [];
      for (const token of this.pattern.messages[this.messageIndex]) {
        if (token === "e") {
          if (!this.e) this.e = await generateKeyPair();
          out.push(this.e.publicKey);
          this.symmetric.mixHash(this.e.publicKey);
          // Section 9.2: with a PSK, "e" also runs MixKey(e.public_key).
          if (this.pattern.usesPsk) this.symmetric.mixKey(this.e.publicKey);
        } else if (token === "s") {
          out.push(this.symmetric.encryptAndHash(this.s.publicKey));
        } else if (token === "psk") {
          this.symmetric.mixKeyAndHash(this.psk);
        } else {
          await this.mixDH(token);
        }
      }
      out.push(this.symmetric.encryptAndHash(payload));
      this.messageIndex += 1;
      return concat(...out);
    } finally {
      this.busy = false;
    }
  }

  /** ReadMessage(message): the decrypted payload, or a NoiseError. */
  async readMessage(message) {
    this.enter(false);
    try {
      let offset = 0;
      const take = (n, what) => {
        if (message.length - offset < n) throw malformed(`${message.length} bytes is too short for ${what}`);
        const part = message.subarray(offset, offset + n);
        offset += n;
        return part;
      };
      for (const token of this.pattern.messages[this.messageIndex]) {
        if (token === "e") {
          this.remoteEphemeral = take(DH_LENGTH, "an ephemeral key").slice();
          this.symmetric.mixHash(this.remoteEphemeral);
          if (this.pattern.usesPsk) this.symmetric.mixKey(this.remoteEphemeral);
        } else if (token === "s") {
          const n = this.symmetric.cipher.hasKey ? DH_LENGTH + TAG_LENGTH : DH_LENGTH;
          const rs = this.symmetric.decryptAndHash(take(n, "a static key"));
          if (this.remoteStaticCheck && !this.remoteStaticCheck(rs)) throw decryptFailed();
          this.remoteStatic = rs;
        } else if (token === "psk") {
          this.symmetric.mixKeyAndHash(this.psk);
        } else {
          await this.mixDH(token);
        }
      }
      // The payload is the rest; once a key is set it holds at least a tag.
      const rest = message.subarray(offset);
      if (this.symmetric.cipher.hasKey && rest.length < TAG_LENGTH) throw malformed("no room for the payload's tag");
      const payload = this.symmetric.decryptAndHash(rest);
      this.messageIndex += 1;
      return payload;
    } finally {
      this.busy = false;
    }
  }

  // ee, es, se, ss (section 5.3): which local and remote key each token
  // uses depends on the role.
  async mixDH(token) {
    const i = this.initiator;
    const [local, remote] = {
      ee: [this.e, this.remoteEphemeral],
      es: i ? [this.e, this.remoteStatic] : [this.s, this.remoteEphemeral],
      se: i ? [this.s, this.remoteEphemeral] : [this.e, this.remoteStatic],
      ss: [this.s, this.remoteStatic],
    }[token];
    if (!local || !remote) throw outOfOrder(`token ${token} before its keys are known`);
    let shared;
    try {
      shared = await dh(local.privateKey, remote);
    } catch (e) {
      if (e instanceof X25519Error) throw new NoiseError("invalidPublicKey", e.message);
      throw e;
    }
    this.symmetric.mixKey(shared);
    wipe(shared);
  }

  /** Split() once the last message is processed; forgets the ephemeral key and the PSK. */
  split() {
    if (!this.isFinished) throw outOfOrder("Split() before the handshake finished");
    this.e = null;
    wipe(this.psk);
    return this.symmetric.split();
  }
}
