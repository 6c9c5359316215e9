#!/usr/bin/python3
"""The phone page's motion over its WebRTC data channel, in real browsers,
against a real receiver, under real loss.

Runs inside a network namespace that Tests/Browser/datachannel makes (a
veth pair with addresses and a default route: browsers gather no ICE
candidates on loopback alone). There:

1. Chromium pairs with `remolo receive --web`, its page opens the data
   channel by itself, and its motion, scroll and clicks arrive through it
   (the receiver's --stats-json names the path; the endpoint relayed them);
   totals exact.
2. Strangers on the UDP port (STUN with wrong credentials, a DTLS
   ClientHello from an address that passed no check) get nothing back and
   are counted.
3. The UDP port blocked (nftables) while the finger moves: the page falls
   back to the WebSocket within the stated time and says why; unblocked,
   it returns; totals exact across both switches.
4. Loss measured: the same drags over the channel, over the WebSocket and
   from the native UDP sender, under 3% random loss and under 250 ms holes
   every 3 s, each recorded with --record-arrivals; lateness over the
   fastest arrival, p50/p95/p99/max.
5. Firefox ESR: the page opens the channel and its motion arrives there.

Usage (as root, inside the namespace): datachannel.py --remolo BIN [--only chromium|firefox|loss]
Prints `datachannel: N passed, M failed`.
"""
import argparse
import csv
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
import run  # noqa: E402
from run import check, round_half_away, sink_totals  # noqa: E402

ADDR = os.environ.get("REMOLO_DC_ADDR", "10.77.0.1")
WEB = 18443
RX = 17420
OPEN_S = 12          # the page's first channel opens within this (ICE, DTLS, SCTP; slow machines)
FALLBACK_S = 3       # a blocked channel: back on the WebSocket within this (a 500 ms check, 2 intervals)
RETURN_S = 12        # unblocked: the channel back within this (the page retries after 1, 2, 4, 8 s)


class Receiver:
    """`remolo receive` in this namespace, its lines and --stats-json objects."""

    def __init__(self, binary, config, sink, pair=False, extra=()):
        os.makedirs(config, mode=0o700, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "receive", "--listen", f"{ADDR}:{RX}", "--web", f"{ADDR}:{WEB}", "--sink", sink,
             "--stats-json", "--stats", "0.5", "--no-announce"] + (["--pair"] if pair else []) + list(extra),
            env={**os.environ, "REMOLO_CONFIG_DIR": config}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.wait_for(r"^pair a phone: (\S+)" if pair else r"^phone page: (\S+)").group(1)
        self.code = self.wait_for(r"^pairing code: (\S+)").group(1) if pair else None

    _read = run.Receiver._read
    wait_for = run.Receiver.wait_for

    def stats(self):
        with self.cond:
            objs = [l for l in self.lines if l.startswith("{")]
        return json.loads(objs[-1]) if objs else {}

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(15)
        time.sleep(0.1)
        check(self.proc.returncode == 0, f"the receiver stopped cleanly on SIGINT (exit {self.proc.returncode})")
        return self.stats()


def nft(script):
    subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True)


def nft_reset():
    nft("table inet remolo_dc\ndelete table inet remolo_dc\n"
        "table inet remolo_dc {\n chain out { type filter hook output priority 0; policy accept; }\n"
        " chain holes { }\n}\n")
    nft("add rule inet remolo_dc out jump holes\n")


def drop(rules):
    """rules: nft rule bodies for the output chain (this namespace's every
    packet passes it once: browser, receiver and bridge are all here)."""
    nft("".join(f"add rule inet remolo_dc out {r}\n" for r in rules))


def flush_rules():
    nft("flush chain inet remolo_dc out\nflush chain inet remolo_dc holes\nadd rule inet remolo_dc out jump holes\n")


class Holes(threading.Thread):
    """Every packet of `ports` (both protocols, both directions) dropped for
    250 ms every 3 s: what R1's holes look like."""

    def __init__(self, ports):
        super().__init__(daemon=True)
        self.ports = ",".join(str(p) for p in ports)
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(1.4):
            nft(f"add rule inet remolo_dc holes meta l4proto {{ tcp, udp }} th dport {{ {self.ports} }} drop\n"
                f"add rule inet remolo_dc holes meta l4proto {{ tcp, udp }} th sport {{ {self.ports} }} drop\n")
            time.sleep(0.25)
            nft("flush chain inet remolo_dc holes\n")
            self.stopping.wait(1.35)

    def stop(self):
        self.stopping.set()
        self.join()
        nft("flush chain inet remolo_dc holes\n")


