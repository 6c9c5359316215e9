// The sender's side of the Remolo session handshake (docs/protocol.md,
// "Sessions"): Noise IK for a paired receiver, Noise XXpsk3 to pair with a
// code, the wire framing of each message, the payloads, and the session's
// keys. Bytes in, bytes out: the caller moves them over its connection.

import { HandshakeState, NoiseError, PATTERNS } from "./noise.js";
import { concat, utf8 } from "./bytes.js";

/** Both ends hash this first (the Noise prologue), so another handshake version fails at the first tag. */
export const PROLOGUE = utf8("Remolo handshake v1");
/** HKDF input key material that separates the datagram key from Split()'s keys. */
export const DATAGRAM_KEY_LABEL = "remolo datagram key v1";
export const PAYLOAD_VERSION = 1;

/** Handshake message types (docs/protocol.md's table "Handshake messages on the wire"). */
export const MessageType = Object.freeze({
  sessionInit: 0x01, sessionResponse: 0x02, pairInit: 0x11, pairResponse: 0x12, pairFinish: 0x13, refusal: 0x7f,
});

// The one Noise-message size of each type: keys 32, tags 16, initiator
// payload 13 (version, TAI64N), responder payload 9 (version, session id).
const NOISE_LENGTH = new Map([
  [MessageType.sessionInit, 32 + 48 + 29],
  [MessageType.sessionResponse, 32 + 25],
  [MessageType.pairInit, 32 + 16], // "e" with a PSK runs MixKey, so even this empty payload has a tag
  [MessageType.pairResponse, 32 + 48 + 25],
  [MessageType.pairFinish, 48 + 29],
  [MessageType.refusal, 1],
]);
export const MAX_MESSAGE_LENGTH = 256;

/** Refusal reasons, the refusal message's one byte, with what the user can do. */
export const RefusalReason = Object.freeze({
  1: ["notPaired", "this sender is not paired; pair it first with a code from the receiver (remolo pair)"],
  2: ["pairingUnavailable", "no pairing code is active (none issued, expired, used, or locked out after a wrong code); issue a new code on the receiver"],
  3: ["pairingSecretWrong", "wrong pairing code; the code is now burned, issue a new one on the receiver"],
  4: ["busy", "too many handshakes in progress; retry in a moment"],
  5: ["staleTimestamp", "replayed or stale handshake (timestamp not newer than the last one); check this device's clock"],
  6: ["unsupportedVersion", "unsupported protocol version; update both ends"],
  7: ["malformed", "the receiver found the handshake malformed; update both ends"],
});

/** Why a handshake failed. `code`: peerRefused (with `reason`), malformed, crypto, unexpectedMessage, unsupportedVersion. */
export class HandshakeError extends Error {
  constructor(code, message, { reason, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = "HandshakeError";
    this.code = code;
    if (reason !== undefined) this.reason = reason;
  }
}

export function refusalError(byte) {
  const [name, hint] = RefusalReason[byte] ?? RefusalReason[7];
  // Unauthenticated: anyone on the path can forge a refusal; it is a hint.
  return new HandshakeError("peerRefused", `the receiver refused us: ${hint}`, { reason: name });
}

/** A whole handshake message on the wire: u16 L (big-endian) | u8 type | L-1 bytes of Noise message. */
export function encodeHandshakeMessage(type, noiseMessage) {
  const out = new Uint8Array(3 + noiseMessage.length);
  new DataView(out.buffer).setUint16(0, 1 + noiseMessage.length, false);
  out[2] = type;
  out.set(noiseMessage, 3);
  return out;
}

/**
 * Cuts handshake messages out of a byte stream received in any chunks,
 * refusing a wrong length, type or size before any cryptography.
 */
export class HandshakeMessageReader {
  constructor() {
    this.buffer = new Uint8Array(0);
  }

  /** Appends bytes; returns the next whole message {type, noiseMessage}, or null if more are needed. */
  feed(bytes = new Uint8Array(0)) {
    this.buffer = concat(this.buffer, bytes);
    if (this.buffer.length < 2) return null;
    const l = (this.buffer[0] << 8) | this.buffer[1];
    if (l < 2 || l > MAX_MESSAGE_LENGTH) {
      throw new HandshakeError("malformed", `handshake message length ${l} is outside 2..${MAX_MESSAGE_LENGTH}: not a Remolo receiver, or another version`);
    }
    if (this.buffer.length < 2 + l) return null;
    const type = this.buffer[2];
    const noiseMessage = this.buffer.slice(3, 2 + l);
    const expected = NOISE_LENGTH.get(type);
    if (expected === undefined) {
      throw new HandshakeError("malformed", `unknown handshake message type 0x${type.toString(16)}: not a Remolo receiver, or another version`);
    }
    if (noiseMessage.length !== expected) {
      throw new HandshakeError("malformed", `handshake message type 0x${type.toString(16)} is ${expected} bytes, got ${noiseMessage.length}`);
    }
    this.buffer = this.buffer.slice(2 + l);
    return { type, noiseMessage };
  }

