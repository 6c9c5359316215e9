// The page's protocol code against the real Swift receiver on loopback:
// pair with `remolo receive --pair` over TCP, open an IK session, confirm
// the keys, send control frames and UDP datagrams (a gesture's states and
// end included), and read the receiver's --stats-json counters and
// session log.
//
// Needs the remolo binary: `swift build --product remolo` (or set
// REMOLO_BIN). Skipped, saying so, when it is not there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";
import tls from "node:tls";
import dgram from "node:dgram";
import { SenderHandshake, HandshakeMessageReader } from "../../Sources/RemoloWeb/page/handshake.js";
import { SenderSession } from "../../Sources/RemoloWeb/page/session.js";
import { DatagramSealer, sealDatagram, motion, heartbeat, gesture } from "../../Sources/RemoloWeb/page/datagram.js";
import { GestureFramer } from "../../Sources/RemoloWeb/page/gestures.js";
import { helloFeatures } from "../../Sources/RemoloWeb/page/link.js";
import { decodePairingCode, pairingPsk, fingerprint } from "../../Sources/RemoloWeb/page/pairing.js";
import { generateKeyPair } from "../../Sources/RemoloWeb/page/x25519.js";
import { toHex } from "../../Sources/RemoloWeb/page/bytes.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const bin = process.env.REMOLO_BIN ?? join(root, ".build", "debug", "remolo");
const skip = existsSync(bin) ? false : `no remolo binary at ${bin}: run \`swift build --product remolo\` first (or set REMOLO_BIN)`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowMicros = () => process.hrtime.bigint() / 1000n;

/** The receiver as a child process, its stdout as lines to wait on. */
function startReceiver(configDir, sink, extra = []) {
  const child = spawn(bin, ["receive", "--pair", "--listen", "127.0.0.1:0", "--sink", sink, "--stats-json", "--stats", "0.25", "--seconds", "30", ...extra],
    { env: { ...process.env, REMOLO_CONFIG_DIR: configDir }, stdio: ["ignore", "pipe", "pipe"] });
  const lines = [];
  const waiters = [];
  let partial = "";
  const onData = (chunk) => {
    partial += chunk;
    const parts = partial.split("\n");
    partial = parts.pop();
    for (const line of parts) {
      lines.push(line);
      for (const w of [...waiters]) if (w.re.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line.match(w.re)); }
    }
  };
  child.stdout.setEncoding("utf8").on("data", onData);
  child.stderr.setEncoding("utf8").on("data", onData);
  const exited = new Promise((r) => child.on("exit", r));
  return {
    child, lines, exited,
    waitFor(re, ms = 10000) {
      const hit = lines.find((l) => re.test(l));
      if (hit) return Promise.resolve(hit.match(re));
      return new Promise((resolve, reject) => {
        const w = { re, resolve };
        waiters.push(w);
        setTimeout(() => reject(new Error(`receiver never printed ${re} within ${ms} ms; it said:\n${lines.join("\n")}`)), ms).unref();
      });
    },
  };
}

/** One TCP connection: bytes in through a queue the handshake and session read from. */
function connect(port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks = [];
    let wake = null;
    socket.on("data", (d) => { chunks.push(new Uint8Array(d)); wake?.(); });
    let ended = false;
    socket.on("close", () => { ended = true; wake?.(); });
    socket.on("error", reject);
    socket.on("connect", () => resolve({
      socket,
      async read(ms = 5000) {
        const deadline = Date.now() + ms;
        while (chunks.length === 0) {
          if (ended && chunks.length === 0) throw new Error("the receiver closed the connection");
          if (Date.now() > deadline) throw new Error("no reply from the receiver within 5 s");
          await new Promise((r) => { wake = r; setTimeout(r, 50); });
        }
        return chunks.shift();
      },
      write: (bytes) => socket.write(bytes),
    }));
  });
}

/** Runs a sender handshake and the key confirmation over one connection. */
async function openSession(conn, handshake) {
  const reader = new HandshakeMessageReader();
  let out = await handshake.start();
  for (;;) {
    conn.write(out);
    if (handshake.result) break; // XXpsk3: message 3 was the last
    let msg = reader.feed();
    while (!msg) msg = reader.feed(await conn.read());
    out = await handshake.receive(msg);
    if (!out) break; // IK: message 2 was the last
  }
  const session = new SenderSession(handshake.result);
  conn.write(session.confirmationPing());
  const early = [];
  let rest = reader.takeRest();
  while (!session.confirmed) {
    early.push(...session.feed(rest));
    if (!session.confirmed) rest = await conn.read();
  }
  return { session, early };
}

