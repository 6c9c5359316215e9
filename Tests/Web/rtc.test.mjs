// The page's data-channel signaling helper (rtc.js): the fields of a real
// Chromium 156 offer and a Firefox-shaped one, refusals with clear errors,
// and the answer SDP line by line (Tests/RTC/run shows Chromium accepts it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { offerFields, answerSdp } from "../../Sources/RemoloWeb/page/rtc.js";

// What headless Chromium 156 offers for createDataChannel("remolo", {ordered: false, maxRetransmits: 0}).
const chromium = "v=0\r\no=- 146812543284040854 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n" +
  "a=extmap-allow-mixed\r\na=msid-semantic: WMS\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n" +
  "c=IN IP4 0.0.0.0\r\n" +
  "a=candidate:268360631 1 udp 2113937151 38ced572-738e-44e7-982b-eaa8e7afab74.local 52284 typ host generation 0 network-cost 999\r\n" +
  "a=ice-ufrag:FTrJ\r\na=ice-pwd:HiMkaHIp/xps48kmBxE+qYlg\r\na=ice-options:trickle\r\n" +
  "a=fingerprint:sha-256 EC:1A:21:49:40:19:E6:CB:6A:3E:3B:41:4E:EA:B9:8E:C2:80:17:92:55:F0:5C:A4:1A:AD:32:D8:6A:94:75:7A\r\n" +
  "a=setup:actpass\r\na=mid:0\r\na=sctp-port:5000\r\na=max-message-size:262144\r\n";
const chromiumFingerprint = "EC1A21494019E6CB6A3E3B414EEAB98EC280179255F05CA41AAD32D86A94757A";

// Firefox puts the fingerprint at session level, and may offer sha-1 beside it.
const firefox = "v=0\r\no=mozilla...THIS_IS_SDPARTA-128.5.0 6186403548734236364 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
  "a=sendrecv\r\na=fingerprint:sha-1 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD\r\n" +
  "a=fingerprint:sha-256 " + "0F:".repeat(31) + "F0\r\na=group:BUNDLE 0\r\na=ice-options:trickle\r\na=msid-semantic:WMS *\r\n" +
  "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=sendrecv\r\n" +
  "a=ice-pwd:9f1e6ca2b7f3b0a2c6c0d4e1a8b3c2d1\r\na=ice-ufrag:5c8e1f2a\r\na=mid:0\r\n" +
  "a=setup:actpass\r\na=sctp-port:5000\r\na=max-message-size:1073741823\r\n";

const hex = (b) => Array.from(b, (x) => x.toString(16).toUpperCase().padStart(2, "0")).join("");

test("1: Chromium's offer: its ICE credentials, its certificate's SHA-256, the channel's mid", () => {
  const f = offerFields(chromium);
  assert.equal(f.ufrag, "FTrJ");
  assert.equal(f.pwd, "HiMkaHIp/xps48kmBxE+qYlg");
  assert.ok(f.fingerprint instanceof Uint8Array && f.fingerprint.length === 32);
  assert.equal(hex(f.fingerprint), chromiumFingerprint);
  assert.equal(f.mid, "0");
});

test("2: Firefox's offer: the session-level sha-256 line, not the sha-1 one; LF line ends too", () => {
  const f = offerFields(firefox.replaceAll("\r\n", "\n"));
  assert.equal(f.ufrag, "5c8e1f2a");
  assert.equal(f.pwd, "9f1e6ca2b7f3b0a2c6c0d4e1a8b3c2d1");
  assert.equal(hex(f.fingerprint), "0F".repeat(31) + "F0");
  assert.equal(f.mid, "0");
});

test("3: credentials of an audio section are not taken for the channel's", () => {
  const sdp = chromium.replace("m=application", "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=ice-ufrag:AUDIOx\r\na=ice-pwd:audioAudioAudioAudioAudio\r\na=mid:a\r\nm=application");
  const f = offerFields(sdp);
  assert.equal(f.ufrag, "FTrJ");
  assert.equal(f.mid, "0");
});

test("4: refused with a clear error: no sha-256 fingerprint, no credentials, bad credentials, no channel", () => {
  assert.throws(() => offerFields(chromium.replace(/a=fingerprint:[^\r]*\r\n/, "")), /no a=fingerprint:sha-256/);
  assert.throws(() => offerFields(firefox.replace(/a=fingerprint:sha-256[^\r]*\r\n/, "")), /no a=fingerprint:sha-256/);
  assert.throws(() => offerFields(chromium.replace("EC:1A:", "EC:1A")), /not 32 hex bytes/);
  assert.throws(() => offerFields(chromium.replace(/a=ice-pwd:[^\r]*\r\n/, "")), /no a=ice-ufrag or a=ice-pwd/);
  assert.throws(() => offerFields(chromium.replace("a=ice-ufrag:FTrJ", "a=ice-ufrag:FTr")), /4\.\.256 ice-chars/);
  assert.throws(() => offerFields(chromium.replace("a=ice-ufrag:FTrJ", "a=ice-ufrag:FT-J")), /ice-chars/);
  assert.throws(() => offerFields(chromium.replace("a=ice-pwd:HiMkaHIp/xps48kmBxE+qYlg", "a=ice-pwd:short")), /22\.\.256/);
  assert.throws(() => offerFields(chromium.replace(/a=mid:0\r\n/, "")), /no data channel section/);
  assert.throws(() => offerFields(42), TypeError);
});

