"""Firefox ESR driven through WebDriver BiDi (its remote agent, no
geckodriver): start, open a page, evaluate, touch. The same methods as
cdp.Browser where Firefox can do the same."""
import json
import os
import re
import subprocess
import tempfile
import time

import websocket

from pagewait import PageWait

# Nothing of Firefox's own may leave the machine: its services are off,
# and every connection that is not to loopback goes to a proxy that is
# not there (port 9, discard).
PREFS = {
    "network.proxy.type": 1, "network.proxy.http": "127.0.0.1", "network.proxy.http_port": 9,
    "network.proxy.ssl": "127.0.0.1", "network.proxy.ssl_port": 9,
    "network.proxy.no_proxies_on": "127.0.0.1,localhost", "network.proxy.allow_hijacking_localhost": False,
    "network.captive-portal-service.enabled": False, "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True, "network.prefetch-next": False,
    "services.settings.server": "data:,#remote-settings-off", "app.normandy.enabled": False,
    "messaging-system.rsexperimentloader.enabled": False, "app.update.disabledForTesting": True,
    "browser.safebrowsing.malware.enabled": False, "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False, "browser.safebrowsing.provider.mozilla.updateURL": "",
    "datareporting.policy.dataSubmissionEnabled": False, "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False, "toolkit.telemetry.server": "", "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False, "media.gmp-manager.url": "", "browser.region.network.url": "",
    "browser.startup.homepage_override.mstone": "ignore", "browser.newtabpage.enabled": False,
    "browser.shell.checkDefaultBrowser": False, "geo.provider.network.url": "",
    # Touch events for the page (a phone's), as Firefox for Android has them.
    "dom.w3c_touch_events.enabled": 1,
}


class Browser(PageWait):
    def __init__(self, width=390, height=780, prefs=None, insecure=True, setup=None):
        """setup: called with the profile's directory before Firefox starts
        (to add a certificate authority to its cert9.db)."""
        self.profile = tempfile.mkdtemp(prefix="remolo-firefox-")
        if setup:
            setup(self.profile)
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for k, v in {**PREFS, **(prefs or {})}.items():
                f.write(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n")
        self.log = open(os.path.join(self.profile, "firefox.log"), "w+")
        self.proc = subprocess.Popen(
            ["firefox-esr", "--headless", "--no-remote", "--profile", self.profile, "--remote-debugging-port", "0",
             "about:blank"], stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "MOZ_HEADLESS_WIDTH": str(width), "MOZ_HEADLESS_HEIGHT": str(height)})
        url = None
        for _ in range(400):
            self.log.seek(0)
            m = re.search(r"WebDriver BiDi listening on (ws://\S+)", self.log.read())
            if m:
                url = m.group(1)
                break
            time.sleep(0.05)
        if not url:
            self.close()
            raise AssertionError("Firefox never opened its WebDriver BiDi port")
        self.ws = websocket.create_connection(url + "/session", suppress_origin=True)
        self.next_id = 0
        self.events = []
        # The receiver's certificate is self-signed; a person accepts it
        # once in the warning, the test by capability.
        self.call("session.new", capabilities={"alwaysMatch": {"acceptInsecureCerts": insecure}})
        self.context = self.call("browsingContext.getTree")["contexts"][0]["context"]
        self.call("browsingContext.setViewport", context=self.context,
                  viewport={"width": width, "height": height}, devicePixelRatio=2)
        self.pointer_type = "touch"

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if msg.get("type") == "error":
                    raise RuntimeError(f"{method}: {msg.get('error')}: {msg.get('message')}")
                return msg.get("result", {})
            if msg.get("type") == "event":
                self.events.append(msg)

    def navigate(self, url):
        self.call("browsingContext.navigate", context=self.context, url=url, wait="complete")

    def reload(self):
        self.call("browsingContext.reload", context=self.context, wait="complete")

    def eval(self, expression):
        r = self.call("script.evaluate", expression=expression, awaitPromise=True,
                      target={"context": self.context}, resultOwnership="none", userActivation=True)
        if r.get("type") == "exception":
            raise RuntimeError(f"{expression}: {r['exceptionDetails'].get('text')}")
        return unwrap(r["result"])

    def actions(self, sources):
        self.call("input.performActions", context=self.context, actions=sources)

    def click(self, selector):
        self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    def center(self, selector):
        r = json.loads(self.eval(f"JSON.stringify(document.querySelector({json.dumps(selector)}).getBoundingClientRect())"))
        return r["x"] + r["width"] / 2, r["y"] + r["height"] / 2

    def hide(self):
        """Another tab in front: the page is hidden. Returns the tab."""
        other = self.call("browsingContext.create", type="tab")["context"]
        self.call("browsingContext.activate", context=other)
        return other

    def show(self, other):
        self.call("browsingContext.close", context=other)
        self.call("browsingContext.activate", context=self.context)

    def close(self):
        try:
            if getattr(self, "ws", None):
                try:
                    self.call("session.end")
                except Exception:
                    pass
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            subprocess.run(["rm", "-rf", self.profile])


def unwrap(v):
    """A BiDi RemoteValue as a Python value."""
    t = v.get("type")
    if t in ("undefined", "null"):
        return None
    if t in ("string", "number", "boolean"):
        n = v.get("value")
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"), "-0": 0}.get(n, n) \
            if t == "number" and isinstance(n, str) else n
    if t == "array":
        return [unwrap(x) for x in v.get("value", [])]
    if t == "object":
        return {k if isinstance(k, str) else unwrap(k): unwrap(x) for k, x in v.get("value", [])}
    return v.get("value")