test("pairs with, opens a session on, and moves the pointer of the Swift receiver", { skip, timeout: 60000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "remolo-web-")); // mode 0700
  const rx = startReceiver(join(dir, "config"), join(dir, "frames"));
  try {
    const [, receiverFingerprint, port] = await rx.waitFor(/^receiver (\S+) listening on 127\.0\.0\.1:(\d+)/);
    const [, code] = await rx.waitFor(/^pairing code: (\S+)/);
    const phone = await generateKeyPair();

    // 1. Pairing (XXpsk3) with the printed code, then key confirmation.
    const pairingConn = await connect(Number(port));
    const pairing = SenderHandshake.pairing({ identity: phone, psk: pairingPsk(decodePairingCode(code)) });
    const paired = await openSession(pairingConn, pairing);
    assert.ok(paired.session.confirmed, "the receiver answered ping with pong(token)");
    const receiverKey = pairing.result.peer;
    assert.equal(fingerprint(receiverKey), receiverFingerprint, "the key learned by pairing is the one the receiver prints");
    await rx.waitFor(new RegExp(`from ${fingerprint(phone.publicKey)} \\(newly paired\\)`));
    assert.match(readFileSync(join(dir, "config", "authorized-senders"), "utf8"), new RegExp(toHex(phone.publicKey)));
    pairingConn.write(paired.session.seal({ type: "bye", reason: 0 }));
    pairingConn.socket.end();

    // 2. A session (IK) with the key learned, then confirmation.
    const conn = await connect(Number(port));
    const hs = SenderHandshake.session({ identity: phone, receiverPublicKey: receiverKey });
    const { session } = await openSession(conn, hs);
    assert.ok(session.confirmed);
    const [, sessionName] = await rx.waitFor(new RegExp(`session (\\S+) from ${fingerprint(phone.publicKey)}$`));

    // 3. Datagrams over UDP: 60 motions of (+2, -1) px, 8 ms apart, then
    //    one replayed, one altered, one for an unknown session, and a heartbeat.
    const udp = dgram.createSocket("udp4");
    const send = (d) => new Promise((r) => udp.send(d, Number(port), "127.0.0.1", r));
    const { datagramKey, sessionId } = hs.result;
    const sealer = new DatagramSealer(datagramKey, sessionId);
    let last;
    for (let i = 0; i < 60; i++) {
      last = sealer.seal(motion(512, -256), nowMicros());
      await send(last);
      await sleep(8);
    }
    await send(last); // replay
    const altered = sealer.seal(motion(512, 0), nowMicros());
    altered[20] ^= 1;
    await send(altered); // bad_tag
    await send(sealDatagram(datagramKey, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 0, motion(512, 0), nowMicros())); // unknown_session
    await send(sealer.seal(heartbeat(), nowMicros()));

    // 4. Control frames: a click and a fallback motion of +10 px.
    const ns = () => process.hrtime.bigint();
    conn.write(session.seal({ type: "button", button: 1, down: true, senderTimeNs: ns(), sequence: 1 }));
    conn.write(session.seal({ type: "motion", dx: 2560, dy: 0, senderTimeNs: ns() }));
    conn.write(session.seal({ type: "button", button: 1, down: false, senderTimeNs: ns(), sequence: 2 }));
    conn.write(session.seal({ type: "ping", token: 42n }));
    let pong = [];
    while (pong.length < 2) pong = pong.concat(session.feed(await conn.read()));
    // The pong, then the receipt: the 61 datagrams of this session that opened.
    assert.deepEqual(pong, [{ type: "pong", token: 42n }, { type: "receipt", opened: 61n }],
      "the receiver opened our frames 1..4, answered the ping and sent its receipt");
    await sleep(300);
    conn.write(session.seal({ type: "bye", reason: 0 }));
    conn.socket.end();
    udp.close();
    await rx.waitFor(new RegExp(`session ${sessionName} ended`));

    rx.child.kill("SIGINT");
    await rx.exited;
    if (process.env.REMOLO_WEB_VERBOSE) console.log(rx.lines.filter((l) => !l.startsWith("{")).join("\n"));
    const stats = JSON.parse(rx.lines.filter((l) => l.startsWith("{")).at(-1));
    assert.equal(stats.opened, 61, "60 motions and a heartbeat opened");
    assert.deepEqual(stats.drops, { short: 0, long: 0, unknown_session: 1, replay: 1, bad_tag: 1, bad_kind: 0, bad_field: 0 });
    assert.equal(stats.total_dx, 60 * 2 + 10, "datagram motion plus the control-frame motion, in pixels");
    assert.equal(stats.total_dy, -60);
    assert.ok(stats.buttons >= 2, `a press and a release played (buttons ${stats.buttons})`);
    assert.ok(stats.sessions_added >= 2, "the pairing's session and the IK session");
  } finally {
    if (rx.child.exitCode === null) rx.child.kill("SIGINT");
    await rx.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

// A binary built before the receiver took keys has no --keymap.
const skipKeys = skip || (spawnSync(bin, ["receive", "--help"], { encoding: "utf8" }).stdout.includes("--keymap")
  ? false : `${bin} takes no keys (no --keymap): rebuild it with the receiver's keyboard`);

test("says hello to the Swift receiver, types, and reads its refusal", { skip: skipKeys, timeout: 60000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "remolo-web-"));
  const rx = startReceiver(join(dir, "config"), join(dir, "frames"), ["--keymap", "us"]);
  try {
    const [, , port] = await rx.waitFor(/^receiver (\S+) listening on 127\.0\.0\.1:(\d+)/);
    const [, code] = await rx.waitFor(/^pairing code: (\S+)/);
    const conn = await connect(Number(port));
    const pairing = SenderHandshake.pairing({ identity: await generateKeyPair(), psk: pairingPsk(decodePairingCode(code)) });
    const { session } = await openSession(conn, pairing);
    const next = async () => {
      let got = [];
      while (got.length === 0) got = session.feed(await conn.read());
      assert.equal(got.length, 1, JSON.stringify(got, (k, v) => (typeof v === "bigint" ? String(v) : v)));
      return got[0];
    };
    // Frame 1: hello; the receiver's answer grants the keyboard.
    conn.write(session.seal({ type: "hello", features: 1, keyboardStatus: 0 }));
    assert.deepEqual(await next(), { type: "hello", features: 1, keyboardStatus: 0 });
    // KEY_A pressed and released, then text with one character the us layout lacks.
    const ns = () => process.hrtime.bigint();
    conn.write(session.seal({ type: "key", code: 30, down: true, senderTimeNs: ns(), sequence: 0 }));
    conn.write(session.seal({ type: "key", code: 30, down: false, senderTimeNs: ns(), sequence: 1 }));
    conn.write(session.seal({ type: "text", senderTimeNs: ns(), sequence: 2, text: "b€c" }));
    assert.deepEqual(await next(), { type: "refused", sequence: 2, reason: 8, reasonName: "untypable", count: 1 });
    // A release of a key not held: refused, the session goes on.
    conn.write(session.seal({ type: "key", code: 30, down: false, senderTimeNs: ns(), sequence: 3 }));
    assert.deepEqual(await next(), { type: "refused", sequence: 3, reason: 4, reasonName: "notHeld", count: 1 });
    // A gap in the sequence: bye 2.
    conn.write(session.seal({ type: "key", code: 30, down: true, senderTimeNs: ns(), sequence: 9 }));
    assert.deepEqual(await next(), { type: "bye", reason: 2, reasonName: "protocolError" });
    conn.socket.end();
    rx.child.kill("SIGINT");
    await rx.exited;
    const stats = JSON.parse(rx.lines.filter((l) => l.startsWith("{")).at(-1));
    assert.equal(stats.keys.key_messages, 3, "the gap's key was not taken");
    assert.equal(stats.keys.text_messages, 1);
    assert.equal(stats.keys.refused.untypable, 1);
    assert.equal(stats.keys.refused.not_held, 1);
  } finally {
    if (rx.child.exitCode === null) rx.child.kill("SIGINT");
    await rx.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

// A binary built before the receiver took gestures has no --touchpad-sink.
const skipGestures = skip || (spawnSync(bin, ["receive", "--help"], { encoding: "utf8" }).stdout.includes("--touchpad-sink")
  ? false : `${bin} takes no gestures (no --touchpad-sink): rebuild it with the receiver's gestures`);

test("asks the Swift receiver for gestures, sends a swipe as the page does, and ends it", { skip: skipGestures, timeout: 60000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "remolo-web-"));
  const hello = async (extra) => {
    const rx = startReceiver(join(dir, `config${extra.length}`), join(dir, `frames${extra.length}`), extra);
    const [, , port] = await rx.waitFor(/^receiver (\S+) listening on 127\.0\.0\.1:(\d+)/);
    const [, code] = await rx.waitFor(/^pairing code: (\S+)/);
    const conn = await connect(Number(port));
    const pairing = SenderHandshake.pairing({ identity: await generateKeyPair(), psk: pairingPsk(decodePairingCode(code)) });
    const { session } = await openSession(conn, pairing);
    conn.write(session.seal({ type: "hello", features: helloFeatures({ gestures: true }), keyboardStatus: 0 }));
    let got = [];
    while (got.length === 0) got = session.feed(await conn.read());
    assert.equal(got[0].type, "hello");
    return { rx, conn, session, port: Number(port), granted: got[0].features, keys: pairing.result };
  };
  const stop = async (rx) => {
    if (rx.child.exitCode === null) rx.child.kill("SIGINT");
    await rx.exited;
    return JSON.parse(rx.lines.filter((l) => l.startsWith("{")).at(-1));
  };
  const started = [];
  try {
    // 1. --no-gestures: bit 3 not granted.
    const off = await hello(["--no-gestures"]);
    started.push(off.rx);
    assert.equal(off.granted & 8, 0, "--no-gestures grants no gestures");
    off.conn.socket.end();
    await stop(off.rx);

    // 2. Granted: 30 states 8 ms apart (3 fingers, 1 mm right each), the last flagged, then the end.
    const on = await hello(["--touchpad-sink", join(dir, "touches")]);
    started.push(on.rx);
    assert.equal(on.granted & 8, 8, "the receiver grants gestures where it can make its touchpad");
    const udp = dgram.createSocket("udp4");
    const sealer = new DatagramSealer(on.keys.datagramKey, on.keys.sessionId);
    const g = new GestureFramer();
    g.begin("swipe", 3);
    let sent = 0;
    for (let i = 1; i <= 30; i++) {
      g.update(1, 0, 1, 0);
      if (i === 30) g.end();
      const t = Number(nowMicros());
      const f = g.frame(t);
      for (const s of f.states) {
        await new Promise((r) => udp.send(sealer.seal(gesture(s), BigInt(t)), on.port, "127.0.0.1", r));
        sent++;
      }
      for (const e of f.ends) on.conn.write(on.session.seal({ type: "gestureEnd", id: e.id, senderTimeNs: BigInt(e.tUs) * 1000n }));
      await sleep(8);
    }
    assert.equal(sent, 30, "one state a frame, the last flagged");
    on.conn.write(on.session.seal({ type: "ping", token: 7n }));
    let back = [];
    while (back.length < 2) back = back.concat(on.session.feed(await on.conn.read()));
    assert.deepEqual(back, [{ type: "pong", token: 7n }, { type: "receipt", opened: 30n }], "every state opened, the end taken");
    await sleep(400);
    on.conn.write(on.session.seal({ type: "bye", reason: 0 }));
    on.conn.socket.end();
    udp.close();
    const stats = await stop(on.rx);
    assert.deepEqual(stats.drops, { short: 0, long: 0, unknown_session: 0, replay: 0, bad_tag: 0, bad_kind: 0, bad_field: 0 });
    const gs = stats.gestures;
    assert.ok(gs.touchpad === true && gs.begun === 1 && gs.refused === 0 && gs.timeouts === 0 && gs.frames > 0,
      `one gesture played onto the touchpad, none refused or timed out: ${JSON.stringify(gs)}`);
  } finally {
    for (const rx of started) if (rx.child.exitCode === null) { rx.child.kill("SIGINT"); await rx.exited; }
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * The page's link as a browser opens it: TLS to the receiver's web bridge
 * (its certificate is not checked here), the WebSocket upgrade on /ws, then
 * masked binary messages (RFC 6455 section 5.3), tag 0x00 for control-stream
 * bytes and 0x01 for one sealed datagram. `localAddress` is the phone's
 * address as the bridge sees it: any of 127.0.0.0/8 is this machine.
 */
function connectWeb(port, localAddress) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, localAddress, rejectUnauthorized: false });
    let buf = Buffer.alloc(0);
    let upgraded = false;
    const chunks = [];
    let wake = null;
    let ended = false;
    const frame = (tag, bytes) => {
      const payload = Buffer.concat([Buffer.of(tag), Buffer.from(bytes)]);
      const mask = Buffer.of(0x52, 0x4d, 0x4c, 0x4f);
      const head = payload.length < 126 ? Buffer.of(0x82, 0x80 | payload.length)
        : Buffer.of(0x82, 0x80 | 126, payload.length >> 8, payload.length & 0xff);
      return Buffer.concat([head, mask, payload.map((b, i) => b ^ mask[i & 3])]);
    };
    socket.on("secureConnect", () => socket.write(
      `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      "Sec-WebSocket-Key: cmVtb2xvIHRlc3Qga2V5IQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
    socket.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      if (!upgraded) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const status = buf.subarray(0, buf.indexOf("\r\n")).toString();
        if (!status.startsWith("HTTP/1.1 101")) return reject(new Error(`the bridge refused the upgrade: ${status}`));
        buf = buf.subarray(end + 4);
        upgraded = true;
        resolve({
          socket,
          async read(ms = 5000) {
            const deadline = Date.now() + ms;
            while (chunks.length === 0) {
              if (ended) throw new Error("the bridge closed the WebSocket");
              if (Date.now() > deadline) throw new Error("no reply through the bridge within 5 s");
              await new Promise((r) => { wake = r; setTimeout(r, 50); });
            }
            return chunks.shift();
          },
          write: (bytes) => socket.write(frame(0x00, bytes)),
          datagram: (bytes) => socket.write(frame(0x01, bytes)),
        });
      }
      // The bridge's frames: unmasked, binary, short (a control frame is at most 538 bytes).
      while (buf.length >= 2) {
        let n = buf[1] & 0x7f, at = 2;
        if (n === 126) { if (buf.length < 4) return; n = buf.readUInt16BE(2); at = 4; }
        if (buf.length < at + n) return;
        const op = buf[0] & 0x0f, payload = buf.subarray(at, at + n);
        buf = buf.subarray(at + n);
        if (op === 0x2 && payload[0] === 0x00) { chunks.push(new Uint8Array(payload.subarray(1))); wake?.(); }
        if (op === 0x8) { ended = true; wake?.(); }
      }
    });
    socket.on("close", () => { ended = true; wake?.(); });
    socket.on("error", reject);
  });
}

test("a page's session through the web bridge keeps its delay memory under the phone's network, not the loopback's", { skip, timeout: 60000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "remolo-web-"));
  const rx = startReceiver(join(dir, "config"), join(dir, "frames"), ["--web", "127.0.0.1:0"]);
  try {
    const [, webPort] = await rx.waitFor(/^phone page: https:\/\/127\.0\.0\.1:(\d+)\//);
    const [, code] = await rx.waitFor(/^pairing code: (\S+)/);
    // The phone at 127.1.2.3 (its network 127.1.2.0/24) pairs and opens a
    // session, both through the bridge, which reaches the receiver from
    // 127.0.0.1.
    const phone = await generateKeyPair();
    const pairingConn = await connectWeb(Number(webPort), "127.1.2.3");
    const pairing = SenderHandshake.pairing({ identity: phone, psk: pairingPsk(decodePairingCode(code)) });
    const paired = await openSession(pairingConn, pairing);
    pairingConn.write(paired.session.seal({ type: "bye", reason: 0 }));
    pairingConn.socket.end();

    const conn = await connectWeb(Number(webPort), "127.1.2.3");
    const hs = SenderHandshake.session({ identity: phone, receiverPublicKey: pairing.result.peer });
    const { session } = await openSession(conn, hs);
    assert.ok(session.confirmed, "the session opened through the bridge");
    const [, sessionName] = await rx.waitFor(new RegExp(`session (\\S+) from ${fingerprint(phone.publicKey)}$`));
    const sealer = new DatagramSealer(hs.result.datagramKey, hs.result.sessionId);
    for (let i = 0; i < 60; i++) {
      conn.datagram(sealer.seal(motion(512, 0), nowMicros()));
      await sleep(8);
    }
    await sleep(200);
    conn.write(session.seal({ type: "bye", reason: 0 }));
    await rx.waitFor(new RegExp(`session ${sessionName} ended`));
    conn.socket.end();
    rx.child.kill("SIGINT");
    await rx.exited;
    const stats = JSON.parse(rx.lines.filter((l) => l.startsWith("{")).at(-1));
    assert.equal(stats.total_dx, 60 * 2, "the 60 motions came through the bridge");
    const memories = readdirSync(join(dir, "config", "delay-memory"));
    const fp = fingerprint(phone.publicKey);
    assert.ok(memories.includes(`${fp}@127.1.2.0_24`), `the phone's network, not the bridge's: ${memories}`);
    assert.ok(!memories.includes(`${fp}@127.0.0.0_24`), `nothing under the loopback's network: ${memories}`);
  } finally {
    if (rx.child.exitCode === null) rx.child.kill("SIGINT");
    await rx.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});
