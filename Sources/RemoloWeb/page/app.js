// The trackpad page: pointer events in, one sealed datagram per animation
// frame out (design note, parts 1-3), over the receiver's WebSocket
// bridge. Pairs from the code in the URL fragment (#pair=CODE: a fragment
// never leaves the browser, RFC 3986 section 3.5), then reconnects by
// itself with the stored keys.
import { Trackpad, samplesOf } from "./trackpad.js";
import { Framer, FrameClock, defaultSettings, sendFrame, sendGestures } from "./framer.js";
import { GestureFramer } from "./gestures.js";
import { connect, LinkClosed, BASE_ONLY_MESSAGE, probeOrigin } from "./link.js";
import { appleMobile, diagnostics, fullScreenTip, wakeLockTip } from "./capabilities.js";
import { KeyboardSender, RefusalTally, keyboardStatusMessage, MODIFIER_CODES } from "./keyboard.js";
import { SoftKeyboard, bindKeyRow } from "./typing.js";
import { decodePairingCode, fingerprint } from "./pairing.js";
import * as store from "./store.js";

const $ = (id) => document.getElementById(id);
const wsURL = `wss://${location.host}/ws`;
const settings = store.loadSettings(defaultSettings);
const framer = new Framer(settings);
// Swipes and pinches as gesture states (gestures.js), where the receiver
// granted them and the setting is on (docs/gestures.md); elsewhere three
// fingers do nothing and two always scroll.
const gestures = new GestureFramer();
const gesturesWanted = () => settings.gestures !== false;
const gesturesOn = () => !!link?.gesturesGranted && gesturesWanted();
const pad = $("pad");
let link = null;
let state = "starting";
let detail = "";
let receiverFp = "";
let retryMs = 250;
let retryTimer = null;
let pairingCode = null;
let identity = null;
let sentThisSecond = 0, rate = 0;
let baseOnly = false; // the receiver answered hello with bye 2: no hello again in this run
let typed = [];       // this session's key and text messages, as sent
let lastFailure = null; // the last connection problem ({kind, message}: link.js classifyLinkFailure)
let identityState;    // "key", "wrapped" or "none" (store.js), undefined while loading
let wakeState = navigator.wakeLock ? "idle" : "unavailable";

// --- what this browser gives the page (capabilities.js, docs/phone-engines.md)
const ios = appleMobile({ ua: navigator.userAgent, standaloneProp: navigator.standalone, maxTouchPoints: navigator.maxTouchPoints });
// A Home Screen app: display-mode from the manifest (Android, iOS 16.4+),
// or Apple's own navigator.standalone (MDN, Navigator.standalone).
const standalone = () => navigator.standalone === true
  || ["standalone", "fullscreen"].some((m) => window.matchMedia?.(`(display-mode: ${m})`).matches);
// WebKit gives requestFullscreen to the iPad only; fullscreenEnabled is
// false where a page may not use it (MDN, Document.fullscreenEnabled).
const fullscreenApi = () => typeof document.documentElement.requestFullscreen === "function" && document.fullscreenEnabled !== false;
const facts = () => ({
  coalesced: typeof PointerEvent !== "undefined" && "getCoalescedEvents" in PointerEvent.prototype,
  frameHz: clock.hz, standalone: standalone(), fullscreenApi: fullscreenApi(), wakeLock: wakeState,
  identity: identityState, secureContext: window.isSecureContext, ua: navigator.userAgent, ios, link: lastFailure,
  transport: link?.transport ?? null,
});

// What the page sent in its current session, for people (the status line)
// and for the browser test, which checks the receiver's totals against
// exactly these.
window.remolo = { get sent() { return framer.sent; }, get state() { return state; }, get detail() { return detail; },
  get receiver() { return receiverFp; }, get settings() { return { ...settings }; },
  get touchpad() { return JSON.parse(JSON.stringify({ phase: trackpad.recognizer.phase, contacts: trackpad.recognizer.contacts, slots: [...trackpad.slots] })); },
  get typed() { return typed.slice(); }, get identityStored() { return identity?.stored; },
  get frameHz() { return clock.hz; }, get coalesced() { return facts().coalesced; }, get note() { return $("note").hidden ? "" : $("note").textContent; },
  get diagnostics() { return diagnostics(facts()); }, get transport() { return link?.transport ?? null; }, get tips() { return [...$("tips").children].map((t) => t.id.slice(4)); },
  get keyboard() { return { ...(link?.keyboard ?? {}), open: !$("keys").hidden, focused: soft.focused, field: $("typing").value, held: [...keys.held], modifiers: [...keys.modifiers.pressed] }; } };