  /** Bytes received after the last whole message (the first control frames). */
  takeRest() {
    const rest = this.buffer;
    this.buffer = new Uint8Array(0);
    return rest;
  }
}

/**
 * A TAI64N label (12 bytes): u64 big-endian 0x400000000000000a + Unix
 * seconds, then u32 big-endian nanoseconds. Times before 1970 are clamped
 * to the epoch.
 */
export function tai64n(unixSeconds) {
  const t = Math.max(0, unixSeconds);
  const secs = Math.floor(t);
  const nanos = Math.min(999_999_999, Math.max(0, Math.floor((t - secs) * 1e9)));
  const out = new Uint8Array(12);
  const v = new DataView(out.buffer);
  v.setBigUint64(0, 0x400000000000000an + BigInt(secs), false);
  v.setUint32(8, nanos, false);
  return out;
}

/** The initiator payload (13 bytes): version 1 || TAI64N. */
export function initiatorPayload(unixSeconds) {
  return concat(Uint8Array.of(PAYLOAD_VERSION), tai64n(unixSeconds));
}

/**
 * The sender's side of one handshake. Create with session() or pairing(),
 * send start()'s bytes, feed each whole message the receiver sends to
 * receive(), and send what it returns, until `result` is set.
 */
export class SenderHandshake {
  /**
   * A session with a paired receiver (Noise IK).
   * @param {{privateKey: CryptoKey, publicKey: Uint8Array}} identity this sender's static key pair
   * @param {Uint8Array} receiverPublicKey from known-receivers (or a pairing's result.peer)
   * @param {() => number} [clock] Unix time in seconds, for the replay-refusing timestamp
   * @param {object} [ephemeral] a fixed ephemeral key pair, for tests only
   */
  static session({ identity, receiverPublicKey, clock, ephemeral }) {
    return new SenderHandshake(false, clock, new HandshakeState({
      pattern: PATTERNS.IK, initiator: true, prologue: PROLOGUE, staticKey: identity,
      remoteStatic: receiverPublicKey, ephemeral,
    }));
  }

  /**
   * A pairing (Noise XXpsk3) with the PSK of a typed code (pairing.js:
   * pairingPsk(decodePairingCode(text))).
   */
  static pairing({ identity, psk, clock, ephemeral }) {
    return new SenderHandshake(true, clock, new HandshakeState({
      pattern: PATTERNS.XXpsk3, initiator: true, prologue: PROLOGUE, staticKey: identity, psk, ephemeral,
    }));
  }

  constructor(isPairing, clock = () => Date.now() / 1000, noise) {
    this.isPairing = isPairing;
    this.clock = clock;
    this.noise = noise;
    this.started = false;
    /** Set once the handshake is complete: the session's keys and the receiver's static key. */
    this.result = null;
  }

  /** The first message to send, framed. */
  async start() {
    if (this.started) throw new HandshakeError("unexpectedMessage", "start() called twice; use a new SenderHandshake per connection");
    this.started = true;
    if (this.isPairing) {
      return encodeHandshakeMessage(MessageType.pairInit, await this.noise.writeMessage(new Uint8Array(0)));
    }
    return encodeHandshakeMessage(MessageType.sessionInit, await this.noise.writeMessage(initiatorPayload(this.clock())));
  }

  /**
   * Feeds one whole message from the receiver ({type, noiseMessage}, as
   * HandshakeMessageReader gives them). Returns the framed message to send
   * next, or null; `result` is set when the handshake is complete.
   */
  async receive({ type, noiseMessage }) {
    if (type === MessageType.refusal) throw refusalError(noiseMessage[0]);
    const expected = this.isPairing ? MessageType.pairResponse : MessageType.sessionResponse;
    if (!this.started || this.result || type !== expected) {
      throw new HandshakeError("unexpectedMessage", `unexpected handshake message type 0x${type.toString(16)} at this point`);
    }
    let payload;
    try {
      payload = await this.noise.readMessage(noiseMessage);
    } catch (e) {
      if (e instanceof NoiseError) {
        throw new HandshakeError("crypto", `handshake authentication failed (${e.code}): ` +
          (this.isPairing ? "not the receiver that showed the code, or tampering on the way"
            : "the receiver's key is not the one this sender paired with, or tampering on the way"), { cause: e });
      }
      throw e;
    }
    if (payload.length !== 9) throw new HandshakeError("malformed", `the receiver's payload is ${payload.length} bytes, not 9`);
    if (payload[0] !== PAYLOAD_VERSION) {
      throw new HandshakeError("unsupportedVersion", `the receiver speaks handshake payload version ${payload[0]}; update both ends`);
    }
    const sessionId = payload.slice(1, 9);
    let reply = null;
    if (this.isPairing) {
      reply = encodeHandshakeMessage(MessageType.pairFinish, await this.noise.writeMessage(initiatorPayload(this.clock())));
    }
    this.result = this.finish(sessionId);
    return reply;
  }

  // docs/protocol.md, "Keys": the datagram key from HKDF(ck, label, 2) output 1, then
  // Split()'s k1 (sender -> receiver) and k2 (receiver -> sender).
  finish(sessionId) {
    const datagramKey = this.noise.symmetric.deriveExtraKey(DATAGRAM_KEY_LABEL);
    const peer = this.noise.remoteStatic.slice();
    const [senderToReceiver, receiverToSender] = this.noise.split();
    return {
      sessionId, datagramKey, senderToReceiver, receiverToSender,
      handshakeHash: this.noise.handshakeHash.slice(), peer, isPairing: this.isPairing,
    };
  }
}
