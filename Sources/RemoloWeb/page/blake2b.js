// BLAKE2b (RFC 7693) with a key and any digest length 1..64, and the HMAC
// and HKDF that the Noise Protocol Framework (revision 34, section 4.3)
// builds on it: Remolo's HASH (fingerprints, the pairing PSK) and the
// chaining-key derivations of both handshakes. WebCrypto has no BLAKE2b.
//
// 64-bit words are kept as two 32-bit halves (low at even, high at odd
// indices), so every operation is plain 32-bit integer arithmetic with no
// data-dependent branch.

import { wipe } from "./bytes.js";

export const HASH_LENGTH = 64;
export const BLOCK_LENGTH = 128;

// RFC 7693 section 2.6: the SHA-512 initialisation vector.
const IV = new Uint32Array([
  0xf3bcc908, 0x6a09e667, 0x84caa73b, 0xbb67ae85, 0xfe94f82b, 0x3c6ef372, 0x5f1d36f1, 0xa54ff53a,
  0xade682d1, 0x510e527f, 0x2b3e6c1f, 0x9b05688c, 0xfb41bd6b, 0x1f83d9ab, 0x137e2179, 0x5be0cd19,
]);

// Section 2.7: the message word schedule, one row per round (rounds 10
// and 11 repeat rows 0 and 1).
const SIGMA = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
  [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
  [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
  [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
  [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

// v[a] += v[b] + (optional) message word, as 64-bit addition on halves.
function add64(v, a, b) {
  const lo = (v[2 * a] + v[2 * b]) >>> 0;
  // Carry out of the low half: set when the sum wrapped below an addend.
  const carry = ((v[2 * a] & v[2 * b]) | ((v[2 * a] | v[2 * b]) & ~lo)) >>> 31;
  v[2 * a + 1] = (v[2 * a + 1] + v[2 * b + 1] + carry) >>> 0;
  v[2 * a] = lo;
}

function addWord(v, a, m, i) {
  const lo = (v[2 * a] + m[2 * i]) >>> 0;
  const carry = ((v[2 * a] & m[2 * i]) | ((v[2 * a] | m[2 * i]) & ~lo)) >>> 31;
  v[2 * a + 1] = (v[2 * a + 1] + m[2 * i + 1] + carry) >>> 0;
  v[2 * a] = lo;
}

// v[d] = (v[d] ^ v[a]) >>> n for the four rotation distances of section 3.1.
function xorRotr(v, d, a, n) {
  const lo = v[2 * d] ^ v[2 * a], hi = v[2 * d + 1] ^ v[2 * a + 1];
  if (n === 32) {
    v[2 * d] = hi; v[2 * d + 1] = lo;
  } else if (n === 63) { // a rotation right by 63 is one left
    v[2 * d] = ((lo << 1) | (hi >>> 31)) >>> 0; v[2 * d + 1] = ((hi << 1) | (lo >>> 31)) >>> 0;
  } else { // 24 or 16
    v[2 * d] = ((lo >>> n) | (hi << (32 - n))) >>> 0; v[2 * d + 1] = ((hi >>> n) | (lo << (32 - n))) >>> 0;
  }
}

// Section 3.1: the mixing function G.
function mix(v, m, a, b, c, d, x, y) {
  add64(v, a, b); addWord(v, a, m, x); xorRotr(v, d, a, 32);
  add64(v, c, d); xorRotr(v, b, c, 24);
  add64(v, a, b); addWord(v, a, m, y); xorRotr(v, d, a, 16);
  add64(v, c, d); xorRotr(v, b, c, 63);
}

/** An incremental BLAKE2b: update() any number of times, then digest() once. */
export class Blake2b {
  /**
   * @param {number} outLength digest bytes, 1..64 (64 for Noise's HASH)
   * @param {Uint8Array} [key] 0..64 bytes; a keyed hash is BLAKE2b's MAC
   */
  constructor(outLength = HASH_LENGTH, key = new Uint8Array(0)) {
    if (!Number.isInteger(outLength) || outLength < 1 || outLength > 64) {
      throw new RangeError(`BLAKE2b digest length must be 1..64 bytes, got ${outLength}`);
    }
    if (!(key instanceof Uint8Array) || key.length > 64) {
      throw new RangeError("a BLAKE2b key must be a Uint8Array of at most 64 bytes; hash a longer key first");
    }
    this.outLength = outLength;
    this.h = IV.slice();
    // Section 2.5: parameter block word 0 = 0x0101kknn (fanout 1, depth 1,
    // key length kk, digest length nn); the other parameters are zero.
    this.h[0] ^= 0x01010000 ^ (key.length << 8) ^ outLength;
    this.t = [0, 0]; // bytes compressed so far, 64-bit as halves (2^64 is plenty)
    this.buffer = new Uint8Array(BLOCK_LENGTH);
    this.filled = 0;
    this.v = new Uint32Array(32);
    this.m = new Uint32Array(32);
    this.done = false;
    // Section 3.3: a key is padded to one block and hashed as the first one.
    if (key.length > 0) {
      this.buffer.set(key);
      this.filled = BLOCK_LENGTH;
    }
  }

  // Section 3.2: the compression function F over the buffered block.
  compress(last) {
    const v = this.v, m = this.m, h = this.h, b = this.buffer;
    for (let i = 0; i < 32; i++) {
      m[i] = b[4 * i] | (b[4 * i + 1] << 8) | (b[4 * i + 2] << 16) | (b[4 * i + 3] << 24);
    }
    v.set(h);
    v.set(IV, 16);
    v[24] ^= this.t[0]; v[25] ^= this.t[1]; // v[12] ^= t low word
    if (last) { v[28] = ~v[28] >>> 0; v[29] = ~v[29] >>> 0; } // v[14] inverted on the final block
    for (let r = 0; r < 12; r++) {
      const s = SIGMA[r % 10];
      mix(v, m, 0, 4, 8, 12, s[0], s[1]);
      mix(v, m, 1, 5, 9, 13, s[2], s[3]);
      mix(v, m, 2, 6, 10, 14, s[4], s[5]);
      mix(v, m, 3, 7, 11, 15, s[6], s[7]);
      mix(v, m, 0, 5, 10, 15, s[8], s[9]);
      mix(v, m, 1, 6, 11, 12, s[10], s[11]);
      mix(v, m, 2, 7, 8, 13, s[12], s[13]);
      mix(v, m, 3, 4, 9, 14, s[14], s[15]);
    }
    for (let i = 0; i < 16; i++) h[i] ^= v[i] ^ v[i + 16];
  }

  // The byte counter t counts message bytes, including this block's.
  count(n) {
    const lo = this.t[0] + n;
    this.t[0] = lo >>> 0;
    this.t[1] = (this.t[1] + (lo > 0xffffffff ? 1 : 0)) >>> 0;
  }

  /** Absorbs more input; returns this, for chaining. */
  update(data) {
    if (this.done) throw new Error("BLAKE2b: update() after digest(); start a new hash");
    let o = 0;
    while (o < data.length) {
      // The last block must be compressed with the final flag, so a full
      // buffer waits until more input shows it was not the last.
      if (this.filled === BLOCK_LENGTH) {
        this.count(BLOCK_LENGTH);
        this.compress(false);
        this.filled = 0;
      }
      const n = Math.min(BLOCK_LENGTH - this.filled, data.length - o);
      this.buffer.set(data.subarray(o, o + n), this.filled);
      this.filled += n;
      o += n;
    }
    return this;
  }

  /** The digest, outLength bytes; the state is wiped afterwards. */
  digest() {
    if (this.done) throw new Error("BLAKE2b: digest() called twice; start a new hash");
    this.done = true;
    this.count(this.filled);
    this.buffer.fill(0, this.filled); // section 3.3: the last block is zero-padded
    this.compress(true);
    const out = new Uint8Array(this.outLength);
    for (let i = 0; i < this.outLength; i++) out[i] = this.h[i >> 2] >>> (8 * (i & 3));
    wipe(this.h); wipe(this.v); wipe(this.m); wipe(this.buffer);
    return out;
  }
}

/** BLAKE2b of the parts concatenated. Options: outLength (64), key (none). */
export function blake2b(parts, { outLength = HASH_LENGTH, key } = {}) {
  const h = new Blake2b(outLength, key);
  for (const p of Array.isArray(parts) ? parts : [parts]) h.update(p);
  return h.digest();
}

/**
 * HMAC (RFC 2104) over BLAKE2b-512 with its 128-byte block, as Noise's
 * HMAC-HASH: HASH((K ^ opad) || HASH((K ^ ipad) || data)). The data is
 * given as parts, concatenated.
 */
export function hmacBlake2b(key, parts) {
  let k = key;
  if (k.length > BLOCK_LENGTH) k = blake2b(k); // RFC 2104 section 2: hash a long key first
  const pad = new Uint8Array(BLOCK_LENGTH);
  pad.set(k);
  for (let i = 0; i < BLOCK_LENGTH; i++) pad[i] ^= 0x36;
  const inner = new Blake2b().update(pad);
  for (const p of parts) inner.update(p);
  const innerDigest = inner.digest();
  for (let i = 0; i < BLOCK_LENGTH; i++) pad[i] ^= 0x36 ^ 0x5c;
  const out = new Blake2b().update(pad).update(innerDigest).digest();
  wipe(pad); wipe(innerDigest);
  if (k !== key) wipe(k);
  return out;
}

/**
 * Noise's HKDF(chaining_key, input_key_material, num_outputs) (revision 34
 * section 4.3): temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
 * output_i = HMAC(temp_key, output_{i-1} || i). Two or three outputs of 64
 * bytes each; callers truncate cipher keys to 32.
 */
export function noiseHkdf(chainingKey, inputKeyMaterial, numOutputs) {
  if (numOutputs !== 2 && numOutputs !== 3) throw new RangeError("Noise's HKDF makes 2 or 3 outputs");
  const tempKey = hmacBlake2b(chainingKey, [inputKeyMaterial]);
  const outputs = [];
  let previous = new Uint8Array(0);
  for (let i = 1; i <= numOutputs; i++) {
    previous = hmacBlake2b(tempKey, [previous, Uint8Array.of(i)]);
    outputs.push(previous);
  }
  wipe(tempKey);
  return outputs;
}
