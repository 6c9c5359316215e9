// One session with the receiver over a WebSocket to the page's own origin
// (/ws). The receiver's bridge relays each binary message unchanged: tag
// 0x00 carries control-channel bytes (the handshake, then sealed control
// frames) to its TCP port, tag 0x01 exactly one sealed datagram (49 bytes,
// 65 with redundancy and for a gesture state) to its UDP port. So the
// handshake, key confirmation, caps and timeouts are the native sender's,
// and the datagrams go through the same opener. Where the receiver grants the data channel, datagrams
// ride it instead while it works (datapath.js).
import { SenderHandshake, HandshakeMessageReader, HandshakeError } from "./handshake.js";
import { SenderSession } from "./session.js";
import { DatagramSealer, Kind, gesture } from "./datagram.js";
import { pairingPsk } from "./pairing.js";
import { Feature, KeyboardStatus, ByeReason, splitText } from "./control.js";
import { DataPath } from "./datapath.js";

export const TAG_STREAM = 0x00;
export const TAG_DATAGRAM = 0x01;
const PING_EVERY_MS = 10_000;
const DEAD_AFTER_MS = 15_000;

/** Why a session ended. `retry`: worth reconnecting (no pairing needed). */
export class LinkClosed extends Error {
  constructor(message, { retry = true, reason } = {}) {
    super(message);
    this.retry = retry;
    if (reason) this.reason = reason;
  }
}

/**
 * Why a WebSocket to the receiver failed, in words a person can act on.
 * A browser says nothing about why a WebSocket failed before it opened
 * (the error event carries no detail and the close code is always 1006,
 * RFC 6455 section 7.1.5; WHATWG WebSockets hides the reason on purpose),
 * so the page asks its own origin once (`probeOk`: a same-origin fetch
 * answered) and the browser whether it is online:
 *
 * - "offline": navigator.onLine is false: nothing else is worth saying;
 * - "closed": the WebSocket opened and the receiver closed it (its reason);
 * - "websocketRefused": the page's origin answers over HTTPS but its
 *   WebSocket fails before opening. iOS does that with the receiver's own
 *   certificate: the exception the user accepted for the page does not
 *   carry over to WebSockets (NSURLErrorDomain, OSStatus -9807, "invalid
 *   certificate chain"); so does a proxy or filter that blocks WebSockets;
 * - "unreachable": neither answers: the receiver is down, or this phone
 *   is not on its network. Also when there was no probe.
 *
 * Returns {kind, message}; `port` (the page's) goes into the advice.
 */
export function classifyLinkFailure({ opened = false, closeCode, closeReason, probeOk, online, port } = {}) {
  if (online === false) return { kind: "offline", message: "this phone is offline" };
  if (opened) {
    return { kind: "closed", message: `the receiver closed the connection: ${closeReason || `closed (${closeCode ?? 1006})`}` };
  }
  if (probeOk === true) {
    return { kind: "websocketRefused", message:
      "the receiver is up but this browser refused its WebSocket — its certificate exception does not carry over to "
      + `WebSockets here. Install the receiver's certificate authority (remolo receive --web ${port || "PORT"} --ca; `
      + "then open /ca.html on this phone; see docs/certificates.md) or try another browser" };
  }
  return { kind: "unreachable", message: "cannot reach the receiver: is remolo receive --web running, and this phone on its network?" };
}

/**
 * The probe: one same-origin fetch of a small page file, not cached,
 * given up after `ms` (a host that is gone may never answer a SYN).
 * Resolves true when the origin answered 2xx.
 */
