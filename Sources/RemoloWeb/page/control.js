// Control frames and messages, after the handshake on the same connection
// (docs/protocol.md, "Control frames"):
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
export const ControlType = Object.freeze({ settings: 0x01, button: 0x02, motion: 0x03, scroll: 0x04, ping: 0x05, pong: 0x06, bye: 0x07, receipt: 0x08,
  hello: 0x09, key: 0x0a, text: 0x0b, refused: 0x0c, channelOffer: 0x0d, channelAnswer: 0x0e, channelPath: 0x0f,
  gestureEnd: 0x10 });
const LENGTH = { 0x01: 14, 0x02: 15, 0x03: 17, 0x04: 17, 0x05: 9, 0x06: 9, 0x07: 2, 0x08: 9, 0x09: 6, 0x0a: 16, 0x0c: 8, 0x10: 10 };
// The data channel's messages, decoded by their own code (variable lengths).
const isChannel = (t) => t >= ControlType.channelOffer && t <= ControlType.channelPath;
const NAME = Object.fromEntries(Object.entries(ControlType).map(([k, v]) => [v, k]));

// The keyboard extension (hello, key, text, refused): sent only to a
// receiver whose hello granted the keyboard feature. A text message is the
// one variable-length message: u8 type, u64 sender time ns, u32 sequence,
// then 1..256 bytes of UTF-8.
export const TEXT_HEADER_LENGTH = 13;
export const MAX_TEXT_BYTES = 256;
/** Feature bits of a hello (u32). */
export const Feature = Object.freeze({ keyboard: 1, redundancy: 2, dataChannel: 4, gestures: 8 });

// The data channel (feature bit 2; docs/protocol.md, "The data channel"):
// the page's offer (its ICE ufrag and password, its DTLS certificate's
// SHA-256), the receiver's answer, and which path the page's datagrams take.
export const CHANNEL_UFRAG_LENGTHS = [4, 64];
export const CHANNEL_PASSWORD_LENGTHS = [22, 128];
export const CHANNEL_MAX_ADDRESSES = 8;
/** The status of a channel answer. */
export const ChannelAnswerStatus = Object.freeze({ ready: 0, unavailable: 1, busy: 2, badOffer: 3 });
/** The path of a channel path message, and why. */
export const ChannelPathKind = Object.freeze({ webSocket: 0, dataChannel: 1 });
export const ChannelPathReason = Object.freeze({ opened: 0, noPeerConnection: 1, refused: 2, timedOut: 3, stalled: 4, closed: 5 });
const ANSWER_NAME = Object.fromEntries(Object.entries(ChannelAnswerStatus).map(([k, v]) => [v, k]));
const PATH_REASON_NAME = Object.fromEntries(Object.entries(ChannelPathReason).map(([k, v]) => [v, k]));
const ICE_CHAR = /^[A-Za-z0-9+/]*$/;

/** An ICE ufrag or password (RFC 8839 ice-chars) as a length byte and its ASCII. */
function iceField(value, [lo, hi], what) {
  if (typeof value !== "string" || !ICE_CHAR.test(value) || value.length < lo || value.length > hi) {
    throw new RangeError(`${what} must be ${lo}..${hi} ICE characters (A-Z a-z 0-9 + /), got ${JSON.stringify(value)}`);
  }
  return [value.length, ...utf8Encoder.encode(value)];
}

function readIceField(p, at, [lo, hi], what) {
  const n = p[at];
  if (n === undefined || n < lo || n > hi || at + 1 + n > p.length) throw badMessage(`${what} length`);
  const s = String.fromCharCode(...p.subarray(at + 1, at + 1 + n));
  if (!ICE_CHAR.test(s)) throw badMessage(`${what} has a character ICE does not allow`);
  return [s, at + 1 + n];
}

