// Which path the page's sealed datagrams take: an unreliable, unordered
// RTCDataChannel when it works, the session's WebSocket when it does not
// (docs/phone-page.md, "Transport"; docs/protocol.md, "The data channel").
//
// A WebSocket is TCP: one lost segment holds back every datagram behind it
// until it is resent, and on Wi-Fi that is a visible stall. A data channel
// created with {ordered: false, maxRetransmits: 0} is SCTP (RFC 8831) that
// neither orders nor resends, over DTLS over UDP: a lost datagram is lost,
// and the next one plays on time. With the redundancy feature every
// datagram carries the session's running totals, so the receiver plays the
// motion of lost ones from the next that arrives, on either path: that is
// also what makes a switch exact, whichever path a datagram took.
//
// The signaling is two control messages of the sealed session (the offer:
// the page's ICE credentials and its DTLS certificate's SHA-256; the
// answer: the receiver's), so the pairing vouches for the DTLS peer.
// Nothing here trusts the network.
//
// Rules:
// - A try starts when the receiver's hello granted the data channel. Until
//   its channel opens, datagrams ride the WebSocket. A try that has not
//   opened in OPEN_TIMEOUT_MS is given up (a firewall, no UDP route).
// - On the channel, the page pings every CHECK_EVERY_MS, and the receiver
//   answers each pong with a receipt (datagrams opened so far). An interval
//   in which at least STALL_MIN_SENT datagrams went on the channel and the
//   receipt did not grow means the channel stopped delivering: the page
//   goes back to the WebSocket at once.
// - After a failure the next try comes RETRY_MS later, doubling up to
//   RETRY_MAX_MS; a channel that opened resets it.
// - Every change of path is told to the receiver (a channel path message)
//   and to the page's diagnostics.

import { offerFields, answerSdp } from "./rtc.js";
import { ChannelAnswerStatus, ChannelPathKind, ChannelPathReason } from "./control.js";

export const OPEN_TIMEOUT_MS = 5000;
export const CHECK_EVERY_MS = 500;
export const STALL_MIN_SENT = 5;
export const RETRY_MS = 1000;
export const RETRY_MAX_MS = 8000;
export const CHANNEL_LABEL = "remolo-datagrams";
/** Bytes the channel may hold unsent before a datagram is skipped instead of queued. */
export const BUFFERED_MAX = 0;

/** An answer's address (4 or 16 bytes) as the text an SDP candidate takes. */
export function addressText(a) {
  if (a.length === 4) return Array.from(a).join(".");
  const words = [];
  for (let i = 0; i < 16; i += 2) words.push(((a[i] << 8) | a[i + 1]).toString(16));
  return words.join(":");
}

/** The answer's candidates: the page's own address first (when it is one), then the receiver's, each once. */
export function addressesFor(pageAddress, listed) {
  const norm = (a) => a.toLowerCase();
  const out = pageAddress ? [pageAddress] : [];
  for (const a of listed) if (!out.some((o) => norm(o) === norm(a))) out.push(a);
  return out.slice(0, 8);
}

