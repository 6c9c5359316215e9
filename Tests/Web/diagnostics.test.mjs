// What the page says about the browser it runs in (capabilities.js) and
// the one-time tips it shows. The facts are passed in: each case is one
// browser as the page would find it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { appleMobile, engineName, diagnostics, fullScreenTip, wakeLockTip, FULL_SCREEN_TIP }
  from "../../Sources/RemoloWeb/page/capabilities.js";

const UA = {
  iphone: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.2 Mobile/15E148 Safari/604.1",
  iphoneChrome: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
  ipad: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15",
  mac: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15",
  android: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36",
  firefox: "Mozilla/5.0 (Android 14; Mobile; rv:153.0) Gecko/153.0 Firefox/153.0",
  webkitgtk: "Mozilla/5.0 (X11; Ubuntu; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
};

test("iOS and iPadOS WebKit are told apart from the rest", () => {
  const cases = [ // [case, facts, apple mobile]
    [1, { ua: UA.iphone, standaloneProp: false, maxTouchPoints: 5 }, true],
    [2, { ua: UA.iphoneChrome, standaloneProp: false, maxTouchPoints: 5 }, true],
    [3, { ua: UA.ipad, standaloneProp: false, maxTouchPoints: 5 }, true],   // iPadOS asks for the desktop site
    [4, { ua: UA.mac, standaloneProp: undefined, maxTouchPoints: 0 }, false], // a Mac: no touch points
    [5, { ua: UA.android, maxTouchPoints: 5 }, false],
    [6, { ua: UA.firefox, maxTouchPoints: 5 }, false],
    [7, { ua: UA.webkitgtk, maxTouchPoints: 0 }, false],
    [8, { ua: "", standaloneProp: true, maxTouchPoints: 5 }, true],        // a Home Screen app with an odd UA
  ];
  for (const [n, facts, want] of cases) assert.equal(appleMobile(facts), want, `case ${n}`);
});

test("the engine, for display", () => {
  const cases = [
    [1, { ua: UA.iphone, ios: true }, "WebKit (iOS 18.2)"],
    [2, { ua: UA.iphoneChrome, ios: true }, "WebKit (iOS 17.5)"],
    [3, { ua: UA.ipad, ios: true }, "WebKit (iPadOS)"],  // the desktop UA has no iOS version
    [4, { ua: UA.android }, "Blink (Chrome 156)"],
    [5, { ua: UA.firefox }, "Gecko (Firefox 153)"],
    [6, { ua: UA.webkitgtk }, "WebKit"],
    [7, { ua: "curl/8" }, "unknown engine"],
  ];
  for (const [n, facts, want] of cases) assert.equal(engineName(facts), want, `case ${n}`);
});

const chrome = { coalesced: true, frameHz: 60, standalone: false, fullscreenApi: true, wakeLock: "held",
  identity: "key", secureContext: true, ua: UA.android, ios: false, link: null };
const iphone = { coalesced: false, frameHz: 60, standalone: false, fullscreenApi: false, wakeLock: "idle",
  identity: "key", secureContext: true, ua: UA.iphone, ios: true, link: null };
const value = (d, label) => d.lines.find((l) => l.label === label)?.value;

