#!/usr/bin/python3
"""The phone page in a real browser against a real receiver.

Starts `remolo receive --pair --web ... --sink FILE --stats-json` (a
recording sink: no uinput needed), opens the printed URL in headless
Chromium, pairs with the code from the URL fragment, then moves, scrolls,
taps, right-clicks and drags with touches dispatched through the DevTools
protocol (Input.dispatchTouchEvent). The receiver's totals (--stats-json
and the sink's struct input_event records) must equal what the page says
it sent, exactly. A reload reconnects without pairing. Meanwhile, hostile
input at the web port (plain TCP, non-WebSocket requests, an oversized
frame, messages that are no datagram or control frame, many idle TLS
connections) is refused or closed and changes nothing of the session's
totals. A second receiver refuses a wrong code and burns it. A third one
takes typing: the phone's soft keyboard as Chrome on Android drives the
page (committed text, an IME's composition, Backspace and Enter as
keyCode 229 with their beforeinput), the special-keys row with a sticky
Ctrl, and every key released when the page hides, closes its keyboard or
leaves; the receiver must play exactly the keys the page sent. A sender
that may not type, and a receiver with --no-keyboard: the page says why.
The page as a Home Screen app: its manifest and icons are served with
their types and parse; window.remolo.diagnostics says what the browser
gives it. Why a connection fails: the receiver stopped (unreachable), and
its page served through a proxy that refuses WebSockets (the page's
origin answers, its WebSocket is refused: the iOS certificate case). As
an iPhone (its user agent, no Fullscreen API, no wake lock): the tips.

Needs Debian's chromium and python3-websocket; run with /usr/bin/python3.
Usage: Tests/Browser/run.py [--remolo BIN] [--screenshot FILE] [--screenshot-keyboard FILE]
"""
import argparse
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EV_KEY, EV_REL, EV_ABS = 1, 2, 3
ABS_MT_SLOT, ABS_MT_POSITION_X, ABS_MT_POSITION_Y, ABS_MT_TRACKING_ID = 0x2f, 0x35, 0x36, 0x39
BTN_TOOL_DOUBLETAP, BTN_TOOL_TRIPLETAP = 0x14d, 0x14e
REL_X, REL_Y, REL_HWHEEL, REL_WHEEL, REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES = 0, 1, 6, 8, 11, 12
BTN_LEFT, BTN_RIGHT = 0x110, 0x111
failures = []
checks = 0
# On loopback Chromium gathers no ICE candidate unless told it may: with
# this the page's data channel opens here too, and every flow below runs
# with the page's datagrams on it (Tests/Browser/datachannel runs it on a
# LAN address, under loss).
RTC_FLAGS = ["--allow-loopback-in-peer-connection"]


def check(ok, what):
    global checks
    checks += 1
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


class Receiver:
    def __init__(self, binary, config, sink, listen="127.0.0.1:0", web="127.0.0.1:0", pair=True, extra=()):
        os.makedirs(config, mode=0o700, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "receive", "--listen", listen, "--web", web, "--sink", sink,
             "--stats-json", "--stats", "0.5"] + (["--pair"] if pair else []) + list(extra),
            env={**os.environ, "REMOLO_CONFIG_DIR": config}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.wait_for(r"^pair a phone: (\S+)" if pair else r"^phone page: (\S+)").group(1)
        self.web_port = int(re.search(r":(\d+)/", self.url).group(1))
        self.port = int(self.wait_for(r"^receiver \S+ listening on 127\.0\.0\.1:(\d+)").group(1))

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, pattern, timeout=10):
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = rx.search(line)
                    if m:
                        return m
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"the receiver never printed {pattern}; it said:\n" + "\n".join(
                        l for l in self.lines if not l.startswith("{")))
                self.cond.wait(left)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)
        time.sleep(0.1)
        # 0: stopped cleanly (a sanitizer's report would make it non-zero).
        check(self.proc.returncode == 0, f"the receiver stopped cleanly on SIGINT (exit {self.proc.returncode})")
        stats = [json.loads(l) for l in self.lines if l.startswith("{")]
        return stats[-1]


def sink_totals(path):
    """REL totals and the mouse buttons (BTN_*, 0x100 up) in a --sink file.
    The keyboard's frames share the sink: its KEY_* codes (below 0x100) are
    left out here."""
    data = open(path, "rb").read()
    rel = {}
    keys = []
    for off in range(0, len(data) - len(data) % 24, 24):
        typ, code, value = struct.unpack_from("<HHi", data, off + 16)
        if typ == EV_REL:
            rel[code] = rel.get(code, 0) + value
        elif typ == EV_KEY and code >= 0x100:
            keys.append((code, value))
    return rel, keys


def sink_keyboard(path):
    """The keyboard's key changes (KEY_*, below 0x100) in a --sink file,
    in the order written."""
    data = open(path, "rb").read()
    out = []
    for off in range(0, len(data) - len(data) % 24, 24):
        typ, code, value = struct.unpack_from("<HHi", data, off + 16)
        if typ == EV_KEY and code < 0x100:
            out.append((code, value))
    return out


def round_half_away(q8):
    """The playout's rounding of a session's Q8 total to whole units."""
    return (q8 + 128) // 256 if q8 >= 0 else -((-q8 + 128) // 256)


# ---------------------------------------------------------------- gestures