def fresh_stats(rx, after=0.4):
    """The first --stats-json line printed `after` seconds from now or
    later. (Not one printed meanwhile: a line printed a millisecond after
    the call would count datagrams still in flight as lost.)"""
    time.sleep(after)
    with rx.cond:
        n = len(rx.lines)
    deadline = time.time() + 5
    while time.time() < deadline:
        with rx.cond:
            new = [l for l in rx.lines[n:] if l.startswith("{")]
        if new:
            return json.loads(new[0])
        time.sleep(0.05)
    raise AssertionError("the receiver printed no stats")


def path_of(rx):
    s = rx.stats().get("datachannel", {}).get("sessions", [])
    return s[-1].get("path") if s else None


def page_path(b):
    return b.eval("JSON.stringify(window.remolo && remolo.transport)")


def wait_path(b, path, timeout):
    t0 = time.time()
    b.wait_for(f"window.remolo && remolo.transport && remolo.transport.path === '{path}'", timeout,
               f"the page's datagrams on the {path}")
    return time.time() - t0


def shared(b):
    """The browser's protocol connection, one call at a time: a Mover
    touches from its thread while this one evaluates."""
    lock = threading.Lock()
    call = b.call

    def one(method, **params):
        with lock:
            return call(method, **params)
    b.call = one
    return b


