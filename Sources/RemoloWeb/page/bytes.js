// Byte helpers shared by the page's protocol modules: hex for tests and
// logs, concatenation, and the fixed-width integer encodings
// docs/protocol.md uses (big-endian on the TCP connection, little-endian in
// datagrams and AEAD nonces).

/** Lowercase hex of a Uint8Array. */
export function toHex(bytes) {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** Bytes from hex (whitespace ignored); throws on anything else. */
export function fromHex(hex) {
  const s = hex.replace(/\s+/g, "");
  if (s.length % 2 !== 0 || /[^0-9a-fA-F]/.test(s)) {
    throw new TypeError(`fromHex: "${hex.slice(0, 16)}..." is not an even number of hex digits`);
  }
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.substr(2 * i, 2), 16);
  return out;
}

/** ASCII/UTF-8 bytes of a string (labels, prologue, protocol names). */
export function utf8(s) {
  return new TextEncoder().encode(s);
}

/** One Uint8Array holding every part in order. */
export function concat(...parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Overwrites a buffer holding secret bytes once it is no longer needed. */
export function wipe(bytes) {
  if (bytes) bytes.fill(0);
}

/**
 * Compares two byte strings in time that depends only on their lengths
 * (every byte is looked at, no early exit), for tags and tokens.
 */
export function constantTimeEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * A u64 from a bigint or a non-negative safe integer, checked: counters,
 * tokens and times are u64 on the wire.
 */
export function toU64(v, what = "value") {
  const n = typeof v === "bigint" ? v : Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : -1n;
  if (n < 0n || n > 0xffffffffffffffffn) {
    throw new RangeError(`${what} must be an integer in 0..2^64-1 (a bigint or a safe integer), got ${v}`);
  }
  return n;
}

/** Writes a u64 big-endian at offset. */
export function putU64BE(out, offset, v) {
  new DataView(out.buffer, out.byteOffset, out.byteLength).setBigUint64(offset, toU64(v), false);
}

/** Writes a u64 little-endian at offset. */
export function putU64LE(out, offset, v) {
  new DataView(out.buffer, out.byteOffset, out.byteLength).setBigUint64(offset, toU64(v), true);
}

/** A DataView over exactly the bytes of a Uint8Array (which may be a slice). */
export function view(bytes) {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