export async function probeOrigin(url, ms = 3000) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ms);
  try {
    const r = await fetch(url, { cache: "no-store", signal: abort.signal });
    return r.ok;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** A WebSocket as an ordered byte stream plus a datagram sink. */
class Socket {
  constructor(url) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.chunks = [];
    this.wake = null;
    this.closed = null;
    this.onChunk = null;
    this.ws.onmessage = (e) => {
      const m = new Uint8Array(e.data);
      if (m.length < 2 || m[0] !== TAG_STREAM) return;
      const chunk = m.subarray(1);
      if (this.onChunk) this.onChunk(chunk); else { this.chunks.push(chunk); this.wake?.(); }
    };
    // Resolves true once open, false if it failed before (error, then close).
    this.opened = new Promise((resolve) => {
      this.ws.onopen = () => resolve(true);
      this.ws.onerror = () => resolve(false);
      this.failed = () => resolve(false);
    });
    this.ws.onclose = (e) => { this.failed(); this.closed = e.reason || `closed (${e.code})`; this.wake?.(); this.onClose?.(this.closed); };
  }

  async read(ms = 6000) {
    const deadline = Date.now() + ms;
    while (this.chunks.length === 0) {
      if (this.closed) throw new LinkClosed(classifyLinkFailure({ opened: true, closeReason: this.closed }).message, { reason: "closed" });
      if (Date.now() > deadline) throw new LinkClosed("the receiver did not answer in time");
      await new Promise((r) => { this.wake = r; setTimeout(r, 100); });
    }
    return this.chunks.shift();
  }

  write(bytes) {
    const m = new Uint8Array(bytes.length + 1);
    m[0] = TAG_STREAM;
    m.set(bytes, 1);
    this.ws.send(m);
  }

  datagram(d) {
    const m = new Uint8Array(d.length + 1);
    m[0] = TAG_DATAGRAM;
    m.set(d, 1);
    this.ws.send(m);
  }

  close() { try { this.ws.close(1000); } catch { /* already closed */ } }
}

/**
 * The features the page's hello asks for (control.js Feature): the
 * keyboard always; with a data channel its datagrams can be lost, so
 * redundancy too (every datagram carries the running totals); gestures
 * when the page's setting asks (docs/protocol.md, "Gestures (feature bit 3)").
 */
export function helloFeatures({ dataChannel = false, gestures = false } = {}) {
  return Feature.keyboard | (dataChannel ? Feature.redundancy | Feature.dataChannel : 0) | (gestures ? Feature.gestures : 0);
}

/** What a receiver that answered hello with bye 2 is taken for (the protocol's words). */
export const BASE_ONLY_MESSAGE = "the receiver does not take keys (older version); pointer only";

/**
 * Opens a session: pairing (XXpsk3) when `codeBytes` is given, else IK to
 * the stored receiver key. Resolves once the keys are confirmed and, with
 * `hello` (the default), once the receiver's hello said whether this page
 * may type (`link.keyboard`). A receiver that answers hello with bye 2
 * speaks only the base protocol: connect throws LinkClosed with reason
 * "baseOnly"; connect again with `hello: false` (no pairing needed, it
 * completed at the pong).
 */
export async function connect({ url, identity, receiverPublicKey, codeBytes, hello = true, onMessage, onClose, probe, online, port,
  dataChannel = typeof globalThis.RTCPeerConnection === "function", noChannel = "noPeerConnection", onPath, gestures = false }) {
  const sock = new Socket(url);
  if (!(await sock.opened)) {
    // Once per attempt: the retries' back-off paces the probes too.
    const offline = online?.() === false;
    const probeOk = offline || !probe ? undefined : await probe();
    const why = classifyLinkFailure({ opened: false, probeOk, online: offline ? false : undefined, port });
    throw new LinkClosed(why.message, { retry: true, reason: why.kind });
  }
  let paired = null;
  try {
    const hs = codeBytes
      ? SenderHandshake.pairing({ identity, psk: pairingPsk(codeBytes) })
      : SenderHandshake.session({ identity, receiverPublicKey });
    const reader = new HandshakeMessageReader();
    let out = await hs.start();
    for (;;) {
      sock.write(out);
      if (hs.result) break;
      let msg = reader.feed();
      while (!msg) msg = reader.feed(await sock.read());
      out = await hs.receive(msg);
      if (!out) break;
    }
    const session = new SenderSession(hs.result);
    sock.write(session.confirmationPing());
    let rest = reader.takeRest();
    const early = [];
    while (!session.confirmed) {
      early.push(...session.feed(rest));
      if (!session.confirmed) rest = await sock.read();
    }
    if (codeBytes) paired = hs.result.peer;
    let keyboard = { spoken: false, granted: false, status: null };
    let granted = 0;
    if (hello) {
      // Frame 1: what the page would use; nothing it adds goes out before
      // the receiver's hello says what it grants.
      sock.write(session.seal({ type: "hello", features: helloFeatures({ dataChannel, gestures }), keyboardStatus: 0 }));
      let reply = -1;
      while ((reply = early.findIndex((m) => m.type === "hello" || m.type === "bye")) < 0) early.push(...session.feed(await sock.read()));
      const [m] = early.splice(reply, 1);
      if (m.type === "bye") {
        throw m.reason === ByeReason.protocolError
          ? new LinkClosed(BASE_ONLY_MESSAGE, { retry: true, reason: "baseOnly" })
          : new LinkClosed(`the receiver ended the session (bye ${m.reason})`);
      }
      keyboard = { spoken: true, granted: (m.features & Feature.keyboard) !== 0 && m.keyboardStatus === KeyboardStatus.allowed, status: m.keyboardStatus };
      granted = m.features;
    }
    return new Link(sock, session, hs.result, { onMessage, onClose, early, keyboard, granted, onPath,
      noChannel: !hello ? "baseOnly" : !dataChannel ? noChannel : "notGranted" });
  } catch (e) {
    sock.close();
    // A pairing the pong confirmed stays valid whatever came after it.
    if (paired && e instanceof Error) e.paired = paired;
    if (e instanceof HandshakeError) {
      // A refused pairing must not be retried with the same code (it is
      // burned); a refused session is worth a retry only when busy.
      throw new LinkClosed(e.message, { retry: e.reason === "busy", reason: e.reason });
    }
    throw e;
  }
}

