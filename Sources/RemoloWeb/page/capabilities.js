// What this browser gives the page, in plain words, and the one-time tips
// that follow from it (docs/phone-engines.md). No DOM here: app.js gathers
// the facts from live detection and passes them in, so the wording and the
// decisions run under node too.

/**
 * iOS or iPadOS, where every browser is WebKit and there is no Fullscreen
 * API on the iPhone. `navigator.standalone` (a boolean) exists only in
 * Apple's WebKit on those systems (MDN, Navigator.standalone); iPadOS
 * presents itself as a Mac ("Macintosh" in its user agent) but has touch
 * points, which no Mac has.
 */
export function appleMobile({ ua = "", standaloneProp, maxTouchPoints = 0 } = {}) {
  if (/\b(iPhone|iPad|iPod)\b/.test(ua)) return true;
  if (/\bMacintosh\b/.test(ua) && maxTouchPoints > 1) return true;
  return typeof standaloneProp === "boolean" && maxTouchPoints > 0;
}

/** The engine and browser, from the user agent: for display only, never to decide anything. */
export function engineName({ ua = "", ios = false } = {}) {
  if (ios) {
    const v = /OS (\d+)[_.](\d+)/.exec(ua);
    const os = /\biPad\b|Macintosh/.test(ua) ? "iPadOS" : "iOS";
    // Chrome, Firefox and Edge there are WebKit too (App Store Review
    // Guideline 2.5.6; other engines are allowed only in the EU, from iOS
    // 17.4), so the system's version is what says what the page gets.
    return `WebKit (${v ? `${os} ${v[1]}.${v[2]}` : os})`;
  }
  let m;
  if ((m = /Firefox\/(\d+)/.exec(ua))) return `Gecko (Firefox ${m[1]})`;
  if ((m = /(?:Chrome|Chromium)\/(\d+)/.exec(ua))) return `Blink (Chrome ${m[1]})`;
  if (/AppleWebKit\//.test(ua)) return "WebKit";
  return "unknown engine";
}

const FULL_SCREEN = {
  standalone: "Home Screen app (standalone)",
  api: "Fullscreen API (full screen from the first touch)",
  none: "neither: on iPhone, Share → Add to Home Screen",
};

const AUTO_LOCK = { ios: "raise Auto-Lock (Settings → Display & Brightness → Auto-Lock)",
  other: "raise the screen timeout (Settings → Display → Screen timeout)" };

/** How the page can take the whole screen: "standalone", "api" or "none". */
export function fullScreenMode({ standalone, fullscreenApi }) {
  return standalone ? "standalone" : fullscreenApi ? "api" : "none";
}

/**
 * The diagnostics view: from the facts app.js detects, the lines to show
 * (each {label, value}) and the facts themselves (window.remolo.diagnostics).
 *
 * facts: coalesced (PointerEvent.getCoalescedEvents exists), frameHz
 * (FrameClock.hz, 0 while measuring), standalone, fullscreenApi, wakeLock
 * ("unavailable", "idle", "held", "released", "refused"), identity ("key",
 * "wrapped", "none", or undefined while loading), secureContext, ua, ios,
 * link (the last connection problem, classifyLinkFailure's, or null),
 * transport (the session's datagram path, link.js Link.transport, or null).
 */
export function diagnostics(facts) {
  const f = { ...facts };
  const fullScreen = fullScreenMode(f);
  const engine = engineName(f);
  const lines = [];
  const line = (label, value) => lines.push({ label, value });

  line("Samples", f.coalesced ? "coalesced: every finger position between frames"
    : "no coalesced events: every move is a sample");
  line("Frames", !(f.frameHz > 0) ? "measuring…"
    : `${f.frameHz} Hz frames${f.frameHz <= 35 ? " (30 Hz: Low Power Mode?)" : ""}`);
  line("Full screen", FULL_SCREEN[fullScreen]);
  line("Wake lock", {
    held: "held: the screen stays on while connected",
    released: "released (taken again when connected and visible)",
    idle: "available, taken once connected",
    refused: `refused by the browser: the screen may sleep — ${f.ios ? AUTO_LOCK.ios : AUTO_LOCK.other}`,
    unavailable: `not available: the screen may sleep — ${f.ios ? AUTO_LOCK.ios : AUTO_LOCK.other}`,
  }[f.wakeLock] ?? "unknown");
  line("Identity", {
    key: "stored as a key (a non-extractable CryptoKey)",
    wrapped: "stored wrapped (this engine does not keep an X25519 CryptoKey)",
    none: "not kept: this phone must pair again after every reload (a private window?)",
  }[f.identity] ?? "loading…");
  line("Secure context", f.secureContext ? "yes (https): WebCrypto available"
    : "no: WebCrypto is missing; open the page's https:// address");
  line("Engine", engine);
  if (f.transport) line("Transport", transportLine(f.transport));
  if (f.link) line("Connection", f.link.message);
  return {
    coalesced: !!f.coalesced, frameHz: f.frameHz || 0, fullScreen, standalone: !!f.standalone,
    fullscreenApi: !!f.fullscreenApi, wakeLock: f.wakeLock, identity: f.identity ?? null,
    secureContext: !!f.secureContext, ios: !!f.ios, engine, link: f.link?.kind ?? null,
    transport: f.transport ?? null, lines,
  };
}

const TRANSPORT_WHY = {
  opened: "", starting: "opening the data channel…", noPeerConnection: "this browser has no WebRTC (RTCPeerConnection)",
  notGranted: "the receiver offers no data channel (an older receiver, or its web page without one)",
  off: "the data channel is off in the settings", baseOnly: "the receiver speaks only the base protocol (older version)",
  refused: "the receiver refused the data channel", timedOut: "the data channel did not open (UDP blocked by a firewall?)",
  stalled: "the data channel stopped delivering", closed: "the data channel closed",
};

/**
 * The transport line: where the datagrams go (link.js Link.transport:
 * {path, reason, problem}) and why, in words.
 */
export function transportLine({ path, reason, problem } = {}) {
  if (path === "datachannel") return "UDP data channel (unordered, no resends): a lost datagram holds nothing back";
  const why = problem || TRANSPORT_WHY[reason] || reason || "";
  return `WebSocket (TCP: a lost packet holds back the ones behind it)${why ? ` — ${why}` : ""}`;
}

export const FULL_SCREEN_TIP = "For a full-screen trackpad: Share → Add to Home Screen, then open Remolo from the Home Screen.";

/**
 * The iPhone's full-screen tip, or "": only in Apple's WebKit (where the
 * Home Screen app is the only way to lose Safari's bars: the iPhone has
 * no Fullscreen API, WebKit gives it to the iPad only), when not already
 * a Home Screen app, and until the tip was dismissed once.
 */
export function fullScreenTip({ ios, standalone, fullscreenApi, dismissed }) {
  return ios && !standalone && !fullscreenApi && !dismissed ? FULL_SCREEN_TIP : "";
}

/**
 * The wake lock tip, or "": when the browser has no Screen Wake Lock
 * (Safari before 16.4; a Home Screen app before iOS 18.4; Firefox before
 * 126) or refused it (MDN, WakeLock.request: NotAllowedError, e.g. under
 * a power saving mode), until dismissed once.
 */
export function wakeLockTip({ wakeLock, ios, dismissed }) {
  if (dismissed) return "";
  const what = ios ? AUTO_LOCK.ios : AUTO_LOCK.other;
  if (wakeLock === "unavailable") return `This browser cannot keep the screen on: it may sleep while you use the trackpad. To prevent that, ${what}.`;
  if (wakeLock === "refused") return `The browser refused to keep the screen on: it may sleep while you use the trackpad. To prevent that, ${what}.`;
  return "";
}