class Mover(threading.Thread):
    """A finger that keeps moving (one touch, small steps at ~120 Hz of
    dispatch) until stopped: datagrams every frame."""

    def __init__(self, b, step=(1, 0)):
        super().__init__(daemon=True)
        self.b, self.step = b, step
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        x, y, k = 60.0, 300.0, 0
        with self.lock:
            self.b.touch("touchStart", [(1, x, y)])
        while not self.stopping.is_set():
            k += 1
            dx = self.step[0] * (1 if (k // 200) % 2 == 0 else -1)
            x += dx
            with self.lock:
                self.b.touch("touchMove", [(1, x, y + (k % 40) * 0.5)])
            time.sleep(0.008)
        with self.lock:
            self.b.touch("touchEnd", [])

    def stop(self):
        self.stopping.set()
        self.join()


def totals_check(what, sent, final, sink):
    rel, buttons = sink_totals(sink)
    want = [round_half_away(sent["motionQ8"][0]), round_half_away(sent["motionQ8"][1])]
    got = [final.get("total_dx"), final.get("total_dy")]
    check(got == want, f"{what}: motion exact ({got} played, {want} sent)")
    wheel = [round_half_away(sent["scrollQ8"][0]), round_half_away(sent["scrollQ8"][1])]
    check([final.get("total_wheel_hires"), final.get("total_hwheel_hires")] == wheel,
          f"{what}: scroll exact ({[final.get('total_wheel_hires'), final.get('total_hwheel_hires')]} of {wheel})")
    want_buttons = [(x["code"], 1 if x["down"] else 0) for x in sent["buttons"]]
    check(buttons == want_buttons, f"{what}: buttons exact ({len(buttons)} changes of {len(want_buttons)}; none held)")


# ------------------------------------------------------------------ 1-3

def chromium(binary, tmp):
    print("== Chromium: the page on its data channel", flush=True)
    nft_reset()
    sink = os.path.join(tmp, "frames-chromium")
    rx = Receiver(binary, os.path.join(tmp, "config"), sink, pair=True)
    b = shared(cdp.Browser())
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing from the URL fragment")
        took = wait_path(b, "datachannel", OPEN_S)
        check(True, f"the page opened its data channel by itself ({took:.1f} s after connecting)")
        time.sleep(1.2)
        check(path_of(rx) == "datachannel", f"the receiver's stats name the session's path ({path_of(rx)})")
        f = run.Fingers(b)
        f.stroke([(120, 420)], (6, -3), 40)
        time.sleep(0.3)
        f.stroke([(150, 300), (230, 300)], (0, 9), 20)   # two-finger scroll, then its glide
        time.sleep(1.5)
        f.tap([(200, 400)])
        time.sleep(0.5)
        f.tap([(160, 400), (240, 400)])
        time.sleep(0.5)
        f.tap_and_drag((200, 400), (-5, 4), 30)
        run.settle(b)
        strangers(rx)
        s = rx.stats()
        dc = s["datachannel"]
        row = dc["sessions"][-1]
        print("   endpoint:", json.dumps(dc["endpoint"]), flush=True)
        print("   session:", json.dumps(row), flush=True)
        # Heartbeats go on: every datagram sent before a stats line (by
        # more than its flight) opened by then, and none more than were sent.
        before = json.loads(b.eval("JSON.stringify(remolo.sent)"))["datagrams"]
        s = fresh_stats(rx)
        sent1 = json.loads(b.eval("JSON.stringify(remolo.sent)"))
        row = s["datachannel"]["sessions"][-1]
        ws = json.loads(page_path(b))["webSocketDatagrams"]
        check(row.get("channel_state") == "open" and row.get("channel_relayed", 0) >= before - ws,
              f"the endpoint relayed the channel's datagrams ({row.get('channel_relayed')} of {before} sent, "
              f"{ws} of them on the WebSocket before it opened)")
        check(before <= s["opened"] <= sent1["datagrams"],
              f"every datagram opened, none lost ({s['opened']}: {before} sent before the stats, {sent1['datagrams']} after)")
        check(sent1.get("buttonMessages", 0) == len(sent1["buttons"]),
              f"clicks went as button messages on the session ({sent1.get('buttonMessages', 0)} of {len(sent1['buttons'])})")

        # 3: the UDP port blocked while the finger moves, then opened again.
        m = Mover(b)
        m.start()
        time.sleep(1.5)
        drop([f"udp dport {WEB} drop", f"udp sport {WEB} drop"])
        t0 = time.time()
        took = wait_path(b, "websocket", FALLBACK_S + 2)
        print(f"   blocked: on the WebSocket after {took:.2f} s: {page_path(b)}", flush=True)
        check(took <= FALLBACK_S, f"UDP blocked: the page fell back to the WebSocket in {took:.2f} s (at most {FALLBACK_S})")
        check(json.loads(page_path(b))["reason"] == "stalled", "the page says why: the channel stalled")
        time.sleep(3)
        check(path_of(rx) == "websocket", f"the receiver's stats say websocket while blocked ({path_of(rx)})")
        flush_rules()
        took = wait_path(b, "datachannel", RETURN_S)
        print(f"   unblocked: back on the data channel after {took:.1f} s", flush=True)
        check(True, f"unblocked: the page returned to the data channel ({took:.1f} s)")
        time.sleep(1.5)
        m.stop()
        run.settle(b)
        sent = json.loads(b.eval("JSON.stringify(remolo.sent)"))
        print("   page sent:", json.dumps({k: sent[k] for k in ("motionQ8", "scrollQ8", "datagrams")}), flush=True)
        final = rx.stop()
        print("   receiver:", json.dumps({k: final.get(k) for k in ("opened", "recovered_packets", "total_dx", "total_dy", "drops")}), flush=True)
        check(final.get("recovered_packets", 0) >= 1, f"the motion lost in the block was recovered from the totals "
              f"({final.get('recovered_packets')} datagrams recovered motion)")
        totals_check("across two switches", sent, final, sink)
    finally:
        b.close()
        flush_rules()


def strangers(rx):
    """Bytes at the data channel's port from nobody the receiver signaled."""
    before = rx.stats()["datachannel"]["endpoint"]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ADDR, 0))
    s.settimeout(0.5)
    tid = os.urandom(12)
    user = b"nobody:stranger"
    attr = struct.pack(">HH", 0x0006, len(user)) + user + b"\0" * (-len(user) % 4)
    integrity = struct.pack(">HH", 0x0008, 20) + os.urandom(20)
    body = attr + integrity
    # A well-formed binding request (RFC 8489: its FINGERPRINT right) from
    # a user no session registered.
    head = struct.pack(">HHI", 0x0001, len(body) + 8, 0x2112A442) + tid
    crc = (zlib.crc32(head + body) ^ 0x5354554E) & 0xFFFFFFFF
    stun = head + body + struct.pack(">HHI", 0x8028, 4, crc)
    # A DTLS 1.2 ClientHello record header and a little of a hello: from an
    # address that passed no check, it must not reach OpenSSL.
    hello = bytes([22, 0xfe, 0xfd]) + b"\0" * 8 + struct.pack(">H", 60) + bytes([1]) + os.urandom(59)
    got = []
    # Neither STUN (first byte 0-3) nor DTLS (20-63; RFC 7983 section 7):
    # random bytes would be DTLS one time in six and counted there.
    other = bytes([200]) + os.urandom(47)
    for pkt in (stun, hello, other):
        s.sendto(pkt, (ADDR, WEB))
        try:
            got.append(s.recv(2048))
        except socket.timeout:
            pass
    s.close()
    time.sleep(0.8)
    after = rx.stats()["datachannel"]["endpoint"]
    check(got == [], f"strangers on the UDP port get nothing back ({len(got)} answers)")
    grew = {k: after[k] - before[k] for k in ("stun_unknown_user", "stun_bad_credentials", "dtls_stranger", "dropped_other")}
    check(grew["stun_unknown_user"] + grew["stun_bad_credentials"] >= 1 and grew["dtls_stranger"] >= 1
          and grew["dropped_other"] >= 1, f"and each is counted ({grew})")