function encodeChannel(m) {
  const b = [ControlType[m.type]];
  if (m.type === "channelOffer") {
    if (!(m.fingerprint instanceof Uint8Array) || m.fingerprint.length !== 32) throw new RangeError("a channel offer's fingerprint is the 32-byte SHA-256 of the page's DTLS certificate");
    b.push(...iceField(m.ufrag, CHANNEL_UFRAG_LENGTHS, "ufrag"), ...iceField(m.pwd, CHANNEL_PASSWORD_LENGTHS, "pwd"), ...m.fingerprint);
  } else if (m.type === "channelAnswer") {
    b.push(uint(m.status, 8, "status"));
    if (m.status === ChannelAnswerStatus.ready) {
      b.push(uint(m.port, 16, "port") >> 8, m.port & 0xff, ...m.fingerprint);
      b.push(...iceField(m.ufrag, CHANNEL_UFRAG_LENGTHS, "ufrag"), ...iceField(m.pwd, CHANNEL_PASSWORD_LENGTHS, "pwd"));
      if (m.addresses.length < 1 || m.addresses.length > CHANNEL_MAX_ADDRESSES) throw new RangeError(`1..${CHANNEL_MAX_ADDRESSES} addresses`);
      b.push(m.addresses.length);
      for (const a of m.addresses) b.push(a.length === 4 ? 4 : 6, ...a);
    }
  } else {
    if (!Object.values(ChannelPathKind).includes(m.path) || PATH_REASON_NAME[m.reason] === undefined) throw new RangeError("channel path: path 0..1 (ChannelPathKind), reason 0..5 (ChannelPathReason)");
    b.push(m.path, m.reason);
  }
  if (b.length > MAX_PLAINTEXT_LENGTH) throw new RangeError("channel message over a control frame");
  return Uint8Array.from(b);
}

function decodeChannel(type, p) {
  let at = 1;
  let m;
  if (type === "channelOffer") {
    let ufrag, pwd;
    [ufrag, at] = readIceField(p, at, CHANNEL_UFRAG_LENGTHS, "channel offer ufrag");
    [pwd, at] = readIceField(p, at, CHANNEL_PASSWORD_LENGTHS, "channel offer password");
    if (at + 32 > p.length) throw badMessage("channel offer fingerprint cut short");
    m = { type, ufrag, pwd, fingerprint: p.slice(at, at + 32) };
    at += 32;
  } else if (type === "channelAnswer") {
    const status = p[at++];
    if (ANSWER_NAME[status] === undefined) throw badMessage(`unknown channel answer status ${status}`);
    m = { type, status, statusName: ANSWER_NAME[status] };
    if (status === ChannelAnswerStatus.ready) {
      if (at + 34 > p.length) throw badMessage("channel answer cut short");
      const port = (p[at] << 8) | p[at + 1];
      if (port === 0) throw badMessage("channel answer without a port");
      const fingerprint = p.slice(at + 2, at + 34);
      at += 34;
      let ufrag, pwd;
      [ufrag, at] = readIceField(p, at, CHANNEL_UFRAG_LENGTHS, "channel answer ufrag");
      [pwd, at] = readIceField(p, at, CHANNEL_PASSWORD_LENGTHS, "channel answer password");
      const n = p[at++];
      if (!(n >= 1 && n <= CHANNEL_MAX_ADDRESSES)) throw badMessage("channel answer address count");
      const addresses = [];
      for (let i = 0; i < n; i++) {
        const len = p[at] === 4 ? 4 : p[at] === 6 ? 16 : 0;
        if (!len || at + 1 + len > p.length) throw badMessage("channel answer address");
        addresses.push(p.slice(at + 1, at + 1 + len));
        at += 1 + len;
      }
      Object.assign(m, { port, fingerprint, ufrag, pwd, addresses });
    }
  } else {
    if (p[1] > 1 || PATH_REASON_NAME[p[2]] === undefined) throw badMessage("channel path");
    m = { type, path: p[1], reason: p[2], reasonName: PATH_REASON_NAME[p[2]] };
    at = 3;
  }
  if (at !== p.length) throw badMessage(`${p.length - at} bytes after a ${type} message`);
  return m;
}
/** The keyboard status of a receiver's hello (a sender sends 0). */
export const KeyboardStatus = Object.freeze({ allowed: 0, off: 1, notAllowed: 2, noDevice: 3 });
/** Why the receiver refused a key or text message. */
export const RefusedReason = Object.freeze({ keyboardOff: 1, notAllowed: 2, unknownKey: 3, notHeld: 4, flood: 5,
  invalidUtf8: 6, tooLong: 7, untypable: 8, alreadyHeld: 9 });
