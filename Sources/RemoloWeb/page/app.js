// The trackpad page: pointer events in, one sealed datagram per animation
// frame out (design note, parts 1-3), over the receiver's WebSocket
// bridge. Pairs from the code in the URL fragment (#pair=CODE: a fragment
// never leaves the browser, RFC 3986 section 3.5), then reconnects by
// itself with the stored keys.
import { Trackpad } from "./trackpad.js";
import { Framer, defaultSettings } from "./framer.js";
import { connect, LinkClosed } from "./link.js";
import { decodePairingCode, fingerprint } from "./pairing.js";
import * as store from "./store.js";

const $ = (id) => document.getElementById(id);
const wsURL = `wss://${location.host}/ws`;
const settings = store.loadSettings(defaultSettings);
const framer = new Framer(settings);
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

// What the page sent in its current session, for people (the status line)
// and for the browser test, which checks the receiver's totals against
// exactly these.
window.remolo = { get sent() { return framer.sent; }, get state() { return state; }, get detail() { return detail; },
  get receiver() { return receiverFp; }, get settings() { return { ...settings }; },
  get touchpad() { return JSON.parse(JSON.stringify({ phase: trackpad.recognizer.phase, contacts: trackpad.recognizer.contacts, slots: [...trackpad.slots] })); } };

function show() {
  const dot = $("dot");
  dot.className = state === "connected" ? "on" : state === "connecting" || state === "pairing" ? "wait" : "off";
  let s = state;
  if (state === "connected") s = `connected · ${rate} datagrams/s${receiverFp ? ` · ${receiverFp.slice(0, 9)}` : ""}`;
  if (detail && state !== "connected") s += ` · ${detail}`;
  $("status").textContent = s;
}
setInterval(() => { rate = sentThisSecond; sentThisSecond = 0; show(); }, 1000);

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
$("gear").onclick = () => { const s = $("settings"); s.hidden = !s.hidden; $("gear").setAttribute("aria-expanded", String(!s.hidden)); };

// --- the surface
const trackpad = new Trackpad(framer, { widthPx: pad.clientWidth, heightPx: pad.clientHeight });
new ResizeObserver(() => trackpad.resize({ widthPx: pad.clientWidth, heightPx: pad.clientHeight })).observe(pad);
const micros = (ms) => ms * 1000;
let origin = pad.getBoundingClientRect(); // positions are relative to the surface
pad.addEventListener("pointerdown", (e) => {
  pad.setPointerCapture?.(e.pointerId);
  pad.classList.add("active");
  origin = pad.getBoundingClientRect();
  trackpad.down(e.pointerId, e.clientX - origin.left, e.clientY - origin.top, micros(e.timeStamp));
  e.preventDefault();
});
pad.addEventListener("pointermove", (e) => {
  // Every coalesced sample, not just the latest of the frame (part 1).
  const samples = e.getCoalescedEvents?.() ?? [];
  for (const s of samples.length ? samples : [e]) trackpad.move(e.pointerId, s.clientX - origin.left, s.clientY - origin.top, micros(s.timeStamp));
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

// --- one datagram per animation frame, stamped with the frame's time
function deliver(frameUs, visible) {
  trackpad.tick(frameUs);
  if (!link) { framer.discard(); return; }
  for (const d of framer.frame(frameUs, visible)) {
    link.send(d, frameUs);
    sentThisSecond++;
  }
}
function frame(ts) {
  deliver(micros(ts), document.visibilityState === "visible");
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") {
    // Hidden: no frames and no heartbeats; let go of any held button now.
    trackpad.cancel(micros(performance.now()));
    deliver(micros(performance.now()), false);
  } else {
    wakeLock();
    if (!link && !retryTimer && state !== "not paired") start();
  }
});
addEventListener("pagehide", () => {
  link?.close();
  // What this page sent, for whoever looks after a reload (the browser test).
  try { sessionStorage.setItem("remolo.previousSent", JSON.stringify(framer.sent)); } catch { /* storage off */ }
});

// --- wake lock while in use
let lock = null;
async function wakeLock() {
  if (!navigator.wakeLock || lock || !link || document.visibilityState !== "visible") return;
  try { lock = await navigator.wakeLock.request("screen"); lock.onrelease = () => { lock = null; }; } catch { /* not granted: the screen may sleep */ }
}

// --- the session, reconnected by itself
function scheduleRetry() {
  clearTimeout(retryTimer);
  retryTimer = setTimeout(() => { retryTimer = null; start(); }, retryMs);
  retryMs = Math.min(retryMs * 2, 4000);
}

async function start() {
  if (link) return;
  try {
    identity ??= await store.identity();
    const receiverPublicKey = await store.receiverKey();
    const code = pairingCode;
    if (!code && !receiverPublicKey) {
      state = "not paired";
      detail = "scan the QR code of `remolo receive --pair --web`, or type its code";
      $("pairform").hidden = false;
      return show();
    }
    state = code ? "pairing" : "connecting";
    detail = "";
    show();
    pairingCode = null; // one try per code: a wrong one is burned anyway
    const l = await connect({
      url: wsURL, identity, receiverPublicKey, codeBytes: code,
      onClose: (why) => {
        if (link !== l) return;
        link = null;
        lock?.release().catch(() => {});
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
    retryMs = 250;
    state = "connected";
    detail = "";
    $("pairform").hidden = true;
    wakeLock();
    show();
  } catch (e) {
    const retry = !(e instanceof LinkClosed) || e.retry;
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
  const old = link;
  link = null;
  old?.close();
  clearTimeout(retryTimer);
  retryTimer = null;
  start();
});
codeFromFragment();
start();
