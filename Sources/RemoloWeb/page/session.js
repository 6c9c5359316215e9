// A sender's session after its handshake (docs/protocol.md, "Key
// confirmation" and "Control frames"): the control channel's two
// directions, and the ping/pong that confirms the keys. The receiver
// registers the datagram key only after our ping, and a new pairing is
// worth storing only after its pong, which proves the receiver knew the
// code.

import { ControlFrameSealer, ControlFrameOpener, ControlFrameError } from "./control.js";
import { HandshakeError, refusalError, MessageType } from "./handshake.js";

function randomToken() {
  const b = new BigUint64Array(1);
  globalThis.crypto.getRandomValues(b);
  return b[0];
}

export class SenderSession {
  /**
   * @param {object} result a finished SenderHandshake's result
   * @param {{token?: bigint}} [options] a fixed ping token, for tests only
   */
  constructor(result, { token } = {}) {
    this.result = result;
    this.sealer = new ControlFrameSealer(result.senderToReceiver);
    this.opener = new ControlFrameOpener(result.receiverToSender);
    this.token = token ?? randomToken();
    this.pinged = false;
    /** True once the receiver's frame 0 was pong(our token). */
    this.confirmed = false;
  }

  /** Control frame 0: ping(token). Send it right after the handshake. */
  confirmationPing() {
    if (this.pinged) throw new HandshakeError("unexpectedMessage", "the confirmation ping is sent once per session");
    this.pinged = true;
    return this.sealer.seal({ type: "ping", token: this.token });
  }

  /** Seals a control message (button, motion, scroll, ping, bye...) as the next frame. */
  seal(message) {
    if (!this.pinged) throw new HandshakeError("unexpectedMessage", "send confirmationPing() before any other control frame");
    return this.sealer.seal(message);
  }

  /**
   * Feeds bytes from the receiver; returns the control messages that
   * followed the confirming pong. Before it, a refusal message (L = 2,
   * which no control frame can have: the receiver refusing a pairing)
   * throws its reason, and any first frame other than pong(token) fails.
   */
  feed(bytes) {
    if (!this.confirmed && this.opener.expectedCounter === 0n) {
      this.opener.append(bytes);
      bytes = new Uint8Array(0);
      if (this.opener.peekLength() === 2) {
        if (this.opener.buffer.length < 4) return [];
        if (this.opener.buffer[2] === MessageType.refusal) throw refusalError(this.opener.buffer[3]);
      }
    }
    const messages = this.opener.feed(bytes);
    if (!this.confirmed && messages.length > 0) {
      const first = messages.shift();
      if (first.type !== "pong" || first.token !== this.token) {
        throw new ControlFrameError("badMessage", `key confirmation failed: the receiver's first frame was ${first.type}, not pong(our token)`);
      }
      this.confirmed = true;
    }
    return messages;
  }
}
