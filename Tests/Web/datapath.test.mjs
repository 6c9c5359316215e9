// The page's choice of path (datapath.js) in virtual time: when it takes
// the data channel, when it falls back to the WebSocket and why, when it
// tries again. The browser's RTCPeerConnection is stood in for by a small
// object with the same surface, driven by the test; what a real browser
// and a real endpoint do is Tests/Browser/datachannel's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DataPath, OPEN_TIMEOUT_MS, RETRY_MS, RETRY_MAX_MS, STALL_MIN_SENT, addressText, addressesFor } from "../../Sources/RemoloWeb/page/datapath.js";
import { ChannelAnswerStatus, ChannelPathKind, ChannelPathReason } from "../../Sources/RemoloWeb/page/control.js";

const SDP = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
  "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0", "a=ice-ufrag:Ab12", "a=ice-pwd:abcdefghijklmnopqrstuv",
  "a=fingerprint:sha-256 " + Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase()).join(":"),
  "a=setup:actpass", "a=mid:0", "a=sctp-port:5000", ""].join("\r\n");

function world() {
  let now = 0;
  const timers = [];
  const pcs = [];
  class PC {
    constructor() { this.closed = false; this.connectionState = "new"; pcs.push(this); }
    createDataChannel(label, opts) {
      this.opts = opts;
      this.channel = { readyState: "connecting", bufferedAmount: 0, sent: [], send(d) { this.sent.push(d); }, close() { this.readyState = "closed"; } };
      return this.channel;
    }
    async createOffer() { return { type: "offer", sdp: SDP }; }
    async setLocalDescription(d) { this.localDescription = d; }
    async setRemoteDescription(d) { this.remote = d; }
    close() { this.closed = true; }
  }
  const w = {
    control: [], paths: [], pcs,
    advance(ms) {
      now += ms;
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        if (!timers.length || timers[0].at > now) break;
        timers.shift().f();
      }
    },
  };
  w.path = new DataPath({ control: (m) => w.control.push(m), onPath: (p, r) => w.paths.push([p, r]), PeerConnection: PC,
    now: () => now, setTimer: (f, ms) => { const t = { at: now + ms, f }; timers.push(t); return t; },
    clearTimer: (t) => { const i = timers.indexOf(t); if (i >= 0) timers.splice(i, 1); } });
  return w;
}
const tick = () => new Promise((r) => setImmediate(r));
const ready = { type: "channelAnswer", status: ChannelAnswerStatus.ready, port: 8443, fingerprint: new Uint8Array(32),
  ufrag: "U1u2U3u4U5u6U7u8", pwd: "P1p2P3p4P5p6P7p8P9p0P1p2", addresses: [Uint8Array.from([10, 0, 0, 1])] };

async function opened(w) {
  w.path.start();
  await tick();
  const pc = w.pcs.at(-1);
  await w.path.answer(ready);
  pc.channel.readyState = "open";
  pc.channel.onopen();
  return pc;
}

test("1: a granted session offers its ICE credentials and fingerprint, then takes the channel once it opens", async () => {
  const w = world();
  w.path.start();
  await tick();
  const offer = w.control.find((m) => m.type === "channelOffer");
  assert.equal(offer.ufrag, "Ab12");
  assert.equal(offer.pwd, "abcdefghijklmnopqrstuv");
  assert.deepEqual([...offer.fingerprint], Array.from({ length: 32 }, (_, i) => i));
  assert.deepEqual(w.pcs[0].opts, { ordered: false, maxRetransmits: 0 });
  assert.equal(w.path.datagram(new Uint8Array(65)), false, "before it opens: the WebSocket");
  await w.path.answer(ready);
  assert.match(w.pcs[0].remote.sdp, /a=ice-lite/);
  assert.match(w.pcs[0].remote.sdp, /10\.0\.0\.1 8443 typ host/);
  w.pcs[0].channel.readyState = "open";
  w.pcs[0].channel.onopen();
  assert.deepEqual(w.paths.at(-1), ["datachannel", "opened"]);
  assert.deepEqual(w.control.at(-1), { type: "channelPath", path: ChannelPathKind.dataChannel, reason: ChannelPathReason.opened });
  assert.equal(w.path.datagram(new Uint8Array(65)), true);
  assert.equal(w.pcs[0].channel.sent.length, 1);
});

test("2: no RTCPeerConnection: the WebSocket, and the receiver is told why", () => {
  const w = world();
  const p = new DataPath({ control: (m) => w.control.push(m), PeerConnection: undefined });
  p.start();
  assert.equal(p.path, "websocket");
  assert.deepEqual(w.control, [{ type: "channelPath", path: 0, reason: ChannelPathReason.noPeerConnection }]);
});