const REFUSED_NAME = Object.fromEntries(Object.entries(RefusedReason).map(([k, v]) => [v, k]));
const utf8Strict = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

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

function uint(v, bits, what) {
  const max = 2 ** bits - 1;
  if (!Number.isInteger(v) || v < 0 || v > max) throw new RangeError(`${what} must be a u${bits} (0..${max}), got ${v}`);
  return v;
}

/** UTF-8 bytes of a text message's text: a string (lone surrogates refused) or bytes as they are. */
function textBytes(text) {
  if (text instanceof Uint8Array) return text;
  if (typeof text !== "string") throw new TypeError("text must be a string or UTF-8 bytes");
  if (!text.isWellFormed()) throw new RangeError("text has a lone surrogate: not encodable as UTF-8");
  return utf8Encoder.encode(text);
}

function int32(v, what) {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new RangeError(`${what} must be an i32, got ${v}`);
  return v;
}

/**
 * The plaintext of a message object: {type: "ping", token}, {type: "pong",
 * token}, {type: "bye", reason}, {type: "button", button, down, senderTimeNs,
 * sequence}, {type: "motion"|"scroll", dx, dy, senderTimeNs}, {type:
 * "settings", pointerSpeed, acceleration, scrollSpeed, naturalScrolling},
 * {type: "hello", features, keyboardStatus}, {type: "key", code, down,
 * senderTimeNs, sequence}, {type: "text", senderTimeNs, sequence, text}
 * (a string, or its UTF-8 bytes), {type: "refused", sequence, reason,
 * count}. u64 fields take a bigint or a safe integer.
 */
export function encodeControlMessage(m) {
  const t = ControlType[m.type];
  if (t === undefined) throw new TypeError(`unknown control message type "${m.type}"; one of ${Object.keys(ControlType).join(", ")}`);
  if (isChannel(t)) return encodeChannel(m);
  let out;
  if (m.type === "text") {
    const bytes = textBytes(m.text);
    if (bytes.length < 1 || bytes.length > MAX_TEXT_BYTES) {
      throw new RangeError(`a text message carries 1..${MAX_TEXT_BYTES} bytes of UTF-8, got ${bytes.length}; split longer text (splitText)`);
    }
    out = new Uint8Array(TEXT_HEADER_LENGTH + bytes.length);
    out.set(bytes, TEXT_HEADER_LENGTH);
  } else {
    out = new Uint8Array(LENGTH[t]);
  }
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
    case "hello":
      v.setUint32(1, uint(m.features, 32, "features"), false);
      out[5] = uint(m.keyboardStatus ?? 0, 8, "keyboardStatus");
      break;
    case "key":
      v.setUint16(1, uint(m.code, 16, "code (an evdev KEY_* code)"), false);
      out[3] = m.down ? 1 : 0;
      v.setBigUint64(4, toU64(m.senderTimeNs, "senderTimeNs"), false);
      v.setUint32(12, uint(m.sequence, 32, "sequence"), false);
      break;
    case "text":
      v.setBigUint64(1, toU64(m.senderTimeNs, "senderTimeNs"), false);
      v.setUint32(9, uint(m.sequence, 32, "sequence"), false);
      break;
    case "refused":
      v.setUint32(1, uint(m.sequence, 32, "sequence"), false);
      out[5] = uint(m.reason, 8, "reason");
      v.setUint16(6, uint(m.count, 16, "count"), false);
      break;
    case "gestureEnd":
      out[1] = uint(m.id, 8, "id");
      v.setBigUint64(2, toU64(m.senderTimeNs, "senderTimeNs"), false);
      break;
  }
  return out;
}