function show() {
  const dot = $("dot");
  dot.className = state === "connected" ? "on" : state === "connecting" || state === "pairing" ? "wait" : "off";
  let s = state;
  if (state === "connected") s = `connected · ${rate} datagrams/s${receiverFp ? ` · ${receiverFp.slice(0, 9)}` : ""}`;
  if (detail && state !== "connected") s += ` · ${detail}`;
  $("status").textContent = s;
}
setInterval(() => { rate = sentThisSecond; sentThisSecond = 0; show(); showDiagnostics(); }, 1000);

/** The diagnostics view under the settings, refreshed while it is open. */
function showDiagnostics() {
  if ($("settings").hidden || !$("diag").open) return;
  const dl = $("diaglines");
  dl.replaceChildren(...diagnostics(facts()).lines.flatMap(({ label, value }) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = label;
    dd.textContent = value;
    return [dt, dd];
  }));
}
$("diag").addEventListener("toggle", showDiagnostics);

/** A tip shown until dismissed, then never again on this phone. */
function tip(id, text) {
  if (!text || $(`tip-${id}`)) return;
  const p = document.createElement("p"), span = document.createElement("span"), ok = document.createElement("button");
  p.className = "tip";
  p.id = `tip-${id}`;
  span.textContent = text;
  ok.textContent = "OK";
  ok.setAttribute("aria-label", "Dismiss");
  ok.onclick = () => { p.remove(); store.dismissTip(id); };
  p.append(span, ok);
  $("tips").append(p);
}
// The iPhone has no Fullscreen API: the Home Screen app is its full screen.
tip("fullscreen", fullScreenTip({ ios, standalone: standalone(), fullscreenApi: fullscreenApi(), dismissed: store.tipDismissed("fullscreen") }));

// --- settings, kept on the phone
function bindRange(id, key, out) {
  const el = $(id);
  el.value = settings[key];
  $(out).textContent = Number(settings[key]).toFixed(2);
  el.oninput = () => { settings[key] = Number(el.value); framer.settings[key] = settings[key]; $(out).textContent = settings[key].toFixed(2); store.saveSettings(settings); };
}
bindRange("speed", "pointerSpeed", "speedv");
bindRange("accel", "acceleration", "accelv");
bindRange("scrollspeed", "scrollSpeed", "scrollv");
$("natural").checked = settings.naturalScrolling;
$("natural").onchange = () => { settings.naturalScrolling = framer.settings.naturalScrolling = $("natural").checked; store.saveSettings(settings); };
// The data channel (datapath.js): on unless turned off here; a change
// takes effect at the next session.
$("datachannel").checked = settings.dataChannel !== false;
$("datachannel").onchange = () => { settings.dataChannel = $("datachannel").checked; store.saveSettings(settings); };
// Gestures: on unless turned off here. Off at once (an open gesture ends
// with the next frame); back on at once where this session was granted
// them, else asked for at the next session.
$("gestures").checked = gesturesWanted();
$("gestures").onchange = () => {
  settings.gestures = $("gestures").checked;
  store.saveSettings(settings);
  trackpad.useGestures(gestures, gesturesOn());
};
$("gear").onclick = () => { const s = $("settings"); s.hidden = !s.hidden; $("gear").setAttribute("aria-expanded", String(!s.hidden)); showDiagnostics(); };

