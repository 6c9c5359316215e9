// ChaCha20, Poly1305 and AEAD_CHACHA20_POLY1305 (RFC 8439), the IETF form
// with a 96-bit nonce that Remolo seals datagrams and control frames with.
// WebCrypto has no ChaCha20-Poly1305, hence this file.
//
// Timing: no branch or table index depends on a key, plaintext or tag byte.
// ChaCha20 is 32-bit adds, xors and rotations; Poly1305 works on 13-bit
// limbs whose products stay exact in doubles; the tag is compared over all
// 16 bytes, and opening returns no plaintext unless the tag verifies.

import { constantTimeEqual, wipe } from "./bytes.js";

export const KEY_LENGTH = 32;
export const NONCE_LENGTH = 12;
export const TAG_LENGTH = 16;

function checkLength(name, bytes, length) {
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new TypeError(`${name} must be a Uint8Array of ${length} bytes` +
      (bytes instanceof Uint8Array ? `, got ${bytes.length}` : ""));
  }
}

// RFC 8439 section 2.1: the quarter round on four words of the state.
function quarterRound(x, a, b, c, d) {
  x[a] = (x[a] + x[b]) | 0; x[d] ^= x[a]; x[d] = (x[d] << 16) | (x[d] >>> 16);
  x[c] = (x[c] + x[d]) | 0; x[b] ^= x[c]; x[b] = (x[b] << 12) | (x[b] >>> 20);
  x[a] = (x[a] + x[b]) | 0; x[d] ^= x[a]; x[d] = (x[d] << 8) | (x[d] >>> 24);
  x[c] = (x[c] + x[d]) | 0; x[b] ^= x[c]; x[b] = (x[b] << 7) | (x[b] >>> 25);
}

/**
 * The ChaCha20 block function (RFC 8439 section 2.3): 64 bytes of key
 * stream for a 32-byte key, a 32-bit block counter and a 12-byte nonce.
 */
export function chacha20Block(key, counter, nonce) {
  checkLength("key", key, KEY_LENGTH);
  checkLength("nonce", nonce, NONCE_LENGTH);
  const out = new Uint8Array(64);
  blockInto(initialState(key, nonce), counter, new Uint32Array(16), out);
  return out;
}

// Section 2.3: constants "expand 32-byte k", key, counter, nonce; all
// words little-endian.
function initialState(key, nonce) {
  const s = new Uint32Array(16);
  s[0] = 0x61707865; s[1] = 0x3320646e; s[2] = 0x79622d32; s[3] = 0x6b206574;
  const k = new DataView(key.buffer, key.byteOffset, 32);
  for (let i = 0; i < 8; i++) s[4 + i] = k.getUint32(4 * i, true);
  const n = new DataView(nonce.buffer, nonce.byteOffset, 12);
  for (let i = 0; i < 3; i++) s[13 + i] = n.getUint32(4 * i, true);
  return s;
}

function blockInto(state, counter, x, out) {
  state[12] = counter >>> 0;
  x.set(state);
  // 20 rounds: 10 times a column round then a diagonal round (section 2.3).
  for (let i = 0; i < 10; i++) {
    quarterRound(x, 0, 4, 8, 12); quarterRound(x, 1, 5, 9, 13);
    quarterRound(x, 2, 6, 10, 14); quarterRound(x, 3, 7, 11, 15);
    quarterRound(x, 0, 5, 10, 15); quarterRound(x, 1, 6, 11, 12);
    quarterRound(x, 2, 7, 8, 13); quarterRound(x, 3, 4, 9, 14);
  }
  for (let i = 0; i < 16; i++) {
    const w = (x[i] + state[i]) >>> 0;
    out[4 * i] = w; out[4 * i + 1] = w >>> 8; out[4 * i + 2] = w >>> 16; out[4 * i + 3] = w >>> 24;
  }
}

/**
 * ChaCha20 encryption (RFC 8439 section 2.4): data XOR the key stream that
 * starts at block `counter`. Encrypts and decrypts alike.
 */
