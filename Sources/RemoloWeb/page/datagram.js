// Sealed pointer datagrams (docs/protocol.md, "Pointer datagrams"): 49
// bytes each (65 in the redundant and the gesture layouts), sender to
// receiver over UDP, all integers little-endian.
//
//   0  session id (8)  | 8 counter u64 (8) | 16 ciphertext (17) | 33 tag (16)
//   plaintext: kind u8 | a i32 | b i32 | tx_us u64
//
// The AEAD is RFC 8439's with the nonce 00000000 || counter (u64 LE) and
// the first 16 bytes (session id, counter) as associated data.

import { aeadSeal, aeadOpen } from "./chacha20poly1305.js";
import { toU64, view } from "./bytes.js";

export const DATAGRAM_LENGTH = 49;
export const HEADER_LENGTH = 16;
export const PLAINTEXT_LENGTH = 17;
// The redundant layout (feature bit 1, docs/protocol.md "Redundancy"): the
// 17 bytes, then the session's running totals, u32 little-endian each,
// modulo 2^32: motion x, motion y, scroll vertical, scroll horizontal of
// every datagram sealed so far, this one included. The receiver plays the
// motion of lost datagrams from the next one that arrives.
export const REDUNDANT_DATAGRAM_LENGTH = 65;
export const REDUNDANT_PLAINTEXT_LENGTH = 33;
export const Kind = Object.freeze({ motion: 1, scroll: 2, button: 3, heartbeat: 4, gesture: 6 });
// The gesture layout (feature bit 3, docs/protocol.md "Gestures"): kind 6,
// always 65 bytes, the 17 bytes (a, b: the centroid's offset since the
// gesture began, micrometres) then id, type (1 swipe, 2 pinch), fingers,
// flags (1: last), scale i32 Q16, angle i32 microradians, 4 zero bytes.
export const GestureType = Object.freeze({ swipe: 1, pinch: 2 });
export const GESTURE_LIMITS = Object.freeze({ offsetUm: 500_000, scaleQ16: [1024, 4194304], angleUrad: 25_132_741 });
const U64_MAX = 0xffffffffffffffffn;

function int32(v, what) {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new RangeError(`${what} must be an i32, got ${v}`);
  return v;
}

/** Motion, Q8 pixels (256 per pixel), x right and y down. */
export const motion = (dx, dy) => ({ kind: Kind.motion, a: int32(dx, "dx"), b: int32(dy, "dy") });
/** Scroll, Q8 hi-res wheel units (256 per 1/120 notch), up and right positive. */
export const scroll = (vertical, horizontal) => ({ kind: Kind.scroll, a: int32(vertical, "vertical"), b: int32(horizontal, "horizontal") });
/** A Linux BTN_* code (e.g. BTN_LEFT 0x110) pressed or released. */
export function button(code, down) {
  if (!Number.isInteger(code) || code < 0 || code > 0xffff) throw new RangeError(`a button code is a Linux BTN_* code in 0..65535, got ${code}`);
  return { kind: Kind.button, a: code, b: down ? 1 : 0 };
}
/**
 * A gesture state ({id, type: "swipe"|"pinch", fingers, last, xUm, yUm,
 * scaleQ16, angleUrad}); what the receiver would refuse throws.
 */
export function gesture({ id, type, fingers, last = false, xUm = 0, yUm = 0, scaleQ16 = 65536, angleUrad = 0 }) {
  const t = Object.hasOwn(GestureType, type) ? GestureType[type] : undefined;
  const L = GESTURE_LIMITS;
  const ok = Number.isInteger(id) && id >= 0 && id <= 255 && t !== undefined &&
    Number.isInteger(xUm) && Number.isInteger(yUm) && Math.abs(xUm) <= L.offsetUm && Math.abs(yUm) <= L.offsetUm &&
    (t === GestureType.swipe ? (fingers === 3 || fingers === 4) && scaleQ16 === 65536 && angleUrad === 0
      : fingers >= 2 && fingers <= 4 && Number.isInteger(scaleQ16) && scaleQ16 >= L.scaleQ16[0] && scaleQ16 <= L.scaleQ16[1] &&
        Number.isInteger(angleUrad) && Math.abs(angleUrad) <= L.angleUrad) && Number.isInteger(fingers);
  if (!ok) {
    throw new RangeError(`not a gesture state the receiver takes: ${JSON.stringify({ id, type, fingers, xUm, yUm, scaleQ16, angleUrad })}; `
      + `id 0..255, a swipe of 3 or 4 fingers with scale 65536 and angle 0, a pinch of 2..4 with scale ${L.scaleQ16.join("..")} `
      + `and |angle| <= ${L.angleUrad}, |offsets| <= ${L.offsetUm} um (clamp to these, as gestures.js does)`);
  }
  return { kind: Kind.gesture, a: xUm, b: yUm, g: { id, type: t, fingers, flags: last ? 1 : 0, scaleQ16, angleUrad } };
}
/** Every 100 ms while the trackpad is shown and still. */
export const heartbeat = () => ({ kind: Kind.heartbeat, a: 0, b: 0 });

// 00000000 || counter little-endian (RFC 8439 section 2.8: a 32-bit
// constant, here zero, then a 64-bit IV, here the counter).
function nonceFor(counter) {
  const n = new Uint8Array(12);
  view(n).setBigUint64(4, counter, true);
  return n;
}