// --- the surface
const trackpad = new Trackpad(framer, { widthPx: pad.clientWidth, heightPx: pad.clientHeight });
trackpad.useGestures(gestures, false);
new ResizeObserver(() => trackpad.resize({ widthPx: pad.clientWidth, heightPx: pad.clientHeight })).observe(pad);
const micros = (ms) => ms * 1000;
let origin = pad.getBoundingClientRect(); // positions are relative to the surface
pad.addEventListener("pointerdown", (e) => {
  soft.forgetContext(); // a click may move the desktop's caret
  pad.setPointerCapture?.(e.pointerId);
  pad.classList.add("active");
  origin = pad.getBoundingClientRect();
  trackpad.down(e.pointerId, e.clientX - origin.left, e.clientY - origin.top, micros(e.timeStamp));
  // Not for a touch: Firefox then drops the pointer events of every other
  // finger that changed in the same touch event (Android reports two
  // fingers in one), so a two-finger flick would be a one-finger drag.
  // The touch's defaults (mouse events, a click, focus) go with touchstart.
  if (e.pointerType !== "touch") e.preventDefault();
});
pad.addEventListener("touchstart", (e) => e.preventDefault(), { passive: false });
pad.addEventListener("pointermove", (e) => {
  // Every coalesced sample, not just the latest of the frame (part 1);
  // without them (older Safari), every pointermove is one.
  for (const s of samplesOf(e)) trackpad.move(e.pointerId, s.clientX - origin.left, s.clientY - origin.top, micros(s.timeStamp));
  e.preventDefault();
});
const lift = (e) => {
  trackpad.up(e.pointerId, micros(e.timeStamp));
  if (!trackpad.touching) pad.classList.remove("active");
};
pad.addEventListener("pointerup", lift);
// Full screen from the first lift (a touch's pointerup is a user
// activation): the browser's bars go, the surface takes the screen. Where
// the Fullscreen API is missing (iPhone Safari) the page is as large as
// the browser allows.
pad.addEventListener("pointerup", () => {
  if (!document.fullscreenElement && document.documentElement.requestFullscreen) {
    document.documentElement.requestFullscreen({ navigationUI: "hide" }).catch(() => {});
  }
}, { once: true });
pad.addEventListener("pointercancel", lift);
pad.addEventListener("contextmenu", (e) => e.preventDefault());

// --- typing: the phone's keyboard and the special-keys row (keyboard.js, typing.js)
const keys = new KeyboardSender({
  key(code, down, tMs) { if (link?.key(code, down, tMs)) typed.push({ type: "key", code, down }); },
  text(text, tMs) { if (link?.text(text, tMs)) typed.push({ type: "text", text }); },
});
const soft = new SoftKeyboard($("typing"), keys);
const row = bindKeyRow($("keys"), keys, { onKey: () => { soft.forgetContext(); showModifiers(); } });
function showModifiers() {
  for (const code of MODIFIER_CODES) {
    const b = $("keys").querySelector(`[data-mod="${code}"]`);
    const st = keys.modifiers.state(code);
    b.classList.toggle("latched", st === "latched");
    b.classList.toggle("locked", st === "locked");
  }
}
// Sticky modifiers go off after the key or text they applied to.
$("typing").addEventListener("input", showModifiers);

let noteTimer = null;
const tally = new RefusalTally();
function note(text, ms) {
  clearTimeout(noteTimer);
  $("note").textContent = text;
  $("note").hidden = !text;
  if (text) noteTimer = setTimeout(() => { $("note").hidden = true; tally.clear(); }, ms);
}

/** Why typing is not available now, or "" when it is. */
function keyboardUnavailable() {
  if (!link) return "not connected to the receiver";
  if (baseOnly) return BASE_ONLY_MESSAGE;
  return keyboardStatusMessage(link.keyboard.status, identity ? fingerprint(identity.publicKey) : "");
}
function showKeyboardButton() {
  const why = keyboardUnavailable();
  $("kbd").classList.toggle("unavailable", why !== "");
  $("kbd").title = why || "Keyboard";
}

function closeKeyboard() {
  keys.releaseAll(performance.now());
  soft.close();
  $("keys").hidden = true;
  $("kbd").setAttribute("aria-expanded", "false");
  showModifiers();
}
// The button must not take the focus from the field (that would close the
// phone's keyboard before the click could).
$("kbd").addEventListener("pointerdown", (e) => e.preventDefault());
$("kbd").addEventListener("mousedown", (e) => e.preventDefault());
// A click (a user activation): iOS opens its keyboard only for a focus() made in one.
$("kbd").onclick = () => {
  const why = keyboardUnavailable();
  if (why) { closeKeyboard(); note(why, 12000); return; }
  if (!$("keys").hidden && soft.focused) { closeKeyboard(); return; }
  note("", 0);
  $("keys").hidden = false;
  $("kbd").setAttribute("aria-expanded", "true");
  soft.open();
};