export function chacha20(key, counter, nonce, data) {
  checkLength("key", key, KEY_LENGTH);
  checkLength("nonce", nonce, NONCE_LENGTH);
  const blocks = Math.ceil(data.length / 64);
  if (!Number.isInteger(counter) || counter < 0 || counter + blocks > 0x100000000) {
    throw new RangeError("chacha20: the 32-bit block counter would wrap; encrypt at most 256 GiB per nonce");
  }
  const state = initialState(key, nonce);
  const x = new Uint32Array(16);
  const stream = new Uint8Array(64);
  const out = new Uint8Array(data.length);
  for (let b = 0; b < blocks; b++) {
    blockInto(state, counter + b, x, stream);
    const base = 64 * b;
    const n = Math.min(64, data.length - base);
    for (let i = 0; i < n; i++) out[base + i] = data[base + i] ^ stream[i];
  }
  wipe(state); wipe(x); wipe(stream);
  return out;
}

// Poly1305 (RFC 8439 section 2.5) with the accumulator and r as ten 13-bit
// limbs (10 * 13 = 130 bits, so 2^130 = 5 mod p folds the top back in). A
// limb product is below 2^14 * 5 * 2^13 < 2^30 and a sum of ten below 2^34:
// exact in a double, never near 2^53.

// Bits [13i, 13i + 13) of a little-endian byte string of at least 17 bytes.
function limbsOf(bytes17) {
  const l = new Float64Array(10);
  for (let i = 0; i < 10; i++) {
    const bit = 13 * i, byte = bit >>> 3;
    const w = bytes17[byte] | (bytes17[byte + 1] << 8) | (bytes17[byte + 2] << 16);
    l[i] = (w >>> (bit & 7)) & 0x1fff;
  }
  return l;
}

// Carries limbs into 13 bits each; what leaves the top is 2^130 times it,
// which is 5 times it mod p (section 2.5.1's "mod 2^130 - 5").
function carry(h) {
  let c = 0;
  for (let i = 0; i < 10; i++) {
    const d = h[i] + c;
    const low = d & 0x1fff; // ToInt32 keeps the low 32 bits, and so the low 13
    c = (d - low) / 8192;
    h[i] = low;
  }
  h[0] += 5 * c;
  c = (h[0] - (h[0] & 0x1fff)) / 8192;
  h[0] &= 0x1fff;
  h[1] += c;
}

class Poly1305 {
  constructor(key) {
    checkLength("Poly1305 key", key, 32);
    // Section 2.5: r is clamped (some bits of the first half cleared).
    const r = new Uint8Array(17);
    r.set(key.subarray(0, 16));
    r[3] &= 15; r[7] &= 15; r[11] &= 15; r[15] &= 15;
    r[4] &= 252; r[8] &= 252; r[12] &= 252;
    this.r = limbsOf(r);
    this.r5 = this.r.map((v) => 5 * v);
    this.s = key.slice(16, 32);
    this.h = new Float64Array(10);
    this.d = new Float64Array(10);
    this.block = new Uint8Array(17);
    wipe(r);
  }

  /** Absorbs one block of 1..16 bytes, with the 0x01 byte appended (section 2.5.1). */
  absorb(bytes) {
    const blk = this.block;
    blk.fill(0);
    blk.set(bytes);
    blk[bytes.length] = 1;
    const m = limbsOf(blk);
    const h = this.h, r = this.r, r5 = this.r5, d = this.d;
    for (let i = 0; i < 10; i++) h[i] += m[i];
    // h = h * r mod p: limb products at position i + j >= 10 wrap with * 5.
    for (let i = 0; i < 10; i++) {
      let sum = 0;
      for (let j = 0; j < 10; j++) sum += h[j] * (j <= i ? r[i - j] : r5[i - j + 10]);
      d[i] = sum;
    }
    h.set(d);
    carry(h);
    wipe(m);
  }

  /** Absorbs a whole message, the last block possibly short. */
  update(msg) {
    for (let o = 0; o < msg.length; o += 16) this.absorb(msg.subarray(o, Math.min(o + 16, msg.length)));
  }

