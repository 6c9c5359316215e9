// Control frames and messages, after the handshake on the same connection
// (README, Protocol, "Control frames"):
//
//   u16 L | u64 counter | AEAD(key_dir, nonce(counter), ad = L || counter, message)
//
// L counts the counter and the sealed message with its tag (25..536). Each
// direction has its own key (Noise Split()) and counter, from 0, up by
// exactly one per frame; the counter is big-endian in the header, and the
// AEAD nonce is 4 zero bytes || the counter little-endian. Anything else
// closes the connection: TCP neither loses nor reorders.

import { aeadSeal, aeadOpen, TAG_LENGTH } from "./chacha20poly1305.js";
import { noiseNonce } from "./noise.js";
import { toU64, view } from "./bytes.js";

export const HEADER_LENGTH = 10;
export const MAX_PLAINTEXT_LENGTH = 512;
export const MIN_FRAME_LENGTH = 8 + 1 + TAG_LENGTH;
export const MAX_FRAME_LENGTH = 8 + MAX_PLAINTEXT_LENGTH + TAG_LENGTH;
const U64_MAX = 0xffffffffffffffffn;

/** Message types and their exact plaintext lengths (type byte included). */
export const ControlType = Object.freeze({ settings: 0x01, button: 0x02, motion: 0x03, scroll: 0x04, ping: 0x05, pong: 0x06, bye: 0x07, receipt: 0x08 });
const LENGTH = { 0x01: 14, 0x02: 15, 0x03: 17, 0x04: 17, 0x05: 9, 0x06: 9, 0x07: 2, 0x08: 9 };
const NAME = Object.fromEntries(Object.entries(ControlType).map(([k, v]) => [v, k]));

export const MouseButton = Object.freeze({ left: 1, right: 2, middle: 3, back: 4, forward: 5 });
export const ByeReason = Object.freeze({ normal: 0, idleTimeout: 1, protocolError: 2, shuttingDown: 3, replaced: 4 });
const BYE_NAME = Object.fromEntries(Object.entries(ByeReason).map(([k, v]) => [v, k]));

// Ranges a receiver accepts for settings (f32 big-endian; NaN refused).
const SETTINGS_RANGE = { pointerSpeed: [0.05, 20], acceleration: [0, 10], scrollSpeed: [0.05, 20] };

/** A control frame or message that must close the connection; `code` says which check failed. */
export class ControlFrameError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "ControlFrameError";
    this.code = code;
  }
}
const badMessage = (what) => new ControlFrameError("badMessage", `invalid control message: ${what}`);

function int32(v, what) {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new RangeError(`${what} must be an i32, got ${v}`);
  return v;
}

/**
 * The plaintext of a message object: {type: "ping", token}, {type: "pong",
 * token}, {type: "bye", reason}, {type: "button", button, down, senderTimeNs,
 * sequence}, {type: "motion"|"scroll", dx, dy, senderTimeNs}, {type:
 * "settings", pointerSpeed, acceleration, scrollSpeed, naturalScrolling}.
 * u64 fields take a bigint or a safe integer.
 */
export function encodeControlMessage(m) {
  const t = ControlType[m.type];
  if (t === undefined) throw new TypeError(`unknown control message type "${m.type}"; one of ${Object.keys(ControlType).join(", ")}`);
  const out = new Uint8Array(LENGTH[t]);
  const v = view(out);
  out[0] = t;
  switch (m.type) {
    case "settings":
      v.setFloat32(1, m.pointerSpeed, false);
      v.setFloat32(5, m.acceleration, false);
      v.setFloat32(9, m.scrollSpeed, false);
      out[13] = m.naturalScrolling ? 1 : 0;
      break;
    case "button":
      if (!Object.values(MouseButton).includes(m.button)) throw new RangeError(`button must be 1..5 (MouseButton), got ${m.button}`);
      if (!Number.isInteger(m.sequence) || m.sequence < 0 || m.sequence > 0xffffffff) throw new RangeError("sequence must be a u32");
      out[1] = m.button;
      out[2] = m.down ? 1 : 0;
      v.setBigUint64(3, toU64(m.senderTimeNs, "senderTimeNs"), false);
      v.setUint32(11, m.sequence, false);
      break;
    case "motion":
    case "scroll":
      v.setInt32(1, int32(m.dx, "dx"), false);
      v.setInt32(5, int32(m.dy, "dy"), false);
      v.setBigUint64(9, toU64(m.senderTimeNs, "senderTimeNs"), false);
      break;
    case "ping":
    case "pong":
      v.setBigUint64(1, toU64(m.token, "token"), false);
      break;
    case "receipt":
      v.setBigUint64(1, toU64(m.opened, "opened"), false);
      break;
    case "bye":
      if (BYE_NAME[m.reason] === undefined) throw new RangeError(`bye reason must be 0..4 (ByeReason), got ${m.reason}`);
      out[1] = m.reason;
      break;
  }
  return out;
}