test("the diagnostics view's lines, from each browser's facts", () => {
  const cases = [ // [case, facts, label, what the line must contain]
    [1, chrome, "Samples", "coalesced"],
    [2, { ...chrome, coalesced: false }, "Samples", "every move is a sample"],
    [3, chrome, "Frames", "60 Hz frames"],
    [4, { ...chrome, frameHz: 120 }, "Frames", "120 Hz frames"],
    [5, { ...iphone, frameHz: 30 }, "Frames", "30 Hz frames (30 Hz: Low Power Mode?)"],
    [6, { ...chrome, frameHz: 0 }, "Frames", "measuring"],
    [7, chrome, "Full screen", "Fullscreen API"],
    [8, { ...iphone, standalone: true }, "Full screen", "Home Screen app (standalone)"],
    [9, iphone, "Full screen", "neither: on iPhone, Share → Add to Home Screen"],
    [10, chrome, "Wake lock", "held"],
    [11, { ...chrome, wakeLock: "released" }, "Wake lock", "released"],
    [12, { ...iphone, wakeLock: "unavailable" }, "Wake lock", "not available: the screen may sleep — raise Auto-Lock"],
    [13, { ...chrome, wakeLock: "refused" }, "Wake lock", "refused"],
    [14, chrome, "Identity", "stored as a key"],
    [15, { ...chrome, identity: "wrapped" }, "Identity", "stored wrapped"],
    [16, { ...chrome, identity: "none" }, "Identity", "not kept"],
    [17, chrome, "Secure context", "yes"],
    [18, { ...chrome, secureContext: false }, "Secure context", "no"],
    [19, iphone, "Engine", "WebKit (iOS 18.2)"],
    [20, { ...chrome, link: { kind: "unreachable", message: "cannot reach the receiver" } }, "Connection", "cannot reach"],
  ];
  for (const [n, facts, label, want] of cases) {
    const got = value(diagnostics(facts), label);
    assert.ok(got?.includes(want), `case ${n}: ${label}: ${JSON.stringify(got)} should contain ${JSON.stringify(want)}`);
  }
  assert.equal(value(diagnostics(chrome), "Connection"), undefined, "no connection line without a problem");
  const d = diagnostics({ ...iphone, frameHz: 30 });
  assert.deepEqual({ coalesced: d.coalesced, frameHz: d.frameHz, fullScreen: d.fullScreen, wakeLock: d.wakeLock, identity: d.identity, ios: d.ios },
    { coalesced: false, frameHz: 30, fullScreen: "none", wakeLock: "idle", identity: "key", ios: true }, "the facts, for tests");
});

test("the iPhone's full-screen tip: Apple's WebKit, not a Home Screen app, no Fullscreen API, not dismissed", () => {
  const cases = [ // [case, facts, shown]
    [1, { ios: true, standalone: false, fullscreenApi: false, dismissed: false }, true],   // iPhone Safari
    [2, { ios: true, standalone: true, fullscreenApi: false, dismissed: false }, false],   // opened from the Home Screen
    [3, { ios: true, standalone: false, fullscreenApi: true, dismissed: false }, false],   // an iPad: has the API
    [4, { ios: true, standalone: false, fullscreenApi: false, dismissed: true }, false],   // dismissed once
    [5, { ios: false, standalone: false, fullscreenApi: true, dismissed: false }, false],  // Android
    [6, { ios: false, standalone: false, fullscreenApi: false, dismissed: false }, false], // not an iPhone: the advice would be wrong
  ];
  for (const [n, facts, shown] of cases) assert.equal(fullScreenTip(facts), shown ? FULL_SCREEN_TIP : "", `case ${n}`);
  assert.equal(FULL_SCREEN_TIP, "For a full-screen trackpad: Share → Add to Home Screen, then open Remolo from the Home Screen.");
});

test("the wake lock tip: no wake lock or a refused one, until dismissed", () => {
  const cases = [ // [case, facts, contains ("" for none)]
    [1, { wakeLock: "unavailable", ios: true }, "Settings → Display & Brightness → Auto-Lock"],
    [2, { wakeLock: "refused", ios: true }, "refused"],
    [3, { wakeLock: "unavailable", ios: false }, "Screen timeout"],
    [4, { wakeLock: "held", ios: true }, ""],
    [5, { wakeLock: "idle", ios: true }, ""],
    [6, { wakeLock: "released", ios: false }, ""],
    [7, { wakeLock: "unavailable", ios: true, dismissed: true }, ""],
  ];
  for (const [n, facts, want] of cases) {
    const got = wakeLockTip(facts);
    assert.ok(want ? got.includes(want) : got === "", `case ${n}: ${JSON.stringify(got)}`);
  }
});