  /** Absorbs data zero-padded to a multiple of 16 bytes (section 2.8's pad16). */
  updatePadded(data) {
    const full = data.length - (data.length % 16);
    this.update(data.subarray(0, full));
    if (full < data.length) {
      const last = new Uint8Array(16);
      last.set(data.subarray(full));
      this.absorb(last);
      wipe(last);
    }
  }

  /** The 16-byte tag: (h mod p) + s mod 2^128. */
  finish() {
    const h = this.h;
    carry(h);
    carry(h);
    // Now h < 2^130. Select h - p when h + 5 reaches 2^130, without a branch.
    const g = new Float64Array(10);
    let c = 5;
    for (let i = 0; i < 10; i++) {
      const v = h[i] + c;
      g[i] = v & 0x1fff;
      c = v >>> 13;
    }
    const mask = -c | 0; // all ones when h >= p
    for (let i = 0; i < 10; i++) h[i] = (h[i] & ~mask) | (g[i] & mask);
    // Repack h into 16 little-endian bytes (dropping bits 128 and up),
    // adding s as we go. Additions, not ors: after the last carry a limb may
    // hold one bit more than 13.
    const tag = new Uint8Array(16);
    let acc = 0, bits = 0, k = 0, sum = 0;
    for (let i = 0; i < 10 && k < 16; i++) {
      acc += h[i] * 2 ** bits;
      bits += 13;
      while (bits >= 8 && k < 16) {
        const byte = acc % 256;
        acc = (acc - byte) / 256;
        bits -= 8;
        sum += byte + this.s[k];
        tag[k++] = sum & 0xff;
        sum >>>= 8;
      }
    }
    wipe(g); wipe(h); wipe(this.r); wipe(this.r5); wipe(this.s); wipe(this.d);
    return tag;
  }
}

/** Poly1305 one-time authenticator (RFC 8439 section 2.5): a 16-byte tag. */
export function poly1305(key, msg) {
  const p = new Poly1305(key);
  p.update(msg);
  return p.finish();
}

function lengthsBlock(aadLength, ctLength) {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, BigInt(aadLength), true);
  v.setBigUint64(8, BigInt(ctLength), true);
  return b;
}

// Section 2.8: the Poly1305 key is the first 32 bytes of ChaCha20 block 0;
// the MAC covers aad, padding to 16, ciphertext, padding to 16, and both
// lengths as u64 little-endian.
function aeadTag(key, nonce, aad, ciphertext) {
  const otk = chacha20Block(key, 0, nonce).subarray(0, 32);
  const p = new Poly1305(otk);
  wipe(otk);
  p.updatePadded(aad);
  p.updatePadded(ciphertext);
  p.absorb(lengthsBlock(aad.length, ciphertext.length));
  return p.finish();
}

/**
 * AEAD_CHACHA20_POLY1305 encryption (RFC 8439 section 2.8): ciphertext
 * followed by the 16-byte tag.
 */
export function aeadSeal(key, nonce, plaintext, aad = new Uint8Array(0)) {
  const ct = chacha20(key, 1, nonce, plaintext);
  const tag = aeadTag(key, nonce, aad, ct);
  const out = new Uint8Array(ct.length + TAG_LENGTH);
  out.set(ct);
  out.set(tag, ct.length);
  return out;
}

/**
 * AEAD_CHACHA20_POLY1305 decryption: the plaintext, or null when the tag
 * does not verify (wrong key, nonce or aad, or altered bytes). The
 * ciphertext is only decrypted after the tag has been checked in full.
 */
export function aeadOpen(key, nonce, sealed, aad = new Uint8Array(0)) {
  checkLength("key", key, KEY_LENGTH);
  checkLength("nonce", nonce, NONCE_LENGTH);
  if (!(sealed instanceof Uint8Array) || sealed.length < TAG_LENGTH) return null;
  const ct = sealed.subarray(0, sealed.length - TAG_LENGTH);
  const expected = aeadTag(key, nonce, aad, ct);
  const ok = constantTimeEqual(expected, sealed.subarray(sealed.length - TAG_LENGTH));
  wipe(expected);
  if (!ok) return null;
  return chacha20(key, 1, nonce, ct);
}