// Linux BTN_* codes to the button message's numbers (docs/protocol.md, "Control frames").
const BUTTON_OF_CODE = { 0x110: 1, 0x111: 2, 0x112: 3, 0x113: 4, 0x114: 5 };

export class Link {
  constructor(sock, session, result, { onMessage, onClose, early, keyboard, granted = 0, onPath, noChannel = "notGranted" }) {
    this.sock = sock;
    this.session = session;
    this.receiverPublicKey = result.peer;
    /** {spoken, granted, status}: the receiver's hello (status: control.js KeyboardStatus). */
    this.keyboard = keyboard ?? { spoken: false, granted: false, status: null };
    // Key and text messages share one sequence (first 0) and carry times
    // that never go back, so the playout keeps them in the page's order.
    this.sequence = 0;
    this.lastNs = 0n;
    this.sealer = new DatagramSealer(result.datagramKey, result.sessionId);
    /** The features the receiver's hello granted (control.js Feature bits). */
    this.granted = granted;
    this.sealer.redundant = (granted & Feature.redundancy) !== 0;
    // On a path that may lose datagrams, a lost press or release would be
    // a lost click or a held button: buttons go as button messages on the
    // session (TCP), played at their sender time like the datagrams.
    this.reliableButtons = (granted & Feature.dataChannel) !== 0;
    /** Whether the receiver takes gestures on this session (feature bit 3). */
    this.gesturesGranted = (granted & Feature.gestures) !== 0;
    this.buttonSequence = 0;
    this.lastHeard = Date.now();
    this.ended = false;
    /** Where datagrams go (datapath.js): null when the receiver did not grant the data channel. */
    this.dataPath = null;
    if (granted & Feature.dataChannel) {
      this.dataPath = new DataPath({ control: (m) => { if (!this.ended) sock.write(session.seal(m)); }, onPath });
    }
    /** Why there is no data channel, when there is none (capabilities.js transportLine). */
    this.noChannel = noChannel;
    const end = (why) => {
      if (this.ended) return;
      this.ended = true;
      clearInterval(this.timer);
      clearInterval(this.checkTimer);
      this.dataPath?.close();
      sock.close();
      onClose?.(why);
    };
    const handle = (messages) => {
      for (const m of messages) {
        if (m.type === "ping") sock.write(session.seal({ type: "pong", token: m.token }));
        if (m.type === "bye") end(`the receiver ended the session (bye ${m.reason})`);
        if (m.type === "channelAnswer") this.dataPath?.answer(m);
        if (m.type === "receipt") this.dataPath?.receipt(m.opened);
        onMessage?.(m);
      }
    };
    handle(early);
    sock.onChunk = (chunk) => {
      this.lastHeard = Date.now();
      try { handle(session.feed(chunk)); } catch (e) { end(`bad frame from the receiver: ${e.message}`); }
    };
    for (const c of sock.chunks.splice(0)) sock.onChunk(c);
    sock.onClose = (why) => end(why);
    // Keepalive (docs/protocol.md, "Timeouts and limits"): a ping every 10 s; nothing heard for
    // 15 s means the session is dead.
    this.timer = setInterval(() => {
      if (Date.now() - this.lastHeard > DEAD_AFTER_MS) return end("no answer from the receiver for 15 s");
      sock.write(session.seal({ type: "ping", token: BigInt(Date.now()) }));
    }, PING_EVERY_MS);
    // On the data channel, a ping (and so a receipt) every 500 ms: how a
    // channel that stopped delivering is noticed (datapath.js).
    if (this.dataPath) {
      this.checkTimer = setInterval(() => {
        if (!this.ended && this.dataPath.checkEveryMs) sock.write(session.seal({ type: "ping", token: BigInt(Date.now()) }));
      }, 500);
      this.dataPath.start();
    }
    this.end = end;
  }

