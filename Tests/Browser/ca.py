#!/usr/bin/python3
"""The phone page with the receiver's own certificate authority
(`remolo receive --web --ca`) in Chromium, Firefox ESR and WebKitGTK.

Each engine, given no certificate exception of any kind (no
acceptInsecureCerts, no --ignore-certificate-errors):

- with the authority trusted the way a user would trust it on that
  engine's platform, loads the page from the pairing URL, runs its script
  and opens its WebSocket: the page pairs and connects;
- without it, refuses the page with a certificate error.

How each engine is given the authority:
- Chromium: the user's NSS database, $HOME/.pki/nssdb (certutil), with
  HOME a directory of the test's;
- Firefox: the profile's own NSS database, cert9.db (certutil);
- WebKitGTK: GnuTLS's system trust, the file /etc/ssl/certs/ca-certificates.crt
  (Debian's GnuTLS reads that file; glib-networking has no other way in):
  WebKitWebDriver runs in a mount namespace of its own (unshare) where a
  copy of that bundle with the authority appended is bound over the file.

The authority comes from the receiver's /ca.crt, fetched with the
authority from the config directory as the only trust anchor; it must be
the same certificate.

Usage: Tests/Browser/ca.py [--remolo BIN] [ENGINE...]   (chromium, firefox, webkit)
Closes with `ca: N passed, N failed`.
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (Receiver, check)

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def fetch(port, path, cafile):
    """GET path over TLS, verifying the receiver's certificate with cafile
    as the only anchor and checking the name 127.0.0.1. (status, type, body)"""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields.get("content-type"), body


def nssdb(directory, ca_pem):
    os.makedirs(directory, exist_ok=True)
    subprocess.run(["certutil", "-N", "-d", f"sql:{directory}", "--empty-password"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # C: a trusted authority for TLS servers (the trust a user's "install" gives it).
    subprocess.run(["certutil", "-A", "-d", f"sql:{directory}", "-n", "Remolo local CA", "-t", "C,,", "-i", ca_pem],
                   check=True)


# ---------------------------------------------------------------- engines

def chromium(tmp, ca_pem):
    import cdp
    env = None
    if ca_pem:
        home = os.path.join(tmp, "chromium-home")
        nssdb(os.path.join(home, ".pki", "nssdb"), ca_pem)
        env = {"HOME": home}
    return cdp.Browser(insecure=False, env=env)


def chromium_refused(b, url):
    r = b.call("Page.navigate", url=url)
    return r.get("errorText", "")


def firefox(tmp, ca_pem):
    import bidi
    return bidi.Browser(insecure=False, setup=(lambda profile: nssdb(profile, ca_pem)) if ca_pem else None)


def firefox_refused(b, url):
    try:
        b.navigate(url)
    except RuntimeError as e:
        return str(e)
    # Firefox shows its own error page in place of the document.
    uri = b.eval("document.documentURI")
    return uri if uri.startswith("about:certerror") else ""


def webkit(tmp, ca_pem):
    import webdriver
    wrap = ()
    if ca_pem:
        bundle = os.path.join(tmp, "ca-certificates.crt")
        with open(bundle, "w") as out:
            if os.path.exists(SYSTEM_BUNDLE):
                out.write(open(SYSTEM_BUNDLE).read())
            out.write(open(ca_pem).read())
        # As root a mount namespace alone; otherwise inside a user namespace
        # of one's own, where the bind mount is allowed too.
        user = () if os.geteuid() == 0 else ("--map-root-user",)
        wrap = ("unshare", *user, "--mount", "--propagation", "private", "sh", "-c",
                f'mount --bind "{bundle}" {SYSTEM_BUNDLE} && exec "$0" "$@"')
    return webdriver.Browser(insecure=False, wrap=wrap)


def webkit_refused(b, url):
    """WebKitWebDriver (2.50) answers the navigation without an error: the
    browser shows its own error page instead of the document (the bridge's
    counters, checked after, say the TLS handshake failed)."""
    try:
        b.navigate(url)
    except RuntimeError as e:
        return str(e)
    loaded = b.eval("!!window.remolo")
    return "" if loaded else f"no page (the document is {b.eval('location.href')}: " \
        f"{b.eval('document.body ? document.body.innerText : String()')!r})"


ENGINES = {
    "chromium": (chromium, chromium_refused, ("ERR_CERT_AUTHORITY_INVALID",)),
    "firefox": (firefox, firefox_refused, ("about:certerror", "SEC_ERROR_UNKNOWN_ISSUER", "insecure certificate")),
    "webkit": (webkit, webkit_refused, ("insecure certificate", "no page")),
}


def web_stats(rx):
    """The bridge's counters the receiver printed when it stopped."""
    line = next(l for l in reversed(rx.lines) if l.startswith("web: "))
    return json.loads(line[len("web: "):])