test("3: a channel that does not open in time is given up, and tried again after 1, 2, 4, 8, 8 s", async () => {
  const w = world();
  w.path.start();
  await tick();
  w.advance(OPEN_TIMEOUT_MS);
  assert.deepEqual(w.paths.at(-1), ["websocket", "timedOut"]);
  assert.equal(w.pcs[0].closed, true);
  let wait = RETRY_MS;
  for (let i = 0; i < 5; i++) {
    const n = w.pcs.length;
    w.advance(wait - 1);
    assert.equal(w.pcs.length, n, `try ${i + 2} not before ${wait} ms`);
    w.advance(1);
    await tick();
    assert.equal(w.pcs.length, n + 1, `try ${i + 2} after ${wait} ms`);
    w.advance(OPEN_TIMEOUT_MS);
    wait = Math.min(wait * 2, RETRY_MAX_MS);
  }
});

test("4: a refused offer falls back and says so", async () => {
  const w = world();
  w.path.start();
  await tick();
  await w.path.answer({ type: "channelAnswer", status: ChannelAnswerStatus.busy, statusName: "busy" });
  assert.deepEqual(w.paths.at(-1), ["websocket", "refused"]);
  assert.match(w.path.problem, /busy/);
});

test("5: receipts that stop growing while the channel carries datagrams: back to the WebSocket at once", async () => {
  const w = world();
  const pc = await opened(w);
  w.path.receipt(10n);
  for (let i = 0; i < STALL_MIN_SENT - 1; i++) w.path.datagram(new Uint8Array(65));
  w.path.receipt(10n);
  assert.equal(w.path.path, "datachannel", `${STALL_MIN_SENT - 1} sent and none opened is not yet a stall`);
  for (let i = 0; i < STALL_MIN_SENT; i++) w.path.datagram(new Uint8Array(65));
  w.path.receipt(14n);
  assert.equal(w.path.path, "datachannel", "a receipt that grew");
  for (let i = 0; i < STALL_MIN_SENT; i++) w.path.datagram(new Uint8Array(65));
  w.path.receipt(14n);
  assert.deepEqual(w.paths.at(-1), ["websocket", "stalled"]);
  assert.equal(pc.closed, true);
  assert.equal(w.path.datagram(new Uint8Array(65)), false, "the next datagram rides the WebSocket");
  w.advance(RETRY_MS);
  await tick();
  const again = w.pcs.at(-1);
  assert.notEqual(again, pc, "a new try");
  await w.path.answer(ready);
  again.channel.readyState = "open";
  again.channel.onopen();
  assert.deepEqual(w.paths.at(-1), ["datachannel", "opened"], "and back on the channel when it opens");
});

test("6: a channel that closes, or a connection that fails, falls back", async () => {
  for (const how of ["close", "fail"]) {
    const w = world();
    const pc = await opened(w);
    if (how === "close") { pc.channel.readyState = "closed"; pc.channel.onclose(); } else { pc.connectionState = "failed"; pc.onconnectionstatechange(); }
    assert.deepEqual(w.paths.at(-1), ["websocket", "closed"], how);
  }
});

test("7: data the channel holds back unsent: the datagram is skipped (its motion rides the next one's totals), not queued", async () => {
  const w = world();
  const pc = await opened(w);
  pc.channel.bufferedAmount = 130;
  assert.equal(w.path.datagram(new Uint8Array(65)), true);
  assert.equal(pc.channel.sent.length, 0);
  assert.equal(w.path.diagnostics.skipped, 1);
  pc.channel.bufferedAmount = 0;
  w.path.datagram(new Uint8Array(65));
  assert.equal(pc.channel.sent.length, 1);
});

test("8: an answer's addresses as candidate text", () => {
  assert.equal(addressText(Uint8Array.from([192, 168, 1, 2])), "192.168.1.2");
  assert.equal(addressText(Uint8Array.from([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])), "fd00:0:0:0:0:0:0:1");
});

test("9: the page's own address goes first among the candidates, once", () => {
  assert.deepEqual(addressesFor("192.168.1.5", ["10.0.0.1", "192.168.1.5"]), ["192.168.1.5", "10.0.0.1"]);
  assert.deepEqual(addressesFor(null, ["10.0.0.1"]), ["10.0.0.1"]);
  const w = new DataPath({ control: () => {}, PeerConnection: undefined, pageHost: "[FD00::1]" });
  assert.equal(w.pageAddress, "FD00::1");
  assert.equal(new DataPath({ control: () => {}, PeerConnection: undefined, pageHost: "box.local" }).pageAddress, null);
});