  /** Where datagrams go now, and why (for the page's diagnostics). */
  get transport() {
    if (this.dataPath) return this.dataPath.diagnostics;
    return { path: "websocket", reason: this.noChannel, problem: null };
  }

  /**
   * One sealed datagram ({kind, a, b} from datagram.js) stamped with the
   * page's clock (us): "datagram", or "message" for a button sent as a
   * button message (reliableButtons); nothing once ended.
   */
  send(payload, txMicros) {
    if (this.ended) return;
    const tx = BigInt(Math.max(0, Math.round(txMicros)));
    if (payload.kind === Kind.button && this.reliableButtons && BUTTON_OF_CODE[payload.a]) {
      this.sock.write(this.session.seal({ type: "button", button: BUTTON_OF_CODE[payload.a], down: payload.b === 1,
        senderTimeNs: tx * 1000n, sequence: this.buttonSequence }));
      this.buttonSequence = (this.buttonSequence + 1) >>> 0;
      return "message";
    }
    const d = this.sealer.seal(payload, tx);
    if (!this.dataPath?.datagram(d)) this.sock.datagram(d);
    return "datagram";
  }

  /**
   * A gesture state (gestures.js) as a datagram stamped with the page's
   * clock (us), on the same path and counter as the others; false where
   * gestures were not granted or the link has ended.
   */
  sendGesture(s, txMicros) {
    if (this.ended || !this.gesturesGranted) return false;
    const d = this.sealer.seal(gesture(s), BigInt(Math.max(0, Math.round(txMicros))));
    if (!this.dataPath?.datagram(d)) this.sock.datagram(d);
    return true;
  }

  /**
   * The end of gesture `id` on the session (reliable: its last state's
   * datagram may be lost), with that state's sender time (us, sent in ns);
   * false where gestures were not granted or the link has ended.
   */
  endGesture(id, txMicros) {
    if (this.ended || !this.gesturesGranted) return false;
    this.sock.write(this.session.seal({ type: "gestureEnd", id, senderTimeNs: BigInt(Math.max(0, Math.round(txMicros))) * 1000n }));
    return true;
  }

  /** The sender time (ns) of a key or text: the page's clock in ms, as motion's (in us), never going back. */
  stamp(tMs) {
    const ns = BigInt(Math.max(0, Math.round(tMs * 1e6)));
    if (ns > this.lastNs) this.lastNs = ns;
    return this.lastNs;
  }

  nextSequence() {
    const s = this.sequence;
    this.sequence = (this.sequence + 1) >>> 0;
    return s;
  }

  /** A key press or release (evdev code), if the receiver's hello granted the keyboard. */
  key(code, down, tMs) {
    if (this.ended || !this.keyboard.granted) return false;
    this.sock.write(this.session.seal({ type: "key", code, down, senderTimeNs: this.stamp(tMs), sequence: this.nextSequence() }));
    return true;
  }

  /** Text to type in the receiver's layout, in messages of at most 256 bytes. */
  text(text, tMs) {
    if (this.ended || !this.keyboard.granted) return false;
    const t = this.stamp(tMs);
    for (const piece of splitText(text)) this.sock.write(this.session.seal({ type: "text", senderTimeNs: t, sequence: this.nextSequence(), text: piece }));
    return true;
  }

  /** Buffered bytes not yet on the wire (a WebSocket is TCP: see docs/phone-page.md, "Transport"). */
  get backlog() { return this.sock.ws.bufferedAmount; }

  close() {
    if (this.ended) return;
    try { this.sock.write(this.session.seal({ type: "bye", reason: 0 })); } catch { /* closing anyway */ }
    this.end("closed by the page");
  }
}
