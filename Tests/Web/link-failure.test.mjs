// Why a connection to the receiver failed (link.js classifyLinkFailure),
// and connect's single probe of the page's origin per attempt.
import { test } from "node:test";
import assert from "node:assert/strict";
import { classifyLinkFailure, connect, LinkClosed } from "../../Sources/RemoloWeb/page/link.js";

test("a failed connection, classified", () => {
  const cases = [ // [case, what happened, kind, the message contains]
    [1, { opened: false, probeOk: false }, "unreachable", "cannot reach the receiver"],
    [2, { opened: false, probeOk: true, port: "8443" }, "websocketRefused", "remolo receive --web 8443 --ca"],
    [3, { opened: false, probeOk: true }, "websocketRefused", "then open /ca.html on this phone"],
    [4, { opened: true, closeCode: 1008, closeReason: "not paired" }, "closed", "the receiver closed the connection: not paired"],
    [5, { opened: true, closeCode: 1006 }, "closed", "closed (1006)"],
    [6, { opened: false, probeOk: true, online: false }, "offline", "this phone is offline"],
    [7, { opened: true, closeReason: "x", online: false }, "offline", "offline"],
    [8, { opened: false }, "unreachable", "cannot reach"],  // not probed
    [9, { opened: false, probeOk: false, online: true }, "unreachable", "cannot reach"],
  ];
  for (const [n, facts, kind, text] of cases) {
    const got = classifyLinkFailure(facts);
    assert.equal(got.kind, kind, `case ${n}: kind`);
    assert.ok(got.message.includes(text), `case ${n}: ${got.message}`);
  }
  assert.ok(classifyLinkFailure({ probeOk: true }).message.startsWith("the receiver is up but this browser refused its WebSocket"));
});

/** A WebSocket that fails before opening (error, then close 1006), as every browser reports any such failure. */
class FailingSocket {
  static made = 0;
  constructor() {
    FailingSocket.made++;
    setTimeout(() => { this.onerror?.({}); this.onclose?.({ code: 1006, reason: "" }); }, 1);
  }
  close() {}
}

test("connect: a WebSocket failing before it opens is probed once and classified", async () => {
  const saved = globalThis.WebSocket;
  globalThis.WebSocket = FailingSocket;
  try {
    const cases = [ // [case, probe answer, online, kind, probes made]
      [1, true, true, "websocketRefused", 1],
      [2, false, true, "unreachable", 1],
      [3, true, false, "offline", 0],
      [4, undefined, true, "unreachable", 0], // no probe given
    ];
    for (const [n, answer, online, kind, probes] of cases) {
      let made = 0;
      const probe = answer === undefined ? undefined : async () => { made++; return answer; };
      await assert.rejects(connect({ url: "wss://x/ws", probe, online: () => online, port: "8443" }), (e) => {
        assert.ok(e instanceof LinkClosed, `case ${n}: a LinkClosed`);
        assert.equal(e.reason, kind, `case ${n}: kind`);
        assert.equal(e.retry, true, `case ${n}: worth a retry (the back-off paces it)`);
        return true;
      });
      assert.equal(made, probes, `case ${n}: ${made} probes`);
    }
  } finally {
    globalThis.WebSocket = saved;
  }
});
