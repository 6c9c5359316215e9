// The page's side of the data channel's signaling (docs/protocol.md): the
// fields of the browser's own offer the receiver needs, and the answer
// SDP (RFC 8866, JSEP RFC 9429) that the receiver's reply becomes. The
// receiver is an ICE-lite agent (RFC 8445 section 2.5) with host
// candidates only, the DTLS server (a=setup:passive, RFC 8842), and
// speaks SCTP on port 5000 (RFC 8841). No dependencies.

const FINGERPRINT_LENGTH = 32;   // SHA-256
const ICE_CHARS = /^[A-Za-z0-9+/]+$/;   // RFC 8839 section 5.4
const TOKEN = /^[!#$%&'*+\-.0-9A-Z^_`a-z{|}~]+$/;   // a mid (RFC 5888 section 4, RFC 8866 token)

function lines(sdp) {
  if (typeof sdp !== "string") throw new TypeError("an SDP is a string");
  return sdp.split(/\r?\n/).filter((l) => l.length > 0);
}

function parseFingerprint(text) {
  const parts = text.trim().split(":");
  if (parts.length !== FINGERPRINT_LENGTH || !parts.every((p) => /^[0-9A-Fa-f]{2}$/.test(p))) {
    throw new Error(`the offer's sha-256 fingerprint is not 32 hex bytes: ${text}`);
  }
  return Uint8Array.from(parts, (p) => parseInt(p, 16));
}

/**
 * The browser's ICE credentials, its DTLS certificate's SHA-256 and the
 * data channel's media id, from its local description (offer).
 * @param {string} sdp
 * @returns {{ufrag: string, pwd: string, fingerprint: Uint8Array, mid: string}}
 */
export function offerFields(sdp) {
  let ufrag = null, pwd = null, fingerprint = null, mid = null, inApplication = false, sessionLevel = true;
  for (const line of lines(sdp)) {
    if (line.startsWith("m=")) {
      sessionLevel = false;
      inApplication = /^m=application \d+ [A-Z/]*DTLS\/SCTP webrtc-datachannel/.test(line);
      continue;
    }
    if (!sessionLevel && !inApplication) continue;   // ufrag, pwd and fingerprint of an audio or video section
    const at = line.indexOf(":");
    const key = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? "" : line.slice(at + 1).trim();
    if (key === "a=ice-ufrag" && ufrag === null) ufrag = value;
    else if (key === "a=ice-pwd" && pwd === null) pwd = value;
    else if (key === "a=mid" && inApplication && mid === null) mid = value;
    else if (key === "a=fingerprint" && fingerprint === null) {
      const [hash, ...rest] = value.split(" ");
      if (hash.toLowerCase() === "sha-256") fingerprint = parseFingerprint(rest.join(" "));
    }
  }
  if (ufrag === null || pwd === null) throw new Error("the offer has no a=ice-ufrag or a=ice-pwd");
  if (!ICE_CHARS.test(ufrag) || ufrag.length < 4 || ufrag.length > 256) throw new Error(`the offer's ice-ufrag is not 4..256 ice-chars: ${ufrag}`);
  if (!ICE_CHARS.test(pwd) || pwd.length < 22 || pwd.length > 256) throw new Error("the offer's ice-pwd is not 22..256 ice-chars");
  if (fingerprint === null) throw new Error("the offer has no a=fingerprint:sha-256 line (the receiver checks the browser's certificate by its SHA-256)");
  if (mid === null) throw new Error("the offer has no data channel section (m=application ... webrtc-datachannel with a=mid)");
  if (!TOKEN.test(mid)) throw new Error(`the offer's mid is not a token: ${mid}`);
  return { ufrag, pwd, fingerprint, mid };
}

function hexFingerprint(bytes) {
  if (!(bytes instanceof Uint8Array) || bytes.length !== FINGERPRINT_LENGTH) throw new TypeError("a fingerprint is a Uint8Array(32)");
  return Array.from(bytes, (b) => b.toString(16).toUpperCase().padStart(2, "0")).join(":");
}

function family(address) {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) return "IP4";
  if (/^[0-9A-Fa-f:.]+$/.test(address) && address.includes(":")) return "IP6";
  throw new Error(`not an IP address: ${address}`);
}

/**
 * The answer SDP for the receiver's reply: its ICE credentials, its
 * certificate's SHA-256, its UDP port and the host addresses it listens on.
 * @param {{ufrag: string, pwd: string, fingerprint: Uint8Array, port: number, addresses: string[], mid: string}} a
 * @returns {string}
 */
export function answerSdp({ ufrag, pwd, fingerprint, port, addresses, mid }) {
  if (!ICE_CHARS.test(ufrag ?? "") || !ICE_CHARS.test(pwd ?? "")) throw new Error("the answer's ufrag and pwd must be ice-chars");
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`not a UDP port: ${port}`);
  if (!Array.isArray(addresses) || addresses.length === 0) throw new Error("the answer needs at least one address");
  if (typeof mid !== "string" || !TOKEN.test(mid)) throw new Error("the answer needs the offer's mid (a token)");
  const families = addresses.map(family);
  // RFC 8445 section 5.1.2.1: type preference 126 for host candidates;
  // the first address the most preferred.
  const candidates = addresses.map((address, i) => {
    const priority = 126 * 2 ** 24 + (65535 - i) * 2 ** 8 + 255;
    return `a=candidate:${i + 1} 1 udp ${priority} ${address} ${port} typ host`;
  });
  return [
    "v=0",
    `o=- ${Date.now()} 1 IN ${families[0]} ${addresses[0]}`,
    "s=-",
    "t=0 0",
    "a=ice-lite",                                   // RFC 8839 section 5.3
    `a=group:BUNDLE ${mid}`,                         // RFC 9143
    `m=application ${port} UDP/DTLS/SCTP webrtc-datachannel`,   // RFC 8841
    `c=IN ${families[0]} ${addresses[0]}`,
    `a=ice-ufrag:${ufrag}`,
    `a=ice-pwd:${pwd}`,
    `a=fingerprint:sha-256 ${hexFingerprint(fingerprint)}`,     // RFC 8122
    "a=setup:passive",                              // the receiver is the DTLS server
    `a=mid:${mid}`,
    "a=sctp-port:5000",
    "a=max-message-size:1024",
    ...candidates,
    "a=end-of-candidates",
    "",
  ].join("\r\n");
}