function refused(m) {
  tally.add(m.reason, m.count);
  note(tally.text, 3000);
}

// The page's layout follows the visual viewport, which the phone's
// keyboard shrinks (the layout viewport stays: Chrome's default
// interactive-widget=resizes-visual, and iOS Safari).
function fitViewport() {
  const vv = window.visualViewport;
  if (!vv) return;
  document.documentElement.style.setProperty("--vv-height", `${vv.height}px`);
  document.documentElement.style.setProperty("--vv-top", `${vv.offsetTop}px`);
}
window.visualViewport?.addEventListener("resize", fitViewport);
window.visualViewport?.addEventListener("scroll", fitViewport);
fitViewport();

// --- one datagram per animation frame, stamped with the frame's time
// (framer.js sendFrame: gesture states, then the framer's datagrams)
function deliver(frameUs, visible) {
  trackpad.tick(frameUs);
  if (!link) { framer.discard(); gestures.discard(); return; }
  sentThisSecond += sendFrame({ framer, gestures, link, frameUs, visible, periodUs: clock.periodUs });
}

/**
 * Gestures off until a session grants them again: an open gesture ends
 * now, its last state and end sent while the link lasts (before a bye),
 * and nothing of it is left for the next session.
 */
function stopGestures(tUs) {
  trackpad.useGestures(gestures, false);
  if (link) sendGestures({ framer, gestures, link, frameUs: tUs });
  gestures.discard();
}
const clock = new FrameClock();
function frame(ts) {
  clock.tick(micros(ts));
  deliver(micros(ts), document.visibilityState === "visible");
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") {
    // Hidden: no frames and no heartbeats; let go of any held button and key now.
    keys.releaseAll(performance.now());
    showModifiers();
    trackpad.cancel(micros(performance.now()));
    deliver(micros(performance.now()), false);
  } else {
    wakeLock();
    if (!link && !retryTimer && state !== "not paired") start();
  }
});
addEventListener("pagehide", () => {
  keys.releaseAll(performance.now());
  stopGestures(micros(performance.now()));
  link?.close();
  // What this page sent, for whoever looks after a reload (the browser test).
  try {
    sessionStorage.setItem("remolo.previousSent", JSON.stringify(framer.sent));
    sessionStorage.setItem("remolo.previousTyped", JSON.stringify(typed));
  } catch { /* storage off */ }
});

// --- wake lock while in use; taken again on visibilitychange, since the
// browser releases it whenever the page hides (W3C Screen Wake Lock,
// "release a wake lock" on visibility change).
let lock = null, locking = false;
async function wakeLock() {
  if (lock || locking || !link || document.visibilityState !== "visible") return;
  if (!navigator.wakeLock) return tip("wakelock", wakeLockTip({ wakeLock: wakeState, ios, dismissed: store.tipDismissed("wakelock") }));
  locking = true;
  try {
    lock = await navigator.wakeLock.request("screen");
    wakeState = "held";
    lock.onrelease = () => { lock = null; wakeState = "released"; };
  } catch {
    // NotAllowedError (MDN, WakeLock.request): a policy, a power saving
    // mode, or the page hid meanwhile (that one is no refusal).
    if (document.visibilityState === "visible") {
      wakeState = "refused";
      tip("wakelock", wakeLockTip({ wakeLock: wakeState, ios, dismissed: store.tipDismissed("wakelock") }));
    }
  } finally {
    locking = false;
  }
}

// --- the session, reconnected by itself
let toldRefused = false;
// Back online: try now rather than at the end of the back-off.
addEventListener("online", () => {
  if (link || !retryTimer) return;
  clearTimeout(retryTimer);
  retryTimer = null;
  retryMs = 250;
  start();
});
addEventListener("offline", show);

function scheduleRetry() {
  clearTimeout(retryTimer);
  retryTimer = setTimeout(() => { retryTimer = null; start(); }, retryMs);
  retryMs = Math.min(retryMs * 2, 4000);
}

