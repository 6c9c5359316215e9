#!/usr/bin/python3
"""The phone page's flow in Firefox ESR (WebDriver BiDi) and WebKitGTK
(WebKitWebDriver under Xvfb), against a real `remolo receive --web` with
a recording sink: pair from the URL, move, two-finger scroll with glide,
tap, two-finger tap, tap-and-drag, hide and show, reload (a session from
the stored identity, no pairing), type; what the page says the engine
gives it (window.remolo.diagnostics) and its manifest link. The receiver's totals must equal
what the page says it sent, exactly, as in run.py (Chromium).

Gestures are W3C WebDriver actions, one pointer source per finger, every
finger's change in the same tick (as Android reports two fingers: in one
event). Where an engine's automation cannot deliver touches, its pointer
type is said in the output with the gestures that leaves untested.

Usage: Tests/Browser/engines.py [--remolo BIN] [ENGINE...]   (firefox, webkit)
Closes with `browsers: N passed, N failed`.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (Receiver, check, sink totals: the Chromium test's)

FRAME_MS = 8


def pointer(name, kind, acts):
    return {"type": "pointer", "id": name, "parameters": {"pointerType": kind}, "actions": acts}


def at(x, y):
    return {"type": "pointerMove", "x": int(round(x)), "y": int(round(y)), "duration": 0, "origin": "viewport"}


DOWN, UP = {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}
PAUSE = {"type": "pause", "duration": FRAME_MS}


class Gestures:
    def __init__(self, b):
        self.b = b
        self.kind = b.pointer_type

    def stroke(self, starts, step, n):
        fingers = []
        for i, (x, y) in enumerate(starts):
            acts = [at(x, y), DOWN]
            for k in range(1, n + 1):
                acts += [PAUSE, at(x + step[0] * k, y + step[1] * k)]
            fingers.append(pointer(f"finger{i}", self.kind, acts + [UP]))
        self.b.actions(fingers)

    def tap(self, starts):
        self.b.actions([pointer(f"finger{i}", self.kind, [at(x, y), DOWN, UP]) for i, (x, y) in enumerate(starts)])

    def tap_and_drag(self, start, step, n):
        x, y = start
        acts = [at(x, y), DOWN, UP, DOWN]
        for k in range(1, n + 1):
            acts += [PAUSE, at(x + step[0] * k, y + step[1] * k)]
        self.b.actions([pointer("finger0", self.kind, acts + [UP])])


def totals(sent, into):
    # The receiver rounds each session's Q8 sum; a session in the slot its
    # predecessor left may start from that one's remainder (at most half a
    # unit): then the sum over both sessions is what is rounded.
    into["q8"][0] += sent["motionQ8"][0]
    into["q8"][1] += sent["motionQ8"][1]
    into["px"][0] += run.round_half_away(sent["motionQ8"][0])
    into["px"][1] += run.round_half_away(sent["motionQ8"][1])
    into["wheel"][0] += run.round_half_away(sent["scrollQ8"][0])
    into["wheel"][1] += run.round_half_away(sent["scrollQ8"][1])
    into["buttons"] += [(x["code"], 1 if x["down"] else 0) for x in sent["buttons"]]
    into["datagrams"] += sent["datagrams"]


def left_page(b, rx_url):
    """Away to a page of the same origin that is not the trackpad: the
    pagehide keeps the final totals in sessionStorage."""
    b.navigate(rx_url.split("#")[0] + "no-such-page")
    return json.loads(b.wait_for("sessionStorage.getItem('remolo.previousSent')", 5, "the page's totals"))


def flow(engine, make, binary, tmp):
    t0 = time.time()
    print(f"== {engine}", flush=True)
    sink = os.path.join(tmp, f"frames-{engine}")
    rx = run.Receiver(binary, os.path.join(tmp, f"config-{engine}"), sink, extra=["--keymap", "us"])
    b = make()
    g = Gestures(b)
    two = g.kind == "touch"
    print(f"   {engine}: gestures as {g.kind} pointers" + ("" if two else
          " (its WebDriver has no touch input): two-finger scroll, glide and two-finger tap untested"), flush=True)
    want = {"px": [0, 0], "q8": [0, 0], "wheel": [0, 0], "buttons": [], "datagrams": 0}
    buttons = [(run.BTN_LEFT, 1), (run.BTN_LEFT, 0)]
    stats = None
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 20, "pairing from the URL fragment")
        rx.wait_for(r"\(newly paired\)")
        run.check(b.eval("location.hash") == "", f"{engine}: paired; the code left the address bar")
        diagnostics(engine, b)
        g.stroke([(120, 420)], (6, -3), 40)                         # move
        time.sleep(0.3)
        if two:
            g.stroke([(150, 300), (230, 300)], (0, 9), 20)          # scroll with two fingers: glide
            time.sleep(1.5)
        g.tap([(200, 400)])                                         # left click
        time.sleep(0.5)
        if two:
            g.tap([(160, 400), (240, 400)])                         # right click
            buttons += [(run.BTN_RIGHT, 1), (run.BTN_RIGHT, 0)]
            time.sleep(0.5)
        g.tap_and_drag((200, 400), (-5, 4), 30)                     # a drag
        buttons += [(run.BTN_LEFT, 1), (run.BTN_LEFT, 0)]
        run.settle(b)
        h = b.hide()
        b.wait_for("document.visibilityState === 'hidden'", 5, "the page hidden")
        b.show(h)
        b.wait_for("document.visibilityState === 'visible'", 5, "the page visible again")
        run.check(True, f"{engine}: hidden and shown")
        b.reload()
        b.wait_for("window.remolo && remolo.state === 'connected'", 20, "reconnection after a reload")
        sent = json.loads(b.eval("sessionStorage.getItem('remolo.previousSent')"))
        print(f"   {engine}: page sent (first load): {json.dumps(sent)}", flush=True)
        run.check(sent["motionQ8"][0] > 0 and (sent["scrollQ8"][0] > 0 or not two),
                  f"{engine}: motion" + (" and scroll" if two else "") + " were sent")
        totals(sent, want)
        time.sleep(0.3)
        paired = sum(1 for line in rx.lines if "newly paired" in line)
        sessions = sum(1 for line in rx.lines if re.search(r"^session \S+ from ", line))
        stored = b.eval("remolo.identityStored")
        print(f"   {engine}: the identity is kept as {'a CryptoKey' if stored == 'key' else 'a wrapped key (store.js)'}")
        run.check(paired == 1 and sessions == 2,
                  f"{engine}: the reload opened a session from the stored identity ({sessions} sessions, {paired} pairing)")
        g.stroke([(100, 500)], (4, 4), 25)
        run.settle(b)
        n_typed = typing(engine, b)
        totals(left_page(b, rx.url), want)
    finally:
        b.close()
        stats = rx.stop()
    # A page that unloads may take its WebSocket's last queued message with
    # it: the engine closes the socket as the document goes, and a datagram
    # the final frame handed to ws.send() can still be in the engine's own
    # queue (seen once in Firefox ESR: 205 of 206). Two unloads (the reload
    # and leaving), so at most two short; a lost one that carried motion,
    # scroll or a button still fails the exact totals checked below.
    short = want["datagrams"] - stats["opened"]
    run.check(0 <= short <= 2,
              f"{engine}: every datagram opened ({stats['opened']} of {want['datagrams']}"
              + (f"; {short} queued at an unload not delivered" if short else "") + ")")
    drops = {k: v for k, v in stats["drops"].items() if v}
    run.check(not drops, f"{engine}: no drops ({drops})")
    carried = [run.round_half_away(q) for q in want["q8"]]
    got = [stats["total_dx"], stats["total_dy"]]
    run.check(got in (want["px"], carried),
              f"{engine}: pointer total {got} == page's {want['px']} (each session rounded) or {carried} (remainder carried)")
    run.check([stats["total_wheel_hires"], stats["total_hwheel_hires"]] == want["wheel"],
              f"{engine}: wheel total {stats['total_wheel_hires']}, {stats['total_hwheel_hires']} == page's {want['wheel']}")
    rel, keys = run.sink_totals(sink)
    run.check([rel.get(run.REL_X, 0), rel.get(run.REL_Y, 0)] == got, f"{engine}: sink REL_X/REL_Y == the receiver's totals")
    run.check(keys == want["buttons"] == buttons, f"{engine}: buttons {keys} == page's {want['buttons']} == {buttons}")
    k = stats.get("keys", {})
    run.check(k.get("key_messages", 0) + k.get("text_messages", 0) == n_typed,
              f"{engine}: the receiver took every key and text message the page sent ({k.get('key_messages')} + "
              f"{k.get('text_messages')} of {n_typed})")
    print(f"   {engine}: {time.time() - t0:.1f} s", flush=True)


def diagnostics(engine, b):
    """What the page says this engine gives it (window.remolo.diagnostics),
    and the manifest link a Home Screen app comes from."""
    b.wait_for("window.remolo && remolo.diagnostics.frameHz > 0", 5, "a measured frame rate")
    d = json.loads(b.eval("JSON.stringify(remolo.diagnostics)"))
    print(f"   {engine}: " + "; ".join(f"{l['label']}: {l['value']}" for l in d["lines"]), flush=True)
    run.check(isinstance(d.get("coalesced"), bool) and d.get("frameHz", 0) > 0 and d.get("wakeLock")
              and d.get("identity") in ("key", "wrapped") and d.get("secureContext") is True and len(d.get("lines", [])) >= 7,
              f"{engine}: window.remolo.diagnostics: coalesced {d.get('coalesced')}, {d.get('frameHz')} Hz, "
              f"wake lock {d.get('wakeLock')}, identity {d.get('identity')}, {d.get('engine')}")
    # The datagram path: WebKitGTK (built without WebRTC) has no
    # RTCPeerConnection, so its page stays on the WebSocket and says why;
    # Firefox's asks for the data channel (on loopback it gathers no ICE
    # candidate, so its datagrams ride the WebSocket until one opens:
    # Tests/Browser/datachannel runs it where one does).
    t = d.get("transport") or {}
    has_rtc = b.eval("typeof RTCPeerConnection === 'function'")
    if engine == "webkit":
        run.check(not has_rtc and t.get("path") == "websocket" and t.get("reason") == "noPeerConnection"
                  and any(l["label"] == "Transport" and "no WebRTC" in l["value"] for l in d["lines"]),
                  f"{engine}: no RTCPeerConnection: the WebSocket, and the diagnostics say why ({t})")
    else:
        run.check(has_rtc and t.get("path") in ("websocket", "datachannel") and t.get("tries", 0) >= 1,
                  f"{engine}: RTCPeerConnection: the page tries its data channel ({t})")
    href = b.eval("document.querySelector('link[rel=manifest]')?.getAttribute('href') ?? ''")
    run.check(href == "manifest.webmanifest", f"{engine}: the manifest link is there ({href!r})")


def typing(engine, b):
    """Letters, Backspace and Enter from the engine's own key input into the
    page's field. Returns the number of messages the page sent."""
    b.click("#kbd")
    b.wait_for("remolo.keyboard.open && remolo.keyboard.focused", 5, "the keyboard open on the hidden field")
    acts = []
    for ch in "hello" + "\ue003" + "\ue007":   # WebDriver's Backspace and Enter
        acts += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
    b.actions([{"type": "key", "id": "keyboard", "actions": acts}])
    time.sleep(0.3)
    typed = b.eval("JSON.stringify(remolo.typed)")
    typed = json.loads(typed)
    text = "".join(m["text"] for m in typed if m["type"] == "text")
    keys = [(m["code"], m["down"]) for m in typed if m["type"] == "key"]
    run.check(text == "hello" and keys == [(14, True), (14, False), (28, True), (28, False)],
              f"{engine}: typed hello, Backspace, Enter: {typed}")
    b.click("#kbd")
    return len(typed)


ENGINES = {
    "firefox": lambda: __import__("bidi").Browser(),
    "webkit": lambda: __import__("webdriver").Browser(),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--remolo", default=os.path.join(run.ROOT, ".build", "debug", "remolo"))
    ap.add_argument("engines", nargs="*", default=list(ENGINES))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="remolo-engines-")
    t0 = time.time()
    for e in args.engines:
        try:
            flow(e, ENGINES[e], args.remolo, tmp)
        except Exception as ex:  # one engine's abort is its failure, not the others'
            run.check(False, f"{e}: {type(ex).__name__}: {ex}")
    passed = run.checks - len(run.failures)
    print(f"engines: {time.time() - t0:.1f} s")
    print(f"browsers: {passed} passed, {len(run.failures)} failed")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