/**
 * Seals a session's datagrams with a counter that starts at 0 and never
 * repeats under the key (a repeat would reuse the nonce).
 */
export class DatagramSealer {
  /**
   * @param {Uint8Array} key the handshake result's datagramKey (32 bytes)
   * @param {Uint8Array} sessionId the handshake result's sessionId (8 bytes)
   */
  constructor(key, sessionId) {
    if (!(key instanceof Uint8Array) || key.length !== 32) throw new TypeError("a datagram key is 32 bytes (a handshake result's datagramKey)");
    if (!(sessionId instanceof Uint8Array) || sessionId.length !== 8) throw new TypeError("a session id is 8 bytes (a handshake result's sessionId)");
    this.key = key;
    this.sessionId = sessionId.slice();
    this.counter = 0n;
    // Running totals of every datagram sealed (u32 wrap), kept from the
    // first one so that turning `redundant` on later still counts them all.
    this.totals = new Uint32Array(4);
    /** Seal the 65-byte layout (only once the receiver's hello granted redundancy). */
    this.redundant = false;
  }

  /**
   * One datagram (49 bytes, or 65 with `redundant`) for a payload
   * (motion(), scroll(), button(), heartbeat()) stamped with the sender
   * clock in microseconds.
   */
  seal(payload, txMicros) {
    if (this.counter > U64_MAX) throw new RangeError("datagram counter exhausted: open a new session (new keys)");
    if (payload.kind === Kind.motion) { this.totals[0] += payload.a; this.totals[1] += payload.b; }
    if (payload.kind === Kind.scroll) { this.totals[2] += payload.a; this.totals[3] += payload.b; }
    // A gesture state carries no motion and no totals: its own layout.
    const out = sealDatagram(this.key, this.sessionId, this.counter, payload, txMicros,
      this.redundant && payload.kind !== Kind.gesture ? this.totals : null);
    this.counter += 1n;
    return out;
  }
}

/** Seals one datagram with an explicit counter (the sealer's building block, and test vectors). */
export function sealDatagram(key, sessionId, counter, { kind, a, b, g }, txMicros, totals = null) {
  const header = new Uint8Array(HEADER_LENGTH);
  header.set(sessionId, 0);
  view(header).setBigUint64(8, toU64(counter, "counter"), true);
  const plain = new Uint8Array(totals || kind === Kind.gesture ? REDUNDANT_PLAINTEXT_LENGTH : PLAINTEXT_LENGTH);
  const p = view(plain);
  plain[0] = kind;
  p.setInt32(1, a, true);
  p.setInt32(5, b, true);
  p.setBigUint64(9, toU64(txMicros, "tx_us"), true);
  if (kind === Kind.gesture) {
    plain.set([g.id, g.type, g.fingers, g.flags], PLAINTEXT_LENGTH);
    p.setInt32(PLAINTEXT_LENGTH + 4, g.scaleQ16, true);
    p.setInt32(PLAINTEXT_LENGTH + 8, g.angleUrad, true);
  } else if (totals) {
    for (let i = 0; i < 4; i++) p.setUint32(PLAINTEXT_LENGTH + 4 * i, totals[i] >>> 0, true);
  }
  const out = new Uint8Array(HEADER_LENGTH + plain.length + 16);
  out.set(header);
  out.set(aeadSeal(key, nonceFor(view(header).getBigUint64(8, true)), plain, header), HEADER_LENGTH);
  plain.fill(0);
  return out;
}

/**
 * Opens one datagram under a key: {sessionId, counter, kind, a, b, txMicros},
 * with `totals` (the redundant layout) or `g` (a gesture's block), or null
 * if it is not 49 or 65 bytes or its tag fails. (The receiver's other
 * checks, session, replay and fields, are its own.)
 */
export function openDatagram(key, datagram) {
  if (!(datagram instanceof Uint8Array) || (datagram.length !== DATAGRAM_LENGTH && datagram.length !== REDUNDANT_DATAGRAM_LENGTH)) return null;
  const header = datagram.subarray(0, HEADER_LENGTH);
  const counter = view(header).getBigUint64(8, true);
  const plain = aeadOpen(key, nonceFor(counter), datagram.subarray(HEADER_LENGTH), header);
  if (plain === null) return null;
  const p = view(plain);
  const out = {
    sessionId: header.slice(0, 8), counter, kind: plain[0],
    a: p.getInt32(1, true), b: p.getInt32(5, true), txMicros: p.getBigUint64(9, true),
  };
  if (plain.length === REDUNDANT_PLAINTEXT_LENGTH && out.kind === Kind.gesture) {
    const q = PLAINTEXT_LENGTH;
    out.g = { id: plain[q], type: plain[q + 1], fingers: plain[q + 2], flags: plain[q + 3],
      scaleQ16: p.getInt32(q + 4, true), angleUrad: p.getInt32(q + 8, true) };
  } else if (plain.length === REDUNDANT_PLAINTEXT_LENGTH) {
    out.totals = [0, 1, 2, 3].map((i) => p.getUint32(PLAINTEXT_LENGTH + 4 * i, true));
  }
  return out;
}