async function start() {
  if (link) return;
  try {
    if (!identity) {
      try { identity = await store.identity(); } catch (e) { identityState = "none"; throw e; }
      identityState = identity.stored;
    }
    const receiverPublicKey = await store.receiverKey();
    const code = pairingCode;
    if (!code && !receiverPublicKey) {
      state = "not paired";
      // An iPhone's Home Screen app keeps its own storage, apart from
      // Safari's (so it starts unpaired), and a scanned QR code opens Safari.
      detail = ios && standalone() ? "type the pairing code that `remolo receive --pair --web` prints (this Home Screen app keeps its own keys)"
        : "scan the QR code of `remolo receive --pair --web`, or type its code";
      $("pairform").hidden = false;
      return show();
    }
    state = code ? "pairing" : "connecting";
    detail = "";
    show();
    pairingCode = null; // one try per code: a wrong one is burned anyway
    const l = await connect({
      url: wsURL, identity, receiverPublicKey, codeBytes: code, hello: !baseOnly,
      dataChannel: settings.dataChannel !== false && typeof RTCPeerConnection === "function",
      gestures: gesturesWanted(),
      noChannel: settings.dataChannel === false ? "off" : "noPeerConnection",
      onPath: () => showDiagnostics(),
      // Why a WebSocket failed before opening: the page's origin asked once
      // (link.js classifyLinkFailure).
      probe: () => probeOrigin("/manifest.webmanifest"), online: () => navigator.onLine, port: location.port || "443",
      onMessage: (m) => { if (m.type === "refused") refused(m); },
      onClose: (why) => {
        if (link !== l) return;
        link = null;
        // The receiver lifted this session's fingers; the next session asks again.
        stopGestures(micros(performance.now()));
        // The receiver released every key of the session.
        keys.forget();
        row.forget();
        showModifiers();
        showKeyboardButton();
        lock?.release().catch(() => {});
        lastFailure = { kind: "closed", message: why };
        state = "reconnecting";
        detail = why;
        show();
        scheduleRetry();
      },
    });
    if (code) await store.setReceiverKey(l.receiverPublicKey); // confirmed: the pong proved the code
    link = l;
    receiverFp = fingerprint(l.receiverPublicKey);
    framer.discard();
    framer.resetSent();
    gestures.discard();
    trackpad.useGestures(gestures, gesturesOn());
    keys.forget();
    typed = [];
    showKeyboardButton();
    retryMs = 250;
    lastFailure = null;
    state = "connected";
    detail = "";
    $("pairform").hidden = true;
    wakeLock();
    show();
  } catch (e) {
    // The pong confirmed a pairing even if the session ended after it.
    if (e?.paired) await store.setReceiverKey(e.paired).catch(() => {});
    if (e?.reason === "baseOnly") {
      baseOnly = true;
      detail = e.message;
      note(e.message, 8000);
      show();
      return start(); // at once: the receiver is there, only older
    }
    const retry = !(e instanceof LinkClosed) || e.retry;
    lastFailure = { kind: e?.reason ?? "error", message: e?.message ?? String(e) };
    // The refused WebSocket needs more words than the status line has,
    // once per load.
    if (e?.reason === "websocketRefused" && !toldRefused) { toldRefused = true; note(e.message, 20000); }
    state = retry ? "reconnecting" : "refused";
    detail = e.message;
    if (!retry) $("pairform").hidden = false;
    show();
    if (retry) scheduleRetry();
  }
}

$("pairform").onsubmit = (e) => {
  e.preventDefault();
  try {
    pairingCode = decodePairingCode($("code").value);
  } catch (err) {
    detail = err.message;
    return show();
  }
  start();
};

function codeFromFragment() {
  const m = /(?:^#|&)pair=([^&]+)/.exec(location.hash);
  if (!m) return false;
  try { pairingCode = decodePairingCode(decodeURIComponent(m[1])); } catch (e) { detail = e.message; }
  // Out of the address bar and history: a reload must not try a used code.
  history.replaceState(null, "", location.pathname + location.search);
  return pairingCode !== null;
}
// A new code scanned while the page is open (same page, new fragment):
// pair again, replacing the session.
addEventListener("hashchange", () => {
  if (!codeFromFragment()) return;
  stopGestures(micros(performance.now()));
  const old = link;
  link = null;
  old?.close();
  clearTimeout(retryTimer);
  retryTimer = null;
  start();
});
codeFromFragment();
start();