class Fingers:
    def __init__(self, browser, frame=0.008):
        self.b = browser
        self.frame = frame

    def stroke(self, starts, step, n, start=True):
        pts = [(i + 1, x, y) for i, (x, y) in enumerate(starts)]
        if start:
            self.b.touch("touchStart", pts)
        for k in range(1, n + 1):
            time.sleep(self.frame)
            self.b.touch("touchMove", [(i, x + step[0] * k, y + step[1] * k) for i, x, y in pts])
        self.b.touch("touchEnd", [])

    def tap(self, starts):
        # Start and end back to back: a tap is under 180 ms however slow
        # the DevTools round trip is on a loaded machine.
        self.b.touch("touchStart", [(i + 1, x, y) for i, (x, y) in enumerate(starts)], wait=False)
        self.b.touch("touchEnd", [], wait=False)
        self.b.eval("1")

    def tap_and_drag(self, at, step, n):
        # The second touch lands right after the tap's lift (within the
        # drag timeout); its moves may come at any pace: held still past
        # the tap timeout, it is a drag anyway.
        self.b.touch("touchStart", [(1, *at)], wait=False)
        self.b.touch("touchEnd", [], wait=False)
        self.b.touch("touchStart", [(1, *at)], wait=False)
        self.b.eval("1")
        self.stroke([at], step, n, start=False)


def settle(b, timeout=5):
    # Quiet: no glide running and nothing pending; heartbeats only.
    b.wait_for("window.remolo && remolo.state === 'connected'", timeout, "the connected state")
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        cur = b.eval("JSON.stringify([remolo.sent.motionQ8, remolo.sent.scrollQ8, remolo.sent.buttons.length])")
        if cur == last:
            return
        last = cur
        time.sleep(0.4)


# ---------------------------------------------------------------- hostile input

def tls(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname="localhost")
    return s


def http(port, request):
    s = tls(port)
    s.sendall(request)
    out = b""
    try:
        while True:
            c = s.recv(4096)
            if not c:
                break
            out += c
    except (socket.timeout, ssl.SSLError, ConnectionResetError):
        pass
    s.close()
    return out


def ws_open(port):
    s = tls(port)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
              b"Origin: https://127.0.0.1:%d\r\n\r\n" % (port, port))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    # RFC 6455 section 1.3's example key and its accept value.
    assert b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head, head
    return s


def ws_frame(opcode, payload, mask=True, length=None):
    n = len(payload) if length is None else length
    h = bytes([0x80 | opcode])
    m = 0x80 if mask else 0
    if n < 126:
        h += bytes([m | n])
    elif n < 65536:
        h += bytes([m | 126]) + struct.pack(">H", n)
    else:
        h += bytes([m | 127]) + struct.pack(">Q", n)
    if mask:
        key = os.urandom(4)
        return h + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return h + payload


def ws_close_code(s, timeout=5):
    """Reads frames until a close; returns its code (None if the socket just closed)."""
    s.settimeout(timeout)
    buf = b""
    try:
        while True:
            c = s.recv(4096)
            if not c:
                return None
            buf += c
            while len(buf) >= 2:
                n = buf[1] & 0x7f
                hl = 2 if n < 126 else 4
                if n == 126:
                    if len(buf) < 4:
                        break
                    n = struct.unpack(">H", buf[2:4])[0]
                if len(buf) < hl + n:
                    break
                op, payload = buf[0] & 0x0f, buf[hl:hl + n]
                buf = buf[hl + n:]
                if op == 0x8:
                    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
    except (socket.timeout, ssl.SSLError, ConnectionResetError):
        return None