const answer = {
  ufrag: "AbCdEfGhIjKlMnOp", pwd: "0123456789abcdefghij+/XY",
  fingerprint: Uint8Array.from({ length: 32 }, (_, i) => i * 7), port: 8443,
  addresses: ["192.168.1.20", "fd00::1:20"], mid: "0",
};

test("5: the answer, line by line: ICE-lite, BUNDLE, passive DTLS, SCTP on 5000, a host candidate per address", () => {
  const sdp = answerSdp(answer);
  assert.ok(sdp.endsWith("\r\n") && !sdp.replaceAll("\r\n", "").includes("\n"), "CRLF line ends");
  const lines = sdp.split("\r\n").slice(0, -1);
  assert.equal(lines[0], "v=0");
  assert.match(lines[1], /^o=- \d+ 1 IN IP4 192\.168\.1\.20$/);
  assert.deepEqual(lines.slice(2), [
    "s=-", "t=0 0", "a=ice-lite", "a=group:BUNDLE 0",
    "m=application 8443 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 192.168.1.20",
    "a=ice-ufrag:AbCdEfGhIjKlMnOp", "a=ice-pwd:0123456789abcdefghij+/XY",
    "a=fingerprint:sha-256 " + hex(answer.fingerprint).match(/../g).join(":"),
    "a=setup:passive", "a=mid:0", "a=sctp-port:5000", "a=max-message-size:1024",
    "a=candidate:1 1 udp 2130706431 192.168.1.20 8443 typ host",
    "a=candidate:2 1 udp 2130706175 fd00::1:20 8443 typ host",
    "a=end-of-candidates",
  ]);
});

test("6: an IPv6 first address makes c= and o= IP6; the answer's own fields read back", () => {
  const sdp = answerSdp({ ...answer, addresses: ["::1"], mid: "data" });
  assert.match(sdp, /\r\nc=IN IP6 ::1\r\n/);
  assert.match(sdp, /^v=0\r\no=- \d+ 1 IN IP6 ::1\r\n/);
  const f = offerFields(sdp);
  assert.deepEqual([f.ufrag, f.pwd, hex(f.fingerprint), f.mid], [answer.ufrag, answer.pwd, hex(answer.fingerprint), "data"]);
});

test("7: the answer refuses what would make a broken SDP", () => {
  assert.throws(() => answerSdp({ ...answer, port: 0 }), RangeError);
  assert.throws(() => answerSdp({ ...answer, port: 70000 }), RangeError);
  assert.throws(() => answerSdp({ ...answer, addresses: [] }), /at least one address/);
  assert.throws(() => answerSdp({ ...answer, addresses: ["receiver.local"] }), /not an IP address/);
  assert.throws(() => answerSdp({ ...answer, mid: "" }), /mid/);
  assert.throws(() => answerSdp({ ...answer, ufrag: "a b" }), /ice-chars/);
  assert.throws(() => answerSdp({ ...answer, fingerprint: new Uint8Array(20) }), TypeError);
});

test("8: mangled offers (3000, seeded): a clear Error, or fields the answer takes and reads back", () => {
  let seed = 8831;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const alphabet = "aZ09+/:= -\r\nmx.";
  let accepted = 0;
  for (let i = 0; i < 3000; i++) {
    let sdp = i % 2 ? chromium : firefox;
    for (let k = 1 + rand(4); k > 0; k--) {
      const at = rand(sdp.length);
      const lines = sdp.split("\r\n");
      switch (rand(5)) {
        case 0: sdp = sdp.slice(0, at) + sdp.slice(at + 1 + rand(8)); break;                  // delete
        case 1: sdp = sdp.slice(0, at) + alphabet[rand(alphabet.length)] + sdp.slice(at); break; // insert
        case 2: sdp = sdp.slice(0, at) + alphabet[rand(alphabet.length)] + sdp.slice(at + 1); break;
        case 3: lines.splice(rand(lines.length), 1); sdp = lines.join("\r\n"); break;        // drop a line
        default: { const l = rand(lines.length); lines.splice(rand(lines.length), 0, lines[l]); sdp = lines.join("\r\n"); } // repeat one
      }
    }
    let f;
    try {
      f = offerFields(sdp);
    } catch (e) {
      assert.ok(e instanceof Error && e.message.length > 0, `not a clear error: ${e}`);
      continue;
    }
    accepted++;
    assert.match(f.ufrag, /^[A-Za-z0-9+/]{4,256}$/);
    assert.match(f.pwd, /^[A-Za-z0-9+/]{22,256}$/);
    assert.ok(f.fingerprint instanceof Uint8Array && f.fingerprint.length === 32);
    const back = offerFields(answerSdp({ ...f, port: 9, addresses: ["10.0.0.1"] }));
    assert.deepEqual([back.ufrag, back.pwd, hex(back.fingerprint), back.mid], [f.ufrag, f.pwd, hex(f.fingerprint), f.mid]);
  }
  assert.ok(accepted > 100 && accepted < 3000, `some mangled offers still carry every field: ${accepted}`);
});
