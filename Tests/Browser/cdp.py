"""Headless Chromium driven through the DevTools protocol (Debian's
chromium and python3-websocket): start, open a page, evaluate, touch."""
import json
import os
import subprocess
import tempfile
import time
import urllib.request

import websocket

from pagewait import PageWait


class Browser(PageWait):
    def __init__(self, width=390, height=780, insecure=True, env=None, flags=()):
        """insecure: accept any certificate (the self-signed one); env: the
        browser's environment on top of this one's (HOME, whose
        .pki/nssdb holds the certificate authorities a user trusts);
        flags: more command-line switches."""
        self.profile = tempfile.mkdtemp(prefix="remolo-chromium-")
        self.proc = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}"]
            # The receiver's certificate is self-signed; a person accepts
            # it once in the warning, the test by flag.
            + (["--ignore-certificate-errors"] if insecure else [])
            + list(flags) + [f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        for _ in range(100):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
                page = next(t for t in targets if t["type"] == "page")
                break
            except Exception:
                time.sleep(0.05)
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=2, mobile=True)
        self.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=5)

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def navigate(self, url):
        self._replace(lambda: self.call("Page.navigate", url=url))

    def reload(self):
        self._replace(lambda: self.call("Page.reload", ignoreCache=True))

    def _replace(self, go):
        # Returns once the new document has loaded, so that nothing read
        # afterwards comes from the old one.
        try:
            self.eval("window.__cdpOld = true")
        except RuntimeError:
            pass
        go()
        self.wait_for("!window.__cdpOld && document.readyState === 'complete'", 15, "the new document")

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def touch(self, kind, points, wait=True):
        """kind: touchStart, touchMove, touchEnd; points: [(id, x, y)].
        wait=False sends without waiting for the answer, so that a burst
        (a tap's start and end) reaches the page back to back whatever the
        load on this machine; the next call() skips the answers."""
        params = {"type": kind, "touchPoints": [{"x": x, "y": y, "id": i, "radiusX": 4, "radiusY": 4, "force": 1}
                                                for i, x, y in points]}
        if wait:
            self.call("Input.dispatchTouchEvent", **params)
        else:
            self.next_id += 1
            self.ws.send(json.dumps({"id": self.next_id, "method": "Input.dispatchTouchEvent", "params": params}))

    def center(self, selector):
        """The middle of an element, in CSS pixels (where a finger lands)."""
        r = json.loads(self.eval(f"JSON.stringify(document.querySelector({json.dumps(selector)}).getBoundingClientRect())"))
        return r["x"] + r["width"] / 2, r["y"] + r["height"] / 2

    def click(self, selector):
        """A click with a user activation (what lets a page focus a field and open the phone's keyboard)."""
        r = self.call("Runtime.evaluate", expression=f"document.querySelector({json.dumps(selector)}).click()", userGesture=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"click {selector}: {r['exceptionDetails']}")

    # The phone's soft keyboard, as Chrome on Android delivers it to a page.
    def insert_text(self, text):
        """A keyboard committing text (a letter typed, a word committed): beforeinput/input insertText."""
        self.call("Input.insertText", text=text)

    def compose(self, text):
        """An IME's composition (Gboard's underlined word) becoming `text`: insertCompositionText."""
        self.call("Input.imeSetComposition", text=text, selectionStart=len(text), selectionEnd=len(text))

    def soft_key(self, command):
        """A key of a soft keyboard: keydown/keyup with keyCode 229 (Android reports no key), the edit
        itself done by Chrome's editing command (deleteBackward, insertNewline) with its beforeinput."""
        self.call("Input.dispatchKeyEvent", type="rawKeyDown", windowsVirtualKeyCode=229, key="Unidentified", commands=[command])
        self.call("Input.dispatchKeyEvent", type="keyUp", windowsVirtualKeyCode=229, key="Unidentified")

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            subprocess.run(["rm", "-rf", self.profile])