def hostile(port):
    """Bad input at the web port: each refused or closed. Returns the
    number of datagrams it got relayed (each a drop at the receiver)."""
    # Plain TCP where TLS is expected.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        rest = s.recv(100)
    except (ConnectionResetError, socket.timeout):
        rest = b""
    check(not rest.startswith(b"HTTP/1.1 200"), "plain HTTP to the TLS port is not served")
    s.close()
    check(http(port, b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 426"),
          "a non-WebSocket request to /ws: 426 Upgrade Required")
    check(http(port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc").startswith(b"HTTP/1.1 4"),
          "a POST with a body: refused")
    check(http(port, b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 404"),
          "a path outside the page: 404")
    check(http(port, b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 9000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431"),
          "9 KB of headers: 431")
    bad_origin = http(port, b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                      b"Origin: https://evil.example\r\n\r\n")
    check(bad_origin.startswith(b"HTTP/1.1 403"), "a WebSocket from another origin: 403")

    s = ws_open(port)
    s.sendall(ws_frame(0x2, b"", length=100000)[:10] + os.urandom(4))
    check(ws_close_code(s) == 1009, "an oversized WebSocket frame (100 kB announced): closed 1009 from its header")
    s = ws_open(port)
    s.sendall(ws_frame(0x1, b"hello"))
    check(ws_close_code(s) == 1003, "a text message: closed 1003")
    s = ws_open(port)
    s.sendall(ws_frame(0x2, b"\x01" + os.urandom(10)))
    check(ws_close_code(s) == 1008, "a datagram message of the wrong length: closed 1008")
    s = ws_open(port)
    s.sendall(ws_frame(0x2, b"\x07" + os.urandom(49)))
    check(ws_close_code(s) == 1008, "an unknown tag: closed 1008")
    s = ws_open(port)
    s.sendall(ws_frame(0x2, b"\x01" + os.urandom(10), mask=False))
    check(ws_close_code(s) == 1002, "an unmasked client frame: closed 1002")
    s = ws_open(port)
    s.sendall(ws_frame(0x2, b"\x01" + os.urandom(49)))
    s.sendall(ws_frame(0x2, b"\x00\x00\x05\x42garbage"))
    check(ws_close_code(s) in (1000, 1011), "a forged datagram is relayed (and dropped by the receiver); "
          "a bad handshake message: the receiver refuses and the WebSocket closes")
    relayed = 1

    # Many idle TLS connections: more than the cap are closed at accept,
    # the rest after the 5 s setup timeout.
    idle = [socket.create_connection(("127.0.0.1", port), timeout=8) for _ in range(IDLE_CONNECTIONS)]
    time.sleep(0.5)
    t0 = time.time()
    closed = 0
    for c in idle:
        try:
            c.settimeout(max(0.1, 7 - (time.time() - t0)))
            closed += c.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            closed += 1 if time.time() - t0 < 7 else 0
        c.close()
    check(closed == IDLE_CONNECTIONS,
          f"{IDLE_CONNECTIONS} idle connections: all closed within the setup timeout ({closed}/{IDLE_CONNECTIONS})")
    return relayed


# ---------------------------------------------------------------- typing

# evdev codes (<linux/input-event-codes.h>)
KEY_ESC, KEY_BACKSPACE, KEY_ENTER, KEY_LEFTCTRL, KEY_LEFTALT = 1, 14, 28, 29, 56
KEY_UP, KEY_LEFT, KEY_DOWN, KEY_VOLUMEUP = 103, 105, 108, 115
# What the "us" layout types each letter with.
US_KEYS = {"h": 35, "e": 18, "l": 38, "o": 24, "w": 17, "r": 19, "d": 32, "c": 46}


def wait_quietly(b, expression, timeout):
    """The expression's value once truthy, or None after the timeout (for a check, not an abort)."""
    try:
        return b.wait_for(expression, timeout)
    except AssertionError:
        return None


def key(code, down):
    return {"type": "key", "code": code, "down": down}


def text(s):
    return {"type": "text", "text": s}


def strokes(messages):
    """The key events a receiver with the us layout plays for the page's messages."""
    out = []
    for m in messages:
        if m["type"] == "key":
            out.append((m["code"], 1 if m["down"] else 0))
        else:
            for ch in m["text"]:
                if ch in US_KEYS:
                    out += [(US_KEYS[ch], 1), (US_KEYS[ch], 0)]
    return out


def typing(binary, tmp, screenshot=None):
    """The phone's soft keyboard and the special-keys row, against a real
    receiver: what the page sends for each way a phone keyboard edits
    text, and what the receiver plays (its sink) and counts (--stats-json)."""
    sink = os.path.join(tmp, "frames-typing")
    rx = Receiver(binary, os.path.join(tmp, "config-typing"), sink, extra=["--keymap", "us"])
    b = cdp.Browser(flags=RTC_FLAGS)
    page = []       # what the page must have sent, in order
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing from the URL fragment")
        kb = b.eval("remolo.keyboard")
        check(kb["spoken"] and kb["granted"] and kb["status"] == 0, f"the receiver's hello grants the keyboard ({kb})")
        b.click("#kbd")
        b.wait_for("remolo.keyboard.open && remolo.keyboard.focused", 5, "the keyboard open on the hidden field")
        check(b.eval("getComputedStyle(document.getElementById('typing')).fontSize") == "16px",
              "the hidden field's text is 16px (iOS does not zoom)")

        def tap(selector, hold=0.0):
            x, y = b.center(selector)
            b.touch("touchStart", [(1, x, y)])
            if hold:
                time.sleep(hold)
            b.touch("touchEnd", [])

        def double_tap(selector):
            x, y = b.center(selector)
            for _ in range(2):
                b.touch("touchStart", [(1, x, y)], wait=False)
                b.touch("touchEnd", [], wait=False)
            b.eval("1")

        b.insert_text("hello")                      # typed letters
        page += [text("hello")]
        for s in ("w", "wo", "wor"):                # an IME's composition, live
            b.compose(s)
        b.insert_text("word")                       # ... committed
        page += [text("w"), text("o"), text("r"), text("d")]
        b.soft_key("deleteBackward")                # Backspace: keyCode 229, deleteContentBackward
        page += [key(KEY_BACKSPACE, True), key(KEY_BACKSPACE, False)]
        b.soft_key("insertNewline")                 # Enter: keyCode 229, insertLineBreak
        page += [key(KEY_ENTER, True), key(KEY_ENTER, False)]
        b.soft_key("deleteBackward")                # at the field's start: Backspace still works
        page += [key(KEY_BACKSPACE, True), key(KEY_BACKSPACE, False)]
        check(b.eval("document.activeElement.id") == "typing", "the phone's keyboard stays open over the field's edits")
        tap('#keys [data-mod="29"]')                # sticky Ctrl, then c: Ctrl+C
        check(b.eval("document.querySelector('[data-mod=\"29\"]').className") == "latched", "a tapped Ctrl shows latched")
        if screenshot:
            time.sleep(1.1)  # a whole second of heartbeats for the status line's rate
            b.screenshot(screenshot)
        b.insert_text("c")
        page += [key(KEY_LEFTCTRL, True), text("c"), key(KEY_LEFTCTRL, False)]
        check(b.eval("document.querySelector('[data-mod=\"29\"]').className") == "", "Ctrl is off after the next text")
        tap('#keys [data-key="105"]', hold=0.3)     # an arrow, held: down on touch, up on lift
        page += [key(KEY_LEFT, True), key(KEY_LEFT, False)]
        tap('#keys [data-key="115"]')               # volume up
        page += [key(KEY_VOLUMEUP, True), key(KEY_VOLUMEUP, False)]
        f = Fingers(b)
        f.stroke([(200, 300)], (4, 2), 10)          # the trackpad works with the keyboard open ...
        check(b.eval("document.activeElement.id") == "typing", "... and touching it leaves the phone's keyboard open")
        b.insert_text("€")                          # the us layout has no €
        page += [text("€")]
        note = wait_quietly(b, "remolo.note", 5)
        check(note == "1 character this layout cannot type", f"the refusal is shown: {note!r}")

        # Never a key left down: hidden while an arrow is held ...
        x, y = b.center('#keys [data-key="108"]')
        b.touch("touchStart", [(1, x, y)])
        other = b.call("Target.createTarget", url="about:blank")["targetId"]
        b.wait_for("document.visibilityState === 'hidden'", 5, "the page hidden behind another tab")
        page += [key(KEY_DOWN, True), key(KEY_DOWN, False)]
        b.call("Target.closeTarget", targetId=other)
        b.wait_for("document.visibilityState === 'visible'", 5, "the page visible again")
        b.touch("touchEnd", [])                     # the lift after it sends nothing more
        # ... the keyboard closed with Alt locked (double tap) ...
        double_tap('#keys [data-mod="56"]')
        check(bool(b.wait_for("document.querySelector('[data-mod=\"56\"]').className === 'locked'", 5, "Alt locked")),
              "a double-tapped Alt shows locked")
        b.click("#kbd")
        b.wait_for("!remolo.keyboard.open && !remolo.keyboard.focused", 5, "the keyboard closed")
        page += [key(KEY_LEFTALT, True), key(KEY_LEFTALT, False)]
        time.sleep(0.3)
        sent = b.eval("remolo.typed")
        check(sent == page, "the page sent exactly the keys and texts of what was typed" +
              ("" if sent == page else f":\n  sent {sent}\n  want {page}"))
        check(b.eval("remolo.keyboard.held.length + remolo.keyboard.modifiers.length") == 0, "the page holds no key")
        # ... and the page left with Ctrl locked.
        b.click("#kbd")
        double_tap('#keys [data-mod="29"]')
        b.wait_for("remolo.keyboard.modifiers.length === 1", 5, "Ctrl locked")
        page += [key(KEY_LEFTCTRL, True), key(KEY_LEFTCTRL, False)]
        b.navigate(rx.url.split("#")[0] + "no-such-page")
        left = json.loads(b.eval("sessionStorage.getItem('remolo.previousTyped')"))
        check(left[-2:] == page[-2:], f"leaving the page releases the locked Ctrl ({left[-2:]})")
    finally:
        b.close()
        stats = rx.stop()
    keys = stats.get("keys", {})
    n_key = sum(1 for m in page if m["type"] == "key")
    n_text = sum(1 for m in page if m["type"] == "text")
    check(keys.get("key_messages") == n_key and keys.get("text_messages") == n_text,
          f"the receiver took {keys.get('key_messages')} key and {keys.get('text_messages')} text messages "
          f"(the page sent {n_key} and {n_text})")
    refused = {k: v for k, v in keys.get("refused", {}).items() if v}
    check(refused == {"untypable": 1}, f"the only refusal: one untypable character ({refused})")
    played = sink_keyboard(sink)
    want = strokes(page)
    check(played == want, "the receiver played exactly those keys" +
          ("" if played == want else f":\n  played {played}\n  want   {want}"))


def typing_refused(binary, tmp):
    """What the page says when it may not type: a sender paired with
    --keyboard deny (then allowed with remolo peers, and typing after a
    reload), and a receiver started with --no-keyboard."""
    config = os.path.join(tmp, "config-deny")
    rx = Receiver(binary, config, os.path.join(tmp, "frames-deny"), extra=["--keyboard", "deny"])
    b = cdp.Browser(flags=RTC_FLAGS)
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing from the URL fragment")
        fp = rx.wait_for(r"from (\S+) \(newly paired\)").group(1)
        kb = b.eval("remolo.keyboard")
        check(kb["spoken"] and not kb["granted"] and kb["status"] == 2, f"paired with --keyboard deny: status 2 ({kb})")
        check(b.eval("document.getElementById('kbd').classList.contains('unavailable')"), "the keyboard button is grey")
        b.click("#kbd")
        note = b.wait_for("remolo.note", 5, "the reason shown")
        check(note == f"this phone may not type: on the receiver run remolo peers allow-keyboard {fp}",
              f"tapping it says what to run, with this page's fingerprint: {note!r}")
        check(not b.eval("remolo.keyboard.open"), "and opens nothing")
        allow = subprocess.run([binary, "peers", "allow-keyboard", fp], env={**os.environ, "REMOLO_CONFIG_DIR": config},
                               capture_output=True, text=True)
        check(allow.returncode == 0, f"remolo peers allow-keyboard {fp}: {allow.stdout.strip()} {allow.stderr.strip()}")
        b.reload()
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "the session after the reload")
        kb = b.eval("remolo.keyboard")
        check(kb["granted"] and kb["status"] == 0, f"allowed, the next session may type ({kb})")
        b.click("#kbd")
        b.wait_for("remolo.keyboard.open && remolo.keyboard.focused", 5, "the keyboard open")
        b.insert_text("ok")
        b.wait_for("remolo.typed.length === 1", 5, "the text sent")
        b.navigate(rx.url.split("#")[0] + "no-such-page")
        stats = rx.stop()
        check(stats.get("keys", {}).get("text_messages") == 1, f"the receiver took the text ({stats.get('keys')})")

        # The same receiver (config, ports) restarted with --no-keyboard.
        rx = Receiver(binary, config, os.path.join(tmp, "frames-off"), listen=f"127.0.0.1:{rx.port}",
                      web=f"127.0.0.1:{rx.web_port}", pair=False, extra=["--no-keyboard"])
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "a session with the restarted receiver")
        check(b.eval("remolo.keyboard.status") == 1, "--no-keyboard: status 1")
        b.click("#kbd")
        note = b.wait_for("remolo.note", 5, "the reason shown")
        check(note == "typing is off on this receiver (remolo receive --no-keyboard)", f"tapping the keyboard button says so: {note!r}")
    finally:
        b.close()
        if rx.proc.poll() is None:
            rx.stop()


# ---------------------------------------------------------------- what the browser gives the page

def home_screen_app(b):
    """The manifest and icons, fetched as the browser would, and Chromium's
    own reading of the manifest; then window.remolo.diagnostics."""
    got = json.loads(b.eval("""(async () => {
      const m = document.querySelector('link[rel=manifest]');
      const r = await fetch(m.href, { cache: 'no-store' });
      const body = await r.text();
      let manifest = null;
      try { manifest = JSON.parse(body); } catch { }
      const fetched = async (href) => { const x = await fetch(href, { cache: 'no-store' });
        return { src: href, status: x.status, type: x.headers.get('content-type'), bytes: (await x.arrayBuffer()).byteLength }; };
      const icons = [];
      for (const i of manifest?.icons ?? []) icons.push({ ...(await fetched(new URL(i.src, r.url).href)), claimed: i.type });
      const touch = await fetched(document.querySelector('link[rel=apple-touch-icon]').href);
      return JSON.stringify({ status: r.status, type: r.headers.get('content-type'), manifest, icons, touch });
    })()"""))
    m = got["manifest"] or {}
    check(got["status"] == 200 and got["type"] == "application/manifest+json",
          f"the manifest is served as application/manifest+json ({got['status']}, {got['type']})")
    check(m.get("display") == "standalone" and m.get("start_url") == "./" and m.get("short_name") == "Remolo",
          f"the manifest parses: display {m.get('display')}, start_url {m.get('start_url')}, short_name {m.get('short_name')}")
    icons = got["icons"] + [{**got["touch"], "claimed": "image/png"}]
    check(len(icons) >= 4 and all(i["status"] == 200 and i["type"] == i["claimed"] and i["type"].startswith("image/")
                                  and i["bytes"] > 0 for i in icons),
          "its icons and the apple-touch-icon: 200, image types: " + ", ".join(
              f"{i['src'].rsplit('/', 1)[-1]} {i['status']} {i['type']}" for i in icons))
    app = b.call("Page.getAppManifest")
    check(not app.get("errors") and app.get("url", "").endswith("/manifest.webmanifest"),
          f"Chromium reads the manifest without errors ({app.get('errors')})")

    b.wait_for("remolo.diagnostics.frameHz > 0", 5, "a measured frame rate")
    d = b.eval("remolo.diagnostics")
    print("diagnostics:", json.dumps({k: v for k, v in d.items() if k != "lines"}))
    check(d["coalesced"] is True and d["frameHz"] > 0 and d["wakeLock"] == "held" and d["identity"] == "key"
          and d["secureContext"] is True and d["fullScreen"] == "api" and d["engine"].startswith("Blink"),
          f"window.remolo.diagnostics: coalesced, {d['frameHz']} Hz, wake lock {d['wakeLock']}, identity {d['identity']}, "
          f"full screen {d['fullScreen']}, {d['engine']}")
    check(b.eval("remolo.tips.length") == 0, "no tip in Chromium (it has full screen and a wake lock)")


class RefusingProxy:
    """A TLS front for a receiver's web port that serves the page's files
    (one request per connection, passed on) but refuses every WebSocket
    with 403: a proxy or filter that blocks WebSockets, and what the page
    sees on an iPhone whose certificate exception covers the page but not
    its WebSocket. The page's origin is the proxy's."""

    def __init__(self, web_port, config):
        self.web_port = web_port
        self.refused = 0
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(config, "web-cert.pem"), os.path.join(config, "web-key.pem"))
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, raw):
        c = up = None
        try:
            raw.settimeout(10)
            c = self.ctx.wrap_socket(raw, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                d = c.recv(4096)
                if not d:
                    return
                head += d
            if head.startswith(b"GET /ws "):
                self.refused += 1
                c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            head = re.sub(rb"(?im)^connection:[^\r\n]*\r\n", b"", head).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
            up = tls(self.web_port)
            up.sendall(head)
            while True:
                d = up.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except (OSError, ssl.SSLError):
            pass
        finally:
            for s in (up, c or raw):
                try:
                    s and s.close()
                except OSError:
                    pass

    def close(self):
        self.sock.close()


IPHONE_UA = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
             "Version/18.2 Mobile/15E148 Safari/604.1")