# ------------------------------------------------------------------ 4

def lateness(path):
    rows = []
    with open(path) as f:
        for r in csv.reader(l for l in f if not l.startswith("#")):
            if r and r[0] != "send_us" and r[1]:
                rows.append(int(r[1]) - int(r[0]))
    if not rows:
        return None
    lo = min(rows)
    late = sorted((d - lo) / 1000 for d in rows)

    def q(p):
        return late[min(len(late) - 1, int(p * (len(late) - 1) + 0.5))]
    return {"n": len(late), "p50": q(0.5), "p95": q(0.95), "p99": q(0.99), "max": late[-1],
            "over50": sum(1 for x in late if x > 50)}


def loss(binary, tmp):
    print("== loss, measured: the data channel, the WebSocket and the native sender", flush=True)
    nft_reset()
    config = os.path.join(tmp, "config-loss")
    sink = os.path.join(tmp, "frames-loss")
    rx = Receiver(binary, config, sink, pair=True)
    b = shared(cdp.Browser())
    results = {}
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 15, "pairing")
        rx.stop()
        # The native sender pairs once, before any loss: each measured run
        # is then one session (--record-arrivals records the first).
        sender_cfg = os.path.join(tmp, "config-sender")
        os.makedirs(sender_cfg, mode=0o700, exist_ok=True)
        rx = Receiver(binary, config, sink, pair=True)
        p = subprocess.run([binary, "send", "--to", f"{ADDR}:{RX}", "--pair", rx.code, "--seconds", "0"],
                           env={**os.environ, "REMOLO_CONFIG_DIR": sender_cfg}, capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"the native sender paired (exit {p.returncode}) {p.stderr.strip()[-200:]}")
        rx.stop()
        for cond in ("random 3%", "holes 250 ms / 3 s"):
            for how in ("datachannel", "websocket", "native"):
                trace = os.path.join(tmp, f"arrivals-{how}-{cond[:4]}.csv")
                rx = Receiver(binary, config, sink, extra=["--record-arrivals", trace])
                if how == "native":
                    port = RX
                else:
                    port = WEB
                    b.eval(f"localStorage.setItem('remolo.settings', JSON.stringify({{...JSON.parse(localStorage.getItem('remolo.settings') || '{{}}'), dataChannel: {str(how == 'datachannel').lower()}}}))")
                    b.navigate(rx.url)
                    b.wait_for("window.remolo && remolo.state === 'connected'", 15, "the page connected")
                    wait_path(b, how, OPEN_S)
                holes = None
                if cond.startswith("random"):
                    drop([f"meta l4proto {{ tcp, udp }} th dport {port} numgen random mod 1000 < 30 drop",
                          f"meta l4proto {{ tcp, udp }} th sport {port} numgen random mod 1000 < 30 drop"])
                else:
                    holes = Holes([port])
                    holes.start()
                if how == "native":
                    p = subprocess.run([binary, "send", "--to", f"{ADDR}:{RX}", "--gesture", "circle",
                                        "--seconds", "9", "--rate", "60"],
                                       env={**os.environ, "REMOLO_CONFIG_DIR": sender_cfg}, capture_output=True, text=True, timeout=60)
                    check(p.returncode == 0, f"native sender under {cond}: exit {p.returncode} {p.stderr.strip()[-200:]}")
                else:
                    m = Mover(b)
                    m.start()
                    time.sleep(9)
                    m.stop()
                if holes:
                    holes.stop()
                flush_rules()
                time.sleep(0.5)
                if how != "native":
                    check(json.loads(page_path(b))["path"] == how, f"{how} under {cond}: the page stayed on it")
                rx.stop()
                results[(cond, how)] = lateness(trace)
                print(f"   {cond:>20} {how:>11}: {json.dumps(results[(cond, how)])}", flush=True)
    finally:
        b.close()
        flush_rules()
    print("\n| loss | path | datagrams | p50 ms | p95 ms | p99 ms | max ms | over 50 ms late |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for (cond, how), r in results.items():
        if r:
            print(f"| {cond} | {how} | {r['n']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | {r['max']:.1f} | {r['over50']} |")
    print(flush=True)
    for cond in ("random 3%", "holes 250 ms / 3 s"):
        dc, ws, nat = (results.get((cond, h)) for h in ("datachannel", "websocket", "native"))
        check(dc is not None and ws is not None and nat is not None, f"{cond}: all three paths recorded arrivals")
        if not (dc and ws and nat):
            continue
        # The channel does not wait for a lost datagram; the WebSocket does.
        # Within 20 ms of the native sender: the browser's own SCTP and DTLS
        # and a headless browser's scheduling on two loaded cores (5-10 ms
        # measured), well short of a WebSocket's stalls (100 ms and more).
        check(dc["p95"] <= nat["p95"] + 20, f"{cond}: the channel's p95 ({dc['p95']:.1f} ms) is near the native sender's ({nat['p95']:.1f} ms)")
    holes_dc, holes_ws = results.get(("holes 250 ms / 3 s", "datachannel")), results.get(("holes 250 ms / 3 s", "websocket"))
    if holes_dc and holes_ws:
        check(holes_ws["p99"] > 100 and holes_ws["p99"] > 3 * holes_dc["p99"],
              f"under holes the WebSocket shows its head-of-line stalls (p99 {holes_ws['p99']:.0f} ms, the channel's {holes_dc['p99']:.1f} ms)")


# ------------------------------------------------------------------ 5

def firefox(binary, tmp):
    print("== Firefox ESR: the page on its data channel", flush=True)
    import bidi
    nft_reset()
    sink = os.path.join(tmp, "frames-firefox")
    rx = Receiver(binary, os.path.join(tmp, "config-firefox"), sink, pair=True, extra=["--keymap", "us"])
    b = shared(bidi.Browser(prefs={"network.proxy.no_proxies_on": f"127.0.0.1,localhost,{ADDR}",
                            "media.peerconnection.ice.obfuscate_host_addresses": False}))
    try:
        b.navigate(rx.url)
        b.wait_for("window.remolo && remolo.state === 'connected'", 20, "pairing from the URL fragment")
        took = wait_path(b, "datachannel", OPEN_S)
        check(True, f"Firefox: the page opened its data channel ({took:.1f} s)")
        import engines
        g = engines.Gestures(b)
        g.stroke([(120, 420)], (6, -3), 30)
        time.sleep(0.5)
        g.tap([(200, 400)])
        time.sleep(1.0)
        run.settle(b)
        # Keys stay on the session (TCP) whatever carries the datagrams.
        n_typed = engines.typing("firefox", b)
        before = json.loads(b.eval("JSON.stringify(remolo.sent)"))["datagrams"]
        row = fresh_stats(rx)["datachannel"]["sessions"][-1]
        ws = json.loads(page_path(b))["webSocketDatagrams"]
        check(row.get("path") == "datachannel" and row.get("channel_relayed", 0) >= before - ws,
              f"Firefox: the receiver names the path and the endpoint relayed the channel's datagrams "
              f"({row.get('channel_relayed')} of {before} sent, {ws} of them on the WebSocket before it opened)")
        sent = json.loads(b.eval("JSON.stringify(remolo.sent)"))
        final = rx.stop()
        totals_check("Firefox", sent, final, sink)
        k = final.get("keys", {})
        check(k.get("key_messages", 0) + k.get("text_messages", 0) == n_typed,
              f"Firefox: the receiver took every key and text message ({k.get('key_messages')} + {k.get('text_messages')} of {n_typed})")
    finally:
        b.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--remolo", required=True)
    ap.add_argument("--only", choices=["chromium", "firefox", "loss"])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="remolo-dc-")
    os.chmod(tmp, 0o700)
    for name, f in (("chromium", chromium), ("loss", loss), ("firefox", firefox)):
        if args.only and args.only != name:
            continue
        try:
            f(args.remolo, tmp)
        except Exception as e:  # a step that cannot go on fails, the others still run
            check(False, f"{name}: {type(e).__name__}: {e}")
    print(f"datachannel: {run.checks - len(run.failures)} passed, {len(run.failures)} failed")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