/**
 * Splits text into pieces of at most `maxBytes` bytes of UTF-8 each, at
 * code point boundaries (a piece never ends inside a character), for one
 * text message each. Lone surrogates become U+FFFD, as TextEncoder makes
 * them.
 */
export function splitText(text, maxBytes = MAX_TEXT_BYTES) {
  const pieces = [];
  let piece = "", bytes = 0;
  for (const ch of text.toWellFormed()) {
    const n = utf8Encoder.encode(ch).length;
    if (bytes + n > maxBytes && piece) { pieces.push(piece); piece = ""; bytes = 0; }
    piece += ch;
    bytes += n;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

/** A message object from a plaintext; anything invalid throws ControlFrameError. u64 fields come back as bigints. */
export function decodeControlMessage(p) {
  if (p.length === 0) throw badMessage("empty");
  const t = p[0];
  const type = NAME[t];
  if (type === undefined) throw badMessage(`unknown type 0x${t.toString(16)}`);
  if (isChannel(t)) {
    // Variable length: the offer 61..227 bytes, the answer 2..512, the path 3.
    const [lo, hi] = { channelOffer: [61, 227], channelAnswer: [2, MAX_PLAINTEXT_LENGTH], channelPath: [3, 3] }[type];
    if (p.length < lo || p.length > hi) throw badMessage(`type 0x${t.toString(16)} (${type}) is ${lo}..${hi} bytes, got ${p.length}`);
    return decodeChannel(type, p);
  }
  if (type === "text") {
    const lo = TEXT_HEADER_LENGTH + 1, hi = TEXT_HEADER_LENGTH + MAX_TEXT_BYTES;
    if (p.length < lo || p.length > hi) throw badMessage(`type 0x0b (text) is ${lo}..${hi} bytes, got ${p.length}`);
  } else if (p.length !== LENGTH[t]) {
    throw badMessage(`type 0x${t.toString(16)} is ${LENGTH[t]} bytes, got ${p.length}`);
  }
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
    case "hello": {
      // Unknown feature bits are ignored, and a keyboard status this page
      // does not know means "not allowed, for a reason this version does
      // not know" (a newer receiver may know more). The keyboard bit comes
      // only with status 0.
      const features = v.getUint32(1, false);
      if ((features & Feature.keyboard) && p[5] !== KeyboardStatus.allowed) throw badMessage(`hello grants the keyboard with status ${p[5]}`);
      return { type, features, keyboardStatus: p[5] };
    }
    case "gestureEnd":
      return { type, id: p[1], senderTimeNs: v.getBigUint64(2, false) };
    case "key":
      if (p[3] > 1) throw badMessage(`key state ${p[3]}`);
      return { type, code: v.getUint16(1, false), down: p[3] === 1, senderTimeNs: v.getBigUint64(4, false), sequence: v.getUint32(12, false) };
    case "text": {
      let text;
      try {
        text = utf8Strict.decode(p.subarray(TEXT_HEADER_LENGTH));
      } catch {
        throw badMessage("text is not valid UTF-8");
      }
      return { type, senderTimeNs: v.getBigUint64(1, false), sequence: v.getUint32(9, false), text };
    }
    case "refused":
      if (REFUSED_NAME[p[5]] === undefined) throw badMessage(`unknown refused reason ${p[5]}`);
      return { type, sequence: v.getUint32(1, false), reason: p[5], reasonName: REFUSED_NAME[p[5]], count: v.getUint16(6, false) };
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