def connection_failures_and_tips(binary, tmp):
    """A WebSocket refused while the page's origin answers: the page says
    so, with what to install. Then Chromium dressed as an iPhone (its user
    agent, navigator.standalone, no Fullscreen API, no wake lock): the
    full-screen and wake lock tips, and a dismissed tip stays away."""
    config = os.path.join(tmp, "config-proxy")
    rx = Receiver(binary, config, os.path.join(tmp, "frames-proxy"))
    proxy = RefusingProxy(rx.web_port, config)
    b = cdp.Browser(flags=RTC_FLAGS)
    try:
        b.navigate(re.sub(r":\d+/", f":{proxy.port}/", rx.url, count=1))
        kind = b.wait_for("window.remolo && remolo.diagnostics.link", 15, "the failure classified")
        check(kind == "websocketRefused" and proxy.refused >= 1,
              f"the page's origin answers, its WebSocket is refused ({proxy.refused}): classified {kind}")
        note = b.wait_for("remolo.note", 5, "the note")
        check(f"remolo receive --web {proxy.port} --ca" in note and "/ca.html" in note,
              f"the page says what to install: {note!r}")
        b.click("#gear")
        b.eval("document.getElementById('diag').open = true")
        view = b.wait_for("document.getElementById('diaglines').innerText.includes('Connection')"
                          " && document.getElementById('diaglines').innerText", 5, "the diagnostics view")
        check(all(w in view for w in ("coalesced", "Hz frames", "Fullscreen API", "Wake lock", "stored as a key",
                                      "Blink", "refused its WebSocket")),
              "the diagnostics view says it in words: " + " | ".join(view.split("\n")))
    finally:
        b.close()
        proxy.close()

    b = cdp.Browser(flags=RTC_FLAGS)
    try:
        b.call("Emulation.setUserAgentOverride", userAgent=IPHONE_UA, platform="iPhone")
        b.call("Page.addScriptToEvaluateOnNewDocument", source=(
            "delete Element.prototype.requestFullscreen; delete Navigator.prototype.wakeLock;"
            "Object.defineProperty(Navigator.prototype, 'standalone', { get: () => false, configurable: true });"))
        b.navigate(rx.url)  # the code is unused: no handshake went through the proxy
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing as an iPhone")
        tips = b.wait_for("remolo.tips.length === 2 && remolo.tips", 5, "two tips")
        d = b.eval("remolo.diagnostics")
        check(d["ios"] and d["fullScreen"] == "none" and d["wakeLock"] == "unavailable" and d["engine"] == "WebKit (iOS 18.2)",
              f"as an iPhone: {d['engine']}, full screen {d['fullScreen']}, wake lock {d['wakeLock']}")
        words = b.eval("document.getElementById('tips').innerText")
        check(sorted(tips) == ["fullscreen", "wakelock"] and "Share → Add to Home Screen" in words and "Auto-Lock" in words,
              f"the tips: {tips}: {words!r}")
        b.click("#tip-fullscreen button")
        b.reload()
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "the session after a reload")
        tips = b.wait_for("remolo.tips.length && remolo.tips", 5, "the wake lock tip again")
        check(tips == ["wakelock"], f"a dismissed tip stays away after a reload ({tips})")
    finally:
        b.close()
        rx.stop()