def engine(name, binary, tmp, config):
    make, refused, errors = ENGINES[name]
    t0 = time.time()
    print(f"== {name}", flush=True)
    ca_pem = os.path.join(config, "web-ca.pem")
    # Trusted: the page loads, its script runs and its WebSocket opens.
    rx = run.Receiver(binary, config, os.path.join(tmp, f"frames-{name}"), extra=["--ca"])
    try:
        status, ctype, der = fetch(rx.web_port, "/ca.crt", ca_pem)
        pem_der = ssl.PEM_cert_to_DER_cert(open(ca_pem).read())
        run.check(status == 200 and ctype == "application/x-x509-ca-cert" and der == pem_der,
                  f"{name}: /ca.crt is the authority of the config directory ({status}, {ctype}, {len(der)} bytes)")
        b = make(tmp, ca_pem)
        try:
            b.navigate(rx.url)
            b.wait_for("window.remolo && remolo.state === 'connected'", 20, "the page paired and connected")
            run.check(True, f"{name}: with the authority trusted and no exception, the page loaded, paired and connected")
            run.check(b.eval("window.isSecureContext") is True, f"{name}: a secure context")
            # The authority's own page: the download for this phone and the
            # SHA-256 the receiver printed, computed by the page from /ca.crt.
            b.navigate(rx.url.split("#")[0] + "ca.html")
            b.wait_for("document.body && document.body.dataset.ready", 10, "ca.html read /ca.crt")
            want = ":".join(f"{x:02X}" for x in hashlib.sha256(pem_der).digest())
            shown = b.eval("document.getElementById('fp').textContent")
            links = b.eval("[...document.querySelectorAll('a')].map((a) => a.getAttribute('href')).join(' ')")
            run.check(shown == want and "remolo.mobileconfig" in links and "ca.crt" in links,
                      f"{name}: ca.html shows the authority's SHA-256 ({shown[:23]}...) and both downloads ({links})")
        finally:
            b.close()
    finally:
        rx.stop()
    web = web_stats(rx)
    run.check(web["tls_failed"] == 0 and web["websockets"] >= 1,
              f"{name}: every TLS handshake succeeded and the WebSocket was taken ({web['tls_failed']} failed, "
              f"{web['websockets']} WebSockets)")
    # Not trusted: a certificate error, and not one request reaches the bridge.
    rx = run.Receiver(binary, config, os.path.join(tmp, f"frames-{name}"), pair=False, extra=["--ca"])
    try:
        b = make(tmp, None)
        try:
            why = refused(b, rx.url)
        finally:
            b.close()
    finally:
        rx.stop()
    web = web_stats(rx)
    run.check(any(e in why for e in errors), f"{name}: without the authority the page is refused: {why or 'it loaded'}")
    run.check(web["tls_failed"] >= 1 and web["requests"] == 0,
              f"{name}: the browser ended the TLS handshake; no request was made ({web['tls_failed']} handshakes "
              f"failed, {web['requests']} requests)")
    print(f"   {name}: {time.time() - t0:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--remolo", default=os.path.join(run.ROOT, ".build", "debug", "remolo"))
    ap.add_argument("engines", nargs="*", default=list(ENGINES))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="remolo-ca-")
    os.chmod(tmp, 0o700)
    # One config directory for every engine: the authority is made by the
    # first receiver and kept by the next ones.
    config = os.path.join(tmp, "config")
    t0 = time.time()
    fingerprints = set()
    try:
        for e in args.engines:
            try:
                engine(e, args.remolo, tmp, config)
            except Exception as ex:  # one engine's abort is its failure, not the others'
                run.check(False, f"{e}: {type(ex).__name__}: {ex}")
            fp = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in",
                                 os.path.join(config, "web-ca.pem")], capture_output=True, text=True).stdout
            fingerprints.add(fp.strip())
        run.check(len(fingerprints) == 1, f"one authority, made once and kept ({len(fingerprints)} seen)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    passed = run.checks - len(run.failures)
    print(f"ca: {time.time() - t0:.1f} s")
    print(f"ca: {passed} passed, {len(run.failures)} failed")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
