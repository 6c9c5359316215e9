"""WebKitGTK driven through WebKitWebDriver (classic W3C WebDriver over
HTTP; Debian's webkit2gtk-driver) in MiniBrowser under Xvfb: start, open a
page, evaluate, act. The same methods as bidi.Browser."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from pagewait import PageWait

MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Xvfb:
    """A display of its own (-displayfd picks a free number)."""
    def __init__(self, width=390, height=780):
        r, w = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                                     pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            self.display = ":" + f.readline().strip()

    def close(self):
        self.proc.terminate()
        self.proc.wait(5)


class Browser(PageWait):
    def __init__(self, width=390, height=780, insecure=True, env=None, wrap=()):
        """wrap: a command WebKitWebDriver (and so the browser) runs under,
        e.g. one giving it a mount namespace with another trust store."""
        self.x = Xvfb(width, height)
        self.home = tempfile.mkdtemp(prefix="remolo-webkit-")
        self.port = free_port()
        self.env = {**os.environ, "DISPLAY": self.x.display, "HOME": self.home,
                    "XDG_DATA_HOME": os.path.join(self.home, "data"), "XDG_CACHE_HOME": os.path.join(self.home, "cache"),
                    "XDG_CONFIG_HOME": os.path.join(self.home, "config"), "XDG_RUNTIME_DIR": self.home,
                    # No GPU here: software paint, no accelerated compositing.
                    "WEBKIT_DISABLE_COMPOSITING_MODE": "1", "LIBGL_ALWAYS_SOFTWARE": "1", **(env or {})}
        self.env.pop("WAYLAND_DISPLAY", None)
        self.proc = subprocess.Popen(list(wrap) + ["WebKitWebDriver", f"--port={self.port}"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(self.base + "/status", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        caps = {"acceptInsecureCerts": insecure,
                "webkitgtk:browserOptions": {"binary": MINIBROWSER, "args": ["--automation"]}}
        self.session = None
        self.session = self._req("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]
        self.window = self._req("GET", f"/session/{self.session}/window")
        self._req("POST", self.s("/window/rect"), {"x": 0, "y": 0, "width": width, "height": height})
        self.pointer_type = "mouse"  # WebKitWebDriver plays a touch source as a mouse

    def _req(self, method, path, body=None, timeout=60):
        data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.load(r).get("value")
        except urllib.error.HTTPError as e:
            v = json.load(e).get("value", {})
            raise RuntimeError(f"{method} {path}: {v.get('error')}: {v.get('message')}") from None

    def s(self, path):
        return f"/session/{self.session}{path}"

    def navigate(self, url):
        self._req("POST", self.s("/url"), {"url": url})

    def reload(self):
        self._req("POST", self.s("/refresh"))

    def eval(self, expression):
        # Async so that a promise's value comes back like CDP's awaitPromise.
        return self._req("POST", self.s("/execute/async"), {"script": (
            "const done = arguments[arguments.length - 1];"
            f"Promise.resolve().then(() => ({expression})).then(done, (e) => done({{__error: String(e)}}));"), "args": []})

    def eval_checked(self, expression):
        v = self.eval(expression)
        if isinstance(v, dict) and "__error" in v:
            raise RuntimeError(f"{expression}: {v['__error']}")
        return v

    def poll(self, expression):
        return self.eval_checked(expression)

    def actions(self, sources):
        self._req("POST", self.s("/actions"), {"actions": sources})
        self._req("DELETE", self.s("/actions"))

    def click(self, selector):
        el = self._req("POST", self.s("/element"), {"using": "css selector", "value": selector})
        self._req("POST", self.s(f"/element/{list(el.values())[0]}/click"))

    def center(self, selector):
        r = self.eval_checked(f"JSON.stringify(document.querySelector({json.dumps(selector)}).getBoundingClientRect())")
        r = json.loads(r)
        return r["x"] + r["width"] / 2, r["y"] + r["height"] / 2

    def hide(self):
        self._req("POST", self.s("/window/minimize"))

    def show(self, _):
        self._req("POST", self.s("/window/rect"), {"x": 0, "y": 0})
        self._req("POST", self.s("/window"), {"handle": self.window})

    def close(self):
        try:
            if self.session:
                self._req("DELETE", self.s(""), timeout=10)
        except Exception:
            pass
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.x.close()
            shutil.rmtree(self.home, ignore_errors=True)