# ---------------------------------------------------------------- main

def touchpad_frames(path):
    """The touchpad sink's frames, each a list of (type, code, value), and
    the fingers it shows after each: {slot: (x, y)}."""
    data = open(path, "rb").read()
    frames, cur, slot, fingers, shown = [], [], 0, {}, []
    for off in range(0, len(data) - len(data) % 24, 24):
        typ, code, value = struct.unpack_from("<HHi", data, off + 16)
        cur.append((typ, code, value))
        if typ == EV_ABS and code == ABS_MT_SLOT:
            slot = value
        elif typ == EV_ABS and code == ABS_MT_TRACKING_ID:
            if value < 0:
                fingers.pop(slot, None)
            else:
                fingers[slot] = (None, None)
        elif typ == EV_ABS and code in (ABS_MT_POSITION_X, ABS_MT_POSITION_Y) and slot in fingers:
            x, y = fingers[slot]
            fingers[slot] = (value, y) if code == ABS_MT_POSITION_X else (x, value)
        elif typ == 0 and code == 0:
            frames.append(cur)
            shown.append(dict(fingers))
            cur = []
    return frames, shown


def gestures(binary, tmp):
    """Three fingers and a pinch dispatched to the page as touches reach a
    receiver that grants gestures (its touchpad on a recording sink) as
    gesture frames with the right finger counts and spread; two fingers
    moving together still scroll (docs/gestures.md)."""
    sink, pad = os.path.join(tmp, "frames-gestures"), os.path.join(tmp, "touches")
    rx = Receiver(binary, os.path.join(tmp, "config-gestures"), sink, extra=["--touchpad-sink", pad])
    b = cdp.Browser(flags=RTC_FLAGS)
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing from the URL fragment")
        f = Fingers(b)
        f.stroke([(100, 400), (180, 400), (260, 400)], (4, 0), 30)      # a three-finger swipe, 120 px right
        time.sleep(0.5)
        # A pinch: two fingers 80 px apart spreading 3 px a frame each way.
        b.touch("touchStart", [(1, 160, 300), (2, 240, 300)])
        for k in range(1, 31):
            time.sleep(f.frame)
            b.touch("touchMove", [(1, 160 - 3 * k, 300), (2, 240 + 3 * k, 300)])
        b.touch("touchEnd", [])
        time.sleep(0.5)
        f.stroke([(150, 300), (230, 300)], (0, 9), 20)                   # two fingers together: a scroll
        settle(b)
        sent = b.eval("JSON.stringify(remolo.sent)")
        print(f"   gestures: page sent {sent}", flush=True)
    finally:
        b.close()
        stats = rx.stop()
    g = stats.get("gestures", {})
    check(g.get("touchpad") is True and g.get("begun") == 2 and g.get("refused") == 0 and g.get("timeouts") == 0,
          f"the receiver made its touchpad and took two gestures, none refused or timed out ({g})")
    frames, shown = touchpad_frames(pad)
    tools = [(c, v) for fr in frames for (t, c, v) in fr if t == EV_KEY and c in (BTN_TOOL_DOUBLETAP, BTN_TOOL_TRIPLETAP)]
    check(tools == [(BTN_TOOL_TRIPLETAP, 1), (BTN_TOOL_TRIPLETAP, 0), (BTN_TOOL_DOUBLETAP, 1), (BTN_TOOL_DOUBLETAP, 0)],
          f"three fingers, then two, each put down and lifted ({tools})")
    check(shown and shown[-1] == {}, "no finger left down")
    three = [s for s in shown if len(s) == 3]
    two = [s for s in shown if len(s) == 2]
    # The swipe: 120 CSS px is 19.05 mm (1/160 inch a px), 762 pad units
    # (40 a mm), less what the rules held back for a tap's wobble.
    moved = three[-1][0][0] - three[0][0][0] if three else 0
    check(600 <= moved <= 770, f"the swipe moved the fingers {moved} pad units for 762 sent")
    # The pinch: 80 px apart to 260, scale 3.25 from where the second
    # finger landed; the pad's row starts 18 mm (720 units) apart.
    spread = [s[1][0] - s[0][0] for s in two]
    check(bool(spread) and spread[0] < 900 and 2100 <= spread[-1] <= 2400,
          f"the pinch spread the two fingers from {spread[:1]} to {spread[-1:]} pad units (720 x 3.25 = 2340)")
    check(stats["total_wheel_hires"] != 0 and stats["total_dx"] == 0, "two fingers together still scroll, and nothing moved the pointer")