/** A message object from a plaintext; anything invalid throws ControlFrameError. u64 fields come back as bigints. */
export function decodeControlMessage(p) {
  if (p.length === 0) throw badMessage("empty");
  const t = p[0];
  const type = NAME[t];
  if (type === undefined) throw badMessage(`unknown type 0x${t.toString(16)}`);
  if (p.length !== LENGTH[t]) throw badMessage(`type 0x${t.toString(16)} is ${LENGTH[t]} bytes, got ${p.length}`);
  const v = view(p);
  switch (type) {
    case "settings": {
      const m = { type, pointerSpeed: v.getFloat32(1, false), acceleration: v.getFloat32(5, false), scrollSpeed: v.getFloat32(9, false) };
      for (const [k, [lo, hi]] of Object.entries(SETTINGS_RANGE)) {
        if (!(m[k] >= lo && m[k] <= hi)) throw badMessage(`settings ${k} ${m[k]} outside ${lo}..${hi}`); // NaN fails too
      }
      if (p[13] > 1) throw badMessage(`settings flags 0x${p[13].toString(16)}`);
      return { ...m, naturalScrolling: p[13] === 1 };
    }
    case "button":
      if (p[1] < 1 || p[1] > 5) throw badMessage(`unknown button ${p[1]}`);
      if (p[2] > 1) throw badMessage(`button state ${p[2]}`);
      return { type, button: p[1], down: p[2] === 1, senderTimeNs: v.getBigUint64(3, false), sequence: v.getUint32(11, false) };
    case "motion":
    case "scroll":
      return { type, dx: v.getInt32(1, false), dy: v.getInt32(5, false), senderTimeNs: v.getBigUint64(9, false) };
    case "ping":
    case "pong":
      return { type, token: v.getBigUint64(1, false) };
    case "receipt":
      return { type, opened: v.getBigUint64(1, false) };
    case "bye":
      if (BYE_NAME[p[1]] === undefined) throw badMessage(`unknown bye reason ${p[1]}`);
      return { type, reason: p[1], reasonName: BYE_NAME[p[1]] };
  }
  throw badMessage(`type 0x${t.toString(16)}`);
}

/** Seals outgoing messages for one direction (the sender's: Split() k1). */
export class ControlFrameSealer {
  constructor(key) {
    if (!(key instanceof Uint8Array) || key.length !== 32) throw new TypeError("a control-frame key is 32 bytes (a handshake result's senderToReceiver)");
    this.key = key;
    this.counter = 0n;
  }

  /** One whole frame for a message object (see encodeControlMessage). */
  seal(message) {
    return this.sealPlaintext(encodeControlMessage(message));
  }

  sealPlaintext(plaintext) {
    if (this.counter >= U64_MAX) throw new ControlFrameError("counterExhausted", "control-frame counter exhausted; open a new session");
    if (plaintext.length < 1 || plaintext.length > MAX_PLAINTEXT_LENGTH) {
      throw new ControlFrameError("badMessage", `a control message is 1..${MAX_PLAINTEXT_LENGTH} bytes, got ${plaintext.length}`);
    }
    const header = new Uint8Array(HEADER_LENGTH);
    const v = view(header);
    v.setUint16(0, 8 + plaintext.length + TAG_LENGTH, false);
    v.setBigUint64(2, this.counter, false);
    const sealed = aeadSeal(this.key, noiseNonce(this.counter), plaintext, header);
    this.counter += 1n;
    const frame = new Uint8Array(HEADER_LENGTH + sealed.length);
    frame.set(header);
    frame.set(sealed, HEADER_LENGTH);
    return frame;
  }
}

/**
 * Opens incoming frames for one direction (the sender's: Split() k2) from a
 * byte stream in any chunks. After any error it stays failed: close the
 * connection.
 */
export class ControlFrameOpener {
  constructor(key) {
    if (!(key instanceof Uint8Array) || key.length !== 32) throw new TypeError("a control-frame key is 32 bytes (a handshake result's receiverToSender)");
    this.key = key;
    this.expectedCounter = 0n;
    this.buffer = new Uint8Array(0);
    this.failed = null;
  }

  /** The next frame's L if its 2 bytes are here, else null. */
  peekLength() {
    return this.buffer.length >= 2 ? (this.buffer[0] << 8) | this.buffer[1] : null;
  }

  append(bytes) {
    const b = new Uint8Array(this.buffer.length + bytes.length);
    b.set(this.buffer);
    b.set(bytes, this.buffer.length);
    this.buffer = b;
  }

  /** Appends received bytes and returns every complete message, in order. */
  feed(bytes) {
    if (this.failed) throw this.failed;
    this.append(bytes);
    const out = [];
    try {
      for (let m = this.next(); m; m = this.next()) out.push(m);
    } catch (e) {
      this.failed = e;
      this.buffer = new Uint8Array(0);
      throw e;
    }
    return out;
  }

  next() {
    const l = this.peekLength();
    if (l === null) return null;
    // L is checked from the prefix alone, before waiting for the body.
    if (l > MAX_FRAME_LENGTH) throw new ControlFrameError("oversize", `control frame length ${l} is above ${MAX_FRAME_LENGTH}`);
    if (l < MIN_FRAME_LENGTH) throw new ControlFrameError("badLength", `control frame length ${l} is below ${MIN_FRAME_LENGTH}`);
    if (this.buffer.length < 2 + l) return null;
    const header = this.buffer.subarray(0, HEADER_LENGTH);
    const counter = view(header).getBigUint64(2, false);
    if (counter !== this.expectedCounter) {
      throw new ControlFrameError("outOfOrder", `control frame ${counter} where ${this.expectedCounter} was next: replayed, dropped or reordered`);
    }
    if (counter >= U64_MAX) throw new ControlFrameError("counterExhausted", "control-frame counter exhausted; open a new session");
    const plain = aeadOpen(this.key, noiseNonce(counter), this.buffer.subarray(HEADER_LENGTH, 2 + l), header);
    if (plain === null) throw new ControlFrameError("badTag", "a control frame did not authenticate: wrong key or altered bytes");
    // Authentic: consume it and advance the counter, then decode.
    this.buffer = this.buffer.slice(2 + l);
    this.expectedCounter += 1n;
    return decodeControlMessage(plain);
  }
}