export class DataPath {
  /**
   * @param {object} o
   * @param {(m: object) => void} o.control seals and sends a control message on the session
   * @param {(path: "websocket"|"datachannel", reason: string) => void} [o.onPath]
   * @param {Function} [o.PeerConnection] RTCPeerConnection, or undefined where the browser has none
   * @param {() => number} [o.now] ms
   * @param {(f: Function, ms: number) => any} [o.setTimer]
   * @param {(t: any) => void} [o.clearTimer]
   */
  constructor({ control, onPath, PeerConnection = globalThis.RTCPeerConnection, now = () => performance.now(),
    setTimer = (f, ms) => setTimeout(f, ms), clearTimer = (t) => clearTimeout(t), pageHost = globalThis.location?.hostname }) {
    this.control = control;
    // The address the page was loaded from reaches the receiver for sure:
    // it goes first among the candidates when it is an IP literal.
    const host = (pageHost ?? "").replace(/^\[|\]$/g, "");
    this.pageAddress = /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":") ? host : null;
    this.onPath = onPath;
    this.PeerConnection = PeerConnection;
    this.now = now;
    this.setTimer = setTimer;
    this.clearTimer = clearTimer;
    /** "websocket" or "datachannel": where datagrams go now. */
    this.path = "websocket";
    /** Why (a ChannelPathReason name), and the last try's problem in words. */
    this.reason = "starting";
    this.problem = null;
    this.pc = null;
    this.channel = null;
    this.tryTimer = null;
    this.retryMs = RETRY_MS;
    this.closed = false;
    this.sentOnChannel = 0;   // since the last receipt
    this.lastReceipt = null;
    this.tries = 0;
    this.opens = 0;
    this.channelDatagrams = 0;
    this.webSocketDatagrams = 0;
    this.skipped = 0;
  }

  /** The data channel was granted: start the first try (or say why there is none). */
  start() {
    if (!this.PeerConnection) {
      this.tell(ChannelPathKind.webSocket, ChannelPathReason.noPeerConnection);
      return;
    }
    this.attempt();
  }

  async attempt() {
    if (this.closed || this.pc) return;
    this.tries++;
    let pc;
    try {
      // No STUN or TURN servers: the receiver is on this LAN, and its answer
      // lists its own addresses (host candidates; it is ICE-lite, RFC 8445
      // section 2.5, so the page's checks are the only ones).
      pc = new this.PeerConnection({ iceServers: [] });
      this.pc = pc;
      const channel = pc.createDataChannel(CHANNEL_LABEL, { ordered: false, maxRetransmits: 0 });
      channel.binaryType = "arraybuffer";
      this.channel = channel;
      channel.onopen = () => { if (this.channel === channel) this.opened(); };
      channel.onclose = () => { if (this.channel === channel) this.fail(ChannelPathReason.closed, "the data channel closed"); };
      pc.onconnectionstatechange = () => {
        if (this.pc === pc && (pc.connectionState === "failed" || pc.connectionState === "closed")) {
          this.fail(ChannelPathReason.closed, `the data channel's connection ${pc.connectionState}`);
        }
      };
      this.tryTimer = this.setTimer(() => {
        if (this.pc === pc && this.path !== "datachannel") this.fail(ChannelPathReason.timedOut, `the data channel did not open in ${OPEN_TIMEOUT_MS / 1000} s (UDP blocked?)`);
      }, OPEN_TIMEOUT_MS);
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      if (this.pc !== pc) return;
      this.fields = offerFields(pc.localDescription.sdp);
      this.control({ type: "channelOffer", ufrag: this.fields.ufrag, pwd: this.fields.pwd, fingerprint: this.fields.fingerprint });
    } catch (e) {
      if (this.pc === pc) this.fail(ChannelPathReason.closed, `the data channel could not be set up: ${e?.message ?? e}`);
    }
  }

  /** The receiver's channel answer (a decoded control message). */
  async answer(m) {
    const pc = this.pc;
    if (!pc || this.closed || !this.fields) return;
    if (m.status !== ChannelAnswerStatus.ready) {
      return this.fail(ChannelPathReason.refused, `the receiver refused the data channel (${m.statusName})`);
    }
    try {
      const sdp = answerSdp({ ufrag: m.ufrag, pwd: m.pwd, fingerprint: m.fingerprint, port: m.port,
        addresses: addressesFor(this.pageAddress, m.addresses.map(addressText)), mid: this.fields.mid });
      await pc.setRemoteDescription({ type: "answer", sdp });
    } catch (e) {
      if (this.pc === pc) this.fail(ChannelPathReason.closed, `the browser refused the receiver's answer: ${e?.message ?? e}`);
    }
  }

  opened() {
    this.clearTimer(this.tryTimer);
    this.tryTimer = null;
    this.retryMs = RETRY_MS;
    this.opens++;
    this.sentOnChannel = 0;
    this.lastReceipt = null;
    this.problem = null;
    this.tell(ChannelPathKind.dataChannel, ChannelPathReason.opened);
  }

  /** Gives up the current try or channel: back to the WebSocket, and a new try later. */
  fail(reason, problem) {
    if (this.closed) return;
    this.teardown();
    this.problem = problem;
    this.tell(ChannelPathKind.webSocket, reason);
    this.tryTimer = this.setTimer(() => { this.tryTimer = null; this.attempt(); }, this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }

  teardown() {
    this.clearTimer(this.tryTimer);
    this.tryTimer = null;
    const pc = this.pc, channel = this.channel;
    this.pc = null;
    this.channel = null;
    this.fields = null;
    try { channel?.close(); } catch { /* closing anyway */ }
    try { pc?.close(); } catch { /* closing anyway */ }
  }

  tell(path, reason) {
    const name = path === ChannelPathKind.dataChannel ? "datachannel" : "websocket";
    const why = Object.keys(ChannelPathReason).find((k) => ChannelPathReason[k] === reason);
    const changed = name !== this.path || why !== this.reason;
    this.path = name;
    this.reason = why;
    if (changed) {
      try { this.control({ type: "channelPath", path, reason }); } catch { /* the session is ending */ }
      this.onPath?.(name, why);
    }
  }

  /** Sends a sealed datagram on the channel; false when it must go on the WebSocket. */
  datagram(d) {
    if (this.path === "datachannel" && this.channel?.readyState === "open") {
      this.sentOnChannel++;
      this.channelDatagrams++;
      // Data the browser's SCTP still holds back (its congestion window
      // shut by a loss) would go out late, behind it: skip this one as UDP
      // would lose it. Its motion is in the next datagram's running totals.
      if (this.channel.bufferedAmount > BUFFERED_MAX) {
        this.skipped++;
        return true;
      }
      try {
        this.channel.send(d);
        return true;
      } catch (e) {
        this.fail(ChannelPathReason.closed, `the data channel refused a datagram: ${e?.message ?? e}`);
      }
    }
    this.webSocketDatagrams++;
    return false;
  }

  /** How often the session should ping now (ms): often on the channel, to notice a stall. */
  get checkEveryMs() { return this.path === "datachannel" ? CHECK_EVERY_MS : null; }

  /** A receipt (datagrams of this session the receiver opened so far). */
  receipt(opened) {
    const n = BigInt(opened);
    if (this.path === "datachannel" && this.lastReceipt !== null && n <= this.lastReceipt && this.sentOnChannel >= STALL_MIN_SENT) {
      this.lastReceipt = n;
      this.fail(ChannelPathReason.stalled, `datagrams on the data channel stopped arriving (${this.sentOnChannel} sent, none opened)`);
      return;
    }
    this.lastReceipt = n;
    this.sentOnChannel = 0;
  }

  close() {
    this.closed = true;
    this.teardown();
  }

  /** For the page's diagnostics. */
  get diagnostics() {
    return { path: this.path, reason: this.reason, problem: this.problem, tries: this.tries, opens: this.opens,
      channelDatagrams: this.channelDatagrams, webSocketDatagrams: this.webSocketDatagrams, skipped: this.skipped };
  }
}