IDLE_CONNECTIONS = 100
WEB_MAX_CONNECTIONS = 32  # REMOLO_WEB_MAX_CONNECTIONS

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--remolo", default=os.environ.get("REMOLO_BIN", os.path.join(ROOT, ".build", "debug", "remolo")))
    ap.add_argument("--screenshot")
    ap.add_argument("--screenshot-keyboard", help="the page with the special-keys row open, Ctrl latched")
    args = ap.parse_args()
    if not os.path.exists(args.remolo):
        print(f"browser: no remolo binary at {args.remolo}; run `swift build --product remolo` (or pass --remolo)")
        return 2
    tmp = tempfile.mkdtemp(prefix="remolo-browser-")
    os.chmod(tmp, 0o700)
    sink = os.path.join(tmp, "frames")
    rx = Receiver(args.remolo, os.path.join(tmp, "config"), sink)
    b = cdp.Browser(flags=RTC_FLAGS)
    expected_px = [0, 0]
    expected_wheel = [0, 0]
    expected_buttons = []
    datagrams = 0
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing from the URL fragment")
        rx.wait_for(r"\(newly paired\)")
        check(b.eval("location.hash") == "", "the code left the address bar once used")
        check(b.eval("document.visibilityState") == "visible", "the page is visible (heartbeats run)")
        b.wait_for("remolo.transport && remolo.transport.path === 'datachannel'", 12, "the page's data channel")
        check(True, "the page's datagrams ride its data channel")
        home_screen_app(b)
        f = Fingers(b)
        f.stroke([(120, 420)], (6, -3), 40)            # move
        time.sleep(0.3)
        f.stroke([(150, 300), (230, 300)], (0, 9), 20)  # scroll down with the fingers: glide
        time.sleep(1.5)
        f.tap([(200, 400)])                             # left click
        time.sleep(0.5)
        f.tap([(160, 400), (240, 400)])                 # right click
        time.sleep(0.5)
        relayed = hostile(rx.web_port)                  # while the session lives
        f.tap_and_drag((200, 400), (-5, 4), 30)         # tap, then touch and move: a drag
        settle(b)
        if args.screenshot:
            b.screenshot(args.screenshot)

        # A reload: a new session from the stored keys, no pairing.
        b.reload()
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "reconnection after a reload")
        # The first page's totals up to its pagehide (nothing is sent after it).
        sent = json.loads(b.eval("sessionStorage.getItem('remolo.previousSent')"))
        print("page sent (first load):", json.dumps(sent))
        check(sent["scrollQ8"][0] > 0 and sent["motionQ8"][0] > 0, "motion and scroll were sent")
        check(sent["heartbeats"] > 0, "heartbeats while still")
        expected_px[0] += round_half_away(sent["motionQ8"][0])
        expected_px[1] += round_half_away(sent["motionQ8"][1])
        expected_wheel[0] += round_half_away(sent["scrollQ8"][0])
        expected_wheel[1] += round_half_away(sent["scrollQ8"][1])
        expected_buttons += [(x["code"], 1 if x["down"] else 0) for x in sent["buttons"]]
        datagrams += sent["datagrams"]
        time.sleep(0.3)
        paired = sum(1 for l in rx.lines if "newly paired" in l)
        sessions = sum(1 for l in rx.lines if re.search(r"^session \S+ from ", l))
        check(paired == 1 and sessions == 2, f"the reload opened a session without pairing ({sessions} sessions, {paired} pairing)")
        f.stroke([(100, 500)], (4, 4), 25)
        settle(b)
        # Away to a page of the same origin that is not the trackpad: the
        # pagehide sends the bye and keeps the final totals.
        b.navigate(rx.url.split("#")[0] + "no-such-page")
        sent2 = json.loads(b.eval("sessionStorage.getItem('remolo.previousSent')"))
        print("page sent (after reload):", json.dumps(sent2))
        expected_px[0] += round_half_away(sent2["motionQ8"][0])
        expected_px[1] += round_half_away(sent2["motionQ8"][1])
        expected_wheel[0] += round_half_away(sent2["scrollQ8"][0])
        expected_wheel[1] += round_half_away(sent2["scrollQ8"][1])
        expected_buttons += [(x["code"], 1 if x["down"] else 0) for x in sent2["buttons"]]
        datagrams += sent2["datagrams"]
        stats = rx.stop()

        # The receiver restarts (same ports, same config): the open page
        # notices, and reconnects by itself with its stored keys.
        rx3 = Receiver(args.remolo, os.path.join(tmp, "config"), os.path.join(tmp, "frames3"),
                       listen=f"127.0.0.1:{rx.port}", web=f"127.0.0.1:{rx.web_port}", pair=False)
        try:
            b.navigate(rx.url.split("#")[0])
            b.wait_for("window.remolo && remolo.state === 'connected'", 15, "a session with the restarted receiver")
            rx3.stop()  # the page sees its session end ...
            b.wait_for("window.remolo && remolo.state === 'reconnecting'", 10, "the page noticing the receiver left")
            detail = b.wait_for("remolo.diagnostics.link === 'unreachable' && remolo.detail", 10, "the next try failing")
            check("cannot reach the receiver" in detail, f"the receiver stopped: the page says it is unreachable ({detail!r})")
            rx3 = Receiver(args.remolo, os.path.join(tmp, "config"), os.path.join(tmp, "frames3"),
                           listen=f"127.0.0.1:{rx.port}", web=f"127.0.0.1:{rx.web_port}", pair=False)
            b.wait_for("window.remolo && remolo.state === 'connected'", 15, "reconnection by itself")  # ... and comes back
            f.stroke([(100, 500)], (-3, 2), 20)
            settle(b)
            b.navigate(rx.url.split("#")[0] + "no-such-page")
            sent3 = json.loads(b.eval("sessionStorage.getItem('remolo.previousSent')"))
        finally:
            stats3 = rx3.stop()
        check(not any("newly paired" in l for l in rx3.lines), "no pairing after the receiver restarted")
        check(stats3["opened"] == sent3["datagrams"] and [stats3["total_dx"], stats3["total_dy"]] ==
              [round_half_away(sent3["motionQ8"][0]), round_half_away(sent3["motionQ8"][1])],
              f"after reconnecting by itself: {stats3['opened']} datagrams opened of {sent3['datagrams']}, "
              f"pointer {stats3['total_dx']}, {stats3['total_dy']}")
    finally:
        b.close()
        if rx.proc.poll() is None:
            stats = rx.stop()
    print("receiver:", json.dumps({k: stats[k] for k in ("datagrams", "opened", "drops", "total_dx", "total_dy",
                                                          "total_wheel_hires", "total_hwheel_hires", "buttons")}))
    web = next((l for l in rx.lines if l.startswith("web: ")), "")
    print(web)
    counts = json.loads(web[len("web: "):]) if web else {}
    # The idle connections are counted: beyond the cap at accept, the rest
    # when their TLS setup timed out (the page's own connections are live).
    check(counts.get("refused_full", 0) >= IDLE_CONNECTIONS - WEB_MAX_CONNECTIONS
          and counts.get("refused_full", 0) + counts.get("tls_failed", 0) >= IDLE_CONNECTIONS,
          f"idle connections counted: refused_full + tls_failed >= {IDLE_CONNECTIONS} ({web})")
    check(counts.get("closed_protocol", 0) >= 3, f"bad WebSocket frames counted as closed_protocol ({web})")
    check(stats["opened"] == datagrams, f"every datagram the page sent opened ({stats['opened']} of {datagrams})")
    drops = {k: v for k, v in stats["drops"].items() if v}
    check(drops == {"unknown_session": relayed}, f"the only drop is the forged datagram ({drops})")
    check([stats["total_dx"], stats["total_dy"]] == expected_px, f"pointer total {stats['total_dx']}, {stats['total_dy']} == page's {expected_px}")
    check([stats["total_wheel_hires"], stats["total_hwheel_hires"]] == expected_wheel,
          f"wheel total {stats['total_wheel_hires']}, {stats['total_hwheel_hires']} == page's {expected_wheel}")
    rel, keys = sink_totals(sink)
    check([rel.get(REL_X, 0), rel.get(REL_Y, 0)] == expected_px, f"sink REL_X/REL_Y {rel.get(REL_X, 0)}, {rel.get(REL_Y, 0)}")
    check([rel.get(REL_WHEEL_HI_RES, 0), rel.get(REL_HWHEEL_HI_RES, 0)] == expected_wheel,
          f"sink REL_WHEEL_HI_RES/REL_HWHEEL_HI_RES {rel.get(REL_WHEEL_HI_RES, 0)}, {rel.get(REL_HWHEEL_HI_RES, 0)}")
    check(keys == expected_buttons, f"sink buttons {keys} == page's {expected_buttons}")
    check(expected_buttons == [(BTN_LEFT, 1), (BTN_LEFT, 0), (BTN_RIGHT, 1), (BTN_RIGHT, 0), (BTN_LEFT, 1), (BTN_LEFT, 0)],
          "tap: left click; two-finger tap: right click; tap-and-drag: left held over the drag")

    # A wrong code: refused, and the real one is burned.
    rx2 = Receiver(args.remolo, os.path.join(tmp, "config2"), os.path.join(tmp, "frames2"))
    b = cdp.Browser(flags=RTC_FLAGS)
    try:
        good = rx2.url.split("#pair=")[1]
        wrong = ("0000" if not good.startswith("0000") else "1111") + good[4:]
        b.navigate(rx2.url.split("#")[0] + "#pair=" + wrong)
        detail = b.wait_for("window.remolo && remolo.state === 'refused' && remolo.detail", 15, "a refusal of the wrong code")
        check("wrong pairing code" in detail, f"a wrong code is refused: {detail}")
        b.navigate(rx2.url.split("#")[0] + "no-such-page")  # a new document for the next URL
        b.navigate(rx2.url)
        detail = b.wait_for("window.remolo && remolo.state === 'refused' && remolo.detail", 15, "a refusal of the burned code")
        check("no pairing code is active" in detail, f"the right code, after a wrong one, is burned: {detail}")
    finally:
        b.close()
        stats2 = rx2.stop()
    check(stats2["sessions_added"] == 0, "no session came of it")

    gestures(args.remolo, tmp)
    typing(args.remolo, tmp, args.screenshot_keyboard)
    typing_refused(args.remolo, tmp)
    connection_failures_and_tips(args.remolo, tmp)

    print(f"browser: {'all checks passed' if not failures else f'{len(failures)} failed'}")
    subprocess.run(["rm", "-rf", tmp])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
