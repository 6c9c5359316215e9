#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The soak: a real `remolo receive` under junk, stalls and one real session.

    soak.py run --remolo BIN [--seconds S] [--workers N] [--stalls N] [--keep]
    soak.py relay ...     (internal: the real session's TCP+UDP relay)
    soak.py flood ...     (internal: one junk sender)

Everything stays on 127.0.0.1. `run` pairs two fresh config directories
with `remolo pair` and `remolo send --pair`, starts `remolo receive --sink
FILE --stats-json`, and a relay in front of it through which one real
`remolo send --gesture swipe` session runs (the relay keeps a copy of each
real datagram, so the flood can replay them). Then, for S seconds:

- N flood processes, one UDP socket each, send junk as fast as the kernel
  takes it: random bytes of every length (short, long, 49 bytes),
  well-formed datagrams of sessions that do not exist, datagrams of the
  real session sealed under a wrong key (with counters far ahead of the
  real ones), and replays of the real session's datagrams;
- 100 TCP connections open and stall (half silent, half after one byte of
  a handshake frame), and are reopened whenever the receiver closes them.

A flood on the same machine shares the receiver's CPU, which a flood from
the network does not, and the receiver's socket buffer (~256 datagrams)
overflows whenever the receiver is off its CPU for a moment: the kernel then
drops junk and real datagrams alike, a denial of service the threat model
accepts and no receiver can prevent. So each flood process watches the
receiver socket's queue (sock_diag, the data behind `ss -m`) every 32
datagrams and waits while it is over a quarter full: the flood runs at the
pace the kernel delivers it, the kernel drops nothing, and what is measured
is the receiver's handling of junk, not the kernel's. The kernel's drop
count for the socket is checked (must stay 0).

Checks: the real session's motion in the sink equals the sender's totals
(to the whole pixel the playout rounds to), every real datagram opened, the
drop counters of the final --stats-json match what the flood sent reason by
reason, the receiver's open fds are back to where they started, its RSS
stops growing once warm, and no process crashes. Prints the figures, then
`soak: N passed, N failed`.
"""
import argparse
import json
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"  # the soak never leaves loopback
DATAGRAM_LEN = 49
REDUNDANT_LEN = 65  # the layout with running totals, on sessions that granted it
KINDS = ("short", "long", "random", "wrong_session", "wrong_key", "replay")
# Junk the kernel may drop at the receiver's socket, as a fraction of the
# junk sent. The receiver's queue holds about 10,000 datagrams (8 MiB of
# accounting, Socket.receiveBufferAsk) and the flood backs off while it is a
# quarter full, so a drop needs the receive loop's thread off its core for
# over 35 ms while four floods keep sending at full pace: on a shared
# 2-core machine a rare moment. With the system's default queue (208 KiB,
# about 256 datagrams, 1.2 ms of flood) a 600 s run lost 1,091 of 131
# million. The bound is one in a million; real datagrams, checked above,
# must all arrive whatever the junk does.
JUNK_DROP_BOUND = 1e-6


# ---- the receiver socket's queue, through sock_diag ----------------------

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_SKMEMINFO = 7
NLMSG_ERROR = 2


class SocketQueue:
    """The receive queue of the UDP socket bound to 127.0.0.1:port, as
    `ss -uam` shows it: bytes queued, buffer size, kernel drops. One
    sock_diag request per look (an exact lookup, ~15 us)."""

    def __init__(self, port):
        self.nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        lo = socket.inet_aton(HOST)
        # inet_diag_sockid: sport, dport (big-endian), src[16], dst[16], if,
        # cookie (none). For UDP the kernel looks the socket up with src as
        # the remote end: any remote port matches an unconnected socket.
        sockid = struct.pack(">HH", 1, port) + lo + bytes(12) + lo + bytes(12) + \
            struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
        req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_UDP,
                          1 << (INET_DIAG_SKMEMINFO - 1), 0, 0xFFFFFFFF) + sockid
        self.msg = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1, 1, 0) + req

    def look(self):
        """(queued bytes, buffer bytes, drops), or None if the socket is gone."""
        self.nl.send(self.msg)
        r = self.nl.recv(4096)
        length, kind = struct.unpack_from("=IH", r, 0)
        if kind != SOCK_DIAG_BY_FAMILY:
            return None
        off = 16 + 4 + 48 + 20  # nlmsghdr, inet_diag_msg head, sockid, 5 u32
        while off + 4 <= length:
            alen, atype = struct.unpack_from("=HH", r, off)
            if atype == INET_DIAG_SKMEMINFO:
                m = struct.unpack_from("=9I", r, off + 4)
                return m[0], m[1], m[8]  # RMEM_ALLOC, RCVBUF, DROPS
            off += (alen + 3) & ~3
        return None


# ---- junk ------------------------------------------------------------------

def seal(key, session_id, counter, kind, a, b, tx_us):
    """docs/protocol.md, Pointer datagrams (as Tests/Interop/datagram.py)."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    header = struct.pack("<8sQ", session_id, counter)
    nonce = b"\0\0\0\0" + struct.pack("<Q", counter)
    return header + ChaCha20Poly1305(key).encrypt(nonce, struct.pack("<BiiQ", kind, a, b, tx_us), header)


def read_captured(path):
    """The real datagrams the relay has forwarded so far, oldest first."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    # Records: a length byte, then the datagram (49 bytes, or 65 on a
    # session that granted redundancy); a record still being written is left.
    out, i = [], 0
    while i < len(data) and i + 1 + data[i] <= len(data):
        out.append(data[i + 1:i + 1 + data[i]])
        i += 1 + data[i]
    return out


def flood(args):
    """One junk sender: one socket, every kind of junk in turn, until
    --until; prints what it sent, by kind, as JSON."""
    rng = random.Random(args.seed)
    port = args.port
    captured = read_captured(args.capture)
    session_id = captured[0][:8]
    # Pools built once (sealing in Python is slower than sending).
    pool = {
        "short": [os.urandom(rng.randrange(1, DATAGRAM_LEN)) for _ in range(512)],
        # Longer than 49, but never 65: that is the redundant layout's length,
        # which the receiver looks up by session first (docs/protocol.md,
        # "Redundancy"), so random bytes of that length count as
        # unknown_session, not long.
        "long": [os.urandom(n) for n in (rng.randrange(DATAGRAM_LEN + 1, 300) for _ in range(1024))
                 if n != REDUNDANT_LEN][:512],
        "random": [os.urandom(DATAGRAM_LEN) for _ in range(512)],
        # Well-formed and sealed, but for sessions the receiver never issued.
        "wrong_session": [seal(os.urandom(32), os.urandom(8), rng.getrandbits(63), 1, 256, 0, 0)
                          for _ in range(256)],
        # The live session's id, any key but its own, counters far ahead of
        # the real ones: if a forged counter moved the session's newest
        # counter, every real datagram after it would drop as a replay.
        "wrong_key": [seal(os.urandom(32), session_id, (1 << 62) + rng.getrandbits(61), 1, 256 * 500, 0, 0)
                      for _ in range(256)],
    }
    sent = {k: 0 for k in KINDS}
    queue = SocketQueue(port)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((HOST, port))
    send = s.send
    waits = 0
    replays = []
    next_refresh = 0.0
    # One deadline for every flooder (CLOCK_MONOTONIC is system-wide), however
    # late each one started: the flood must be over while the real session
    # is still live, or its replays count as unknown_session.
    end = args.until
    order = ["short", "long", "random", "wrong_session", "wrong_key", "replay"]
    i = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if now >= next_refresh:
            # Only datagrams well behind the newest: a replay must never
            # overtake its original (it would then open in its place, and
            # the original would be the one dropped as a replay).
            replays = read_captured(args.capture)[:-64]
            next_refresh = now + 0.5
        # Pace: wait while the receiver's socket is over a quarter full.
        while True:
            q = queue.look()
            if q is None or q[0] * 4 <= q[1]:
                break
            waits += 1
            time.sleep(0.0002)
        for _ in range(32):
            kind = order[i % len(order)]
            i += 1
            if kind == "replay":
                if not replays:
                    continue
                d = replays[rng.randrange(len(replays))]
            else:
                p = pool[kind]
                d = p[rng.randrange(len(p))]
            try:
                send(d)
            except OSError:
                continue  # ECONNREFUSED after a stray ICMP: not sent
            sent[kind] += 1
    print(json.dumps({"sent": sent, "waits": waits}), flush=True)


# ---- the relay in front of the receiver ------------------------------------

def relay(args):
    """TCP and UDP on --listen forwarded to --to; every UDP datagram is also
    appended to --capture. Runs until SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    lport, to = args.listen, (HOST, args.to)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((HOST, lport))
    lsock.listen(4)
    usock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    usock.bind((HOST, lport))
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    out.connect(to)
    cap = open(args.capture, "ab", buffering=0)

    def pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def tcp():
        while True:
            c, _ = lsock.accept()
            u = socket.create_connection(to)
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    threading.Thread(target=tcp, daemon=True).start()
    print("relay ready", flush=True)
    while True:
        d = usock.recv(2048)
        out.send(d)  # forward first: the copy is for later replays
        if len(d) in (DATAGRAM_LEN, REDUNDANT_LEN):
            cap.write(bytes([len(d)]) + d)


# ---- connections that open and stall --------------------------------------

class Stalls:
    """`count` TCP connections to the receiver that never finish a
    handshake; each one the receiver closes is reopened 100 ms later."""

    def __init__(self, port, count):
        self.port, self.count = port, count
        self.stop = threading.Event()
        self.opened = 0
        self.closed_at_once = 0   # closed by the receiver within 1 s (over its cap)
        self.closed_later = 0     # held, then closed (the handshake timeout)
        self.errors = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self, sel, n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.connect((HOST, self.port))
            if n % 2:
                s.send(b"\x00")  # half a length: a handshake that stops
        except OSError:
            self.errors += 1
            s.close()
            return False
        self.opened += 1
        sel.register(s, selectors.EVENT_READ, (n, time.monotonic()))
        return True

    def run(self):
        sel = selectors.DefaultSelector()
        reopen = []  # (when, n)
        for n in range(self.count):
            if not self.open_one(sel, n):
                reopen.append((time.monotonic() + 0.1, n))
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.05):
                s = key.fileobj
                n, since = key.data
                try:
                    gone = s.recv(64) == b""
                except OSError:
                    gone = True
                if not gone:
                    continue
                sel.unregister(s)
                s.close()
                # Closed at accept (over the cap): reopened after 1 s, which
                # keeps ~90 connects a second rather than a connect storm that
                # would run the loopback port range out of TIME_WAIT slots.
                # Held until the handshake timeout: reopened at once.
                if time.monotonic() - since < 1:
                    self.closed_at_once += 1
                    reopen.append((time.monotonic() + 1.0, n))
                else:
                    self.closed_later += 1
                    reopen.append((time.monotonic() + 0.1, n))
            now = time.monotonic()
            due = [r for r in reopen if r[0] <= now]
            reopen = [r for r in reopen if r[0] > now]
            for _, n in due:
                if not self.open_one(sel, n):
                    reopen.append((now + 0.1, n))
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()


# ---- the receiver from outside ----------------------------------------------

def proc_sample(pid):
    with open(f"/proc/{pid}/status") as f:
        st = dict(line.split(":", 1) for line in f if ":" in line)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)
    return {
        "t": time.monotonic(),
        "rss_kb": int(st["VmRSS"].split()[0]),
        "threads": int(st["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "cpu_s": ticks / os.sysconf("SC_CLK_TCK"),
    }


def free_port():
    """A port free for both TCP and UDP on loopback a moment ago."""
    while True:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.bind((HOST, 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind((HOST, port))
            return port
        except OSError:
            continue
        finally:
            t.close()
            u.close()


def wait_for(predicate, seconds, step=0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = predicate()
        if v:
            return v
        time.sleep(step)
    return predicate()


def sink_totals(path):
    """Sums of REL_X, REL_Y and the mouse buttons (BTN_*, 0x100 up) in a
    --sink file (struct input_event records, native layout). The keyboard's
    frames share the sink; its KEY_* codes (below 0x100) are left out."""
    ev = struct.Struct("@llHHi")
    dx = dy = 0
    keys = []
    with open(path, "rb") as f:
        data = f.read()
    for off in range(0, len(data) - ev.size + 1, ev.size):
        _, _, typ, code, value = ev.unpack_from(data, off)
        if typ == 2 and code == 0:
            dx += value
        elif typ == 2 and code == 1:
            dy += value
        elif typ == 1 and code >= 0x100:
            keys.append((code, value))
    return dx, dy, keys, len(data) % ev.size


def field(line, key):
    f = line.split()
    return int(f[f.index(key) + 1]) if key in f else None


def run(args, results):
    """Appends one boolean per check to `results`."""
    remolo = os.path.abspath(args.remolo)
    root = tempfile.mkdtemp(prefix="remolo-soak-")
    rx_dir, tx_dir = os.path.join(root, "rx"), os.path.join(root, "tx")
    for d in (rx_dir, tx_dir):
        os.mkdir(d, 0o700)
    log = lambda name: open(os.path.join(root, name + ".log"), "w")
    env = lambda d: dict(os.environ, REMOLO_CONFIG_DIR=d)
    port, relay_port = free_port(), free_port()
    procs = []

    def check(ok, what, detail=""):
        results.append(ok)
        # Details only for a failure: a passing check's log tail is noise.
        print(f"soak: {'ok' if ok else 'FAILED'}: {what}" + (f" ({detail.strip()})" if detail and not ok else ""),
              flush=True)
        return ok

    def text(name):
        with open(os.path.join(root, name + ".log")) as f:
            return f.read()

    def start(name, argv, cfg):
        p = subprocess.Popen(argv, stdout=log(name), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env(cfg))
        procs.append(p)
        return p

    try:
        # Pairing, as a user does it.
        pair = start("pair", [remolo, "pair", "--listen", f"{HOST}:{port}", "--timeout", "30"], rx_dir)
        code = wait_for(lambda: next((l.split(": ", 1)[1] for l in text("pair").splitlines()
                                      if l.startswith("pairing code: ")), None), 20)
        if not check(code is not None, "remolo pair issued a code", text("pair")[-300:]):
            return
        tx0 = start("pair-send", [remolo, "send", "--to", f"{HOST}:{port}", "--pair", code, "--seconds", "0"], tx_dir)
        paired = tx0.wait(20) == 0 and pair.wait(10) == 0
        if not check(paired, "paired", text("pair-send")[-300:]):
            return

        sink = os.path.join(root, "sink")
        rx = start("receive", [remolo, "receive", "--listen", f"{HOST}:{port}", "--sink", sink,
                               "--stats-json", "--stats", "1"], rx_dir)
        if not check(wait_for(lambda: "listening on" in text("receive"), 30), "receiver started", text("receive")[-300:]):
            return
        queue = SocketQueue(port)
        start_sample = proc_sample(rx.pid)

        capture = os.path.join(root, "captured")
        rel = start("relay", [sys.executable, __file__, "relay", "--listen", str(relay_port), "--to", str(port),
                              "--capture", capture], rx_dir)
        wait_for(lambda: "relay ready" in text("relay"), 10)
        # The session outlives the flood by a wide margin: a loaded machine
        # can start the sender late or the flood late.
        send_seconds = args.seconds + 10
        tx = start("send", [remolo, "send", "--to", f"{HOST}:{relay_port}", "--gesture", "swipe",
                            "--size", str(int(min(5000, max(600, 100 * args.seconds)))), "--seconds", str(send_seconds)], tx_dir)
        if not check(bool(wait_for(lambda: len(read_captured(capture)) >= 80, 20)), "real session running through the relay",
                     text("send")[-300:] + text("receive")[-300:]):
            return

        # The flood and the stalls, for --seconds.
        flood_t0 = time.monotonic()
        floods = [subprocess.Popen([sys.executable, __file__, "flood", "--port", str(port), "--capture", capture,
                                    "--until", repr(flood_t0 + args.seconds), "--seed", str(i)],
                                   stdout=subprocess.PIPE, stderr=log(f"flood{i}"), stdin=subprocess.DEVNULL)
                  for i in range(args.workers)]
        procs.extend(floods)
        stalls = Stalls(port, args.stalls)
        stalls.thread.start()
        flood_start = proc_sample(rx.pid)
        series = [flood_start]
        while time.monotonic() - flood_t0 < args.seconds:
            time.sleep(min(1.0, max(0.05, args.seconds - (time.monotonic() - flood_t0))))
            series.append(proc_sample(rx.pid))
        outs = [json.loads(f.communicate(timeout=30)[0] or "{}") for f in floods]
        check(tx.poll() is None, "the real session outlived the flood")
        flood_end = proc_sample(rx.pid)
        flood_wall = flood_end["t"] - flood_start["t"]
        stalls.stop.set()
        stalls.thread.join(10)
        kq = queue.look()

        # The real session ends by itself.
        tx_status = tx.wait(send_seconds + 30)
        sent_line = next((l for l in text("send").splitlines() if l.startswith("sent: ")), "")
        wait_for(lambda: " ended" in text("receive"), 10)
        # Every connection is gone (the stalls closed theirs): fds back to
        # where they started. A moment for the receiver to see the closes.
        end_sample = wait_for(lambda: (lambda s: s if s["fds"] == start_sample["fds"] else None)(proc_sample(rx.pid)), 8) \
            or proc_sample(rx.pid)
        rx.send_signal(signal.SIGTERM)
        rx_status = rx.wait(30)
        rel.terminate()
        rel.wait(10)
        lines = [l for l in text("receive").splitlines() if l.startswith("{")]
        final = json.loads(lines[-1]) if lines else {}

        # ---- figures ----
        junk = {k: sum(o.get("sent", {}).get(k, 0) for o in outs) for k in KINDS}
        junk_total = sum(junk.values())
        motion, beats = field(sent_line, "motion") or 0, field(sent_line, "heartbeats") or 0
        q8x, q8y = field(sent_line, "dx_q8"), field(sent_line, "dy_q8")
        real = motion + beats
        dx, dy, keys, ragged = sink_totals(sink)
        drops = final.get("drops", {})
        absorbed = (final.get("datagrams", 0) - real) / flood_wall if flood_wall else 0
        cpu_pct = 100 * (flood_end["cpu_s"] - flood_start["cpu_s"]) / flood_wall if flood_wall else 0
        warm = next((s for s in series if s["t"] - flood_start["t"] >= min(5, args.seconds / 4)), series[-1])
        print()
        print(f"soak figures ({args.seconds:g} s of flood, {args.workers} flood sockets, {args.stalls} stalled connections):")
        print(f"  junk absorbed: {absorbed:,.0f} datagrams/s ({final.get('datagrams', 0) - real:,} in {flood_wall:.1f} s;"
              f" sent {junk_total:,}: " + ", ".join(f"{k} {v:,}" for k, v in junk.items()) + ")")
        print(f"  receiver CPU during the flood: {cpu_pct:.0f}% of one core; CPU time {start_sample['cpu_s']:.2f} s at start,"
              f" {end_sample['cpu_s']:.2f} s at end"
              f" ({1e9 * (flood_end['cpu_s'] - flood_start['cpu_s']) / max(1, final.get('datagrams', 1)):.0f} ns per datagram)")
        print(f"  receiver RSS: {start_sample['rss_kb']} kB at start, {warm['rss_kb']} kB warm"
              f" ({warm['t'] - flood_start['t']:.0f} s into the flood), {end_sample['rss_kb']} kB at end"
              f" (max {max(s['rss_kb'] for s in series + [end_sample])} kB)")
        tenths = [next((s for s in series if s["t"] - flood_start["t"] >= k * args.seconds / 10 - 0.5), series[-1])
                  for k in range(11)]
        print("  receiver RSS every tenth of the flood (kB): " + " ".join(str(s["rss_kb"]) for s in tenths))
        print(f"  receiver fds: {start_sample['fds']} at start, {max(s['fds'] for s in series)} max, {end_sample['fds']} at end;"
              f" threads {start_sample['threads']} / {max(s['threads'] for s in series)} / {end_sample['threads']}")
        sock = final.get("socket") or {}
        print(f"  receiver socket: rcvbuf {sock.get('rcvbuf_bytes', 0) // 1024} KiB"
              f"{' (SO_RCVBUFFORCE)' if sock.get('rcvbuf_forced') else ''}")
        print(f"  kernel drops at the receiver socket: {kq[2] if kq else '?'}; flood waits for the queue:"
              f" {sum(o.get('waits', 0) for o in outs):,}")
        print(f"  stalled connections: {stalls.opened} opened, {stalls.closed_at_once} closed at accept (over the cap of 8),"
              f" {stalls.closed_later} held then closed, {stalls.errors} refused")
        print(f"  real session: {sent_line.strip()}")
        print(f"  sink: dx {dx} px dy {dy} px, keys {keys}; receiver opened {final.get('opened')} late {final.get('late_packets')}")
        print(f"  final drops: {json.dumps(drops)}")
        print()

        # ---- checks ----
        check(tx_status == 0, "real sender exited 0", text("send")[-300:])
        check(rx_status == 0 and bool(final), "receiver ended cleanly on SIGTERM with a final --stats-json line",
              f"status {rx_status}")
        check(all(f.returncode == 0 for f in floods) and all("sent" in o for o in outs), "flood processes ran")
        check(motion > 0 and q8x is not None and abs(dx * 256 - q8x) <= 128 and abs(dy * 256 - q8y) <= 128,
              "real session's motion exact in the sink", f"{dx},{dy} px vs {q8x},{q8y} Q8")
        check(final.get("total_dx") == dx and final.get("total_dy") == dy, "sink equals the receiver's own totals")
        check(keys == [(0x110, 1), (0x110, 0)] and ragged == 0, "the drag's button pressed once and released once", f"{keys}")
        check(final.get("opened") == real, "every real datagram opened, nothing else did",
              f"opened {final.get('opened')}, real {real}")
        # Junk may be dropped by the kernel when the receiver's queue is full
        # (a flood at the kernel's pace on a shared machine); the receiver
        # says how many (socket.kernel_drops, SO_MEMINFO) and sock_diag agrees.
        # Real datagrams are never lost: "every real datagram opened" above
        # is exact. The bound: JUNK_DROP_BOUND of the junk (docs/testing.md, Soak).
        kdrops = (final.get("socket") or {}).get("kernel_drops")
        check(kdrops is not None and kq is not None and kdrops == kq[2],
              "the receiver's kernel-drop count equals sock_diag's", f"receiver {kdrops}, sock_diag {kq}")
        kdrops = kdrops or 0
        check(kdrops <= JUNK_DROP_BOUND * junk_total,
              f"junk dropped at the socket within the bound ({JUNK_DROP_BOUND:.4%} of the junk)",
              f"{kdrops} of {junk_total:,}")
        check(final.get("datagrams") == junk_total + real - kdrops, "the receiver saw every datagram the kernel kept",
              f"{final.get('datagrams')} vs {junk_total} + {real} - {kdrops}")
        expect = {"short": junk["short"], "long": junk["long"],
                  "unknown_session": junk["random"] + junk["wrong_session"],
                  "replay": junk["replay"], "bad_tag": junk["wrong_key"], "bad_kind": 0, "bad_field": 0}
        short_by = {k: expect[k] - drops.get(k, 0) for k in expect}
        check(all(v >= 0 for v in short_by.values()) and sum(short_by.values()) == kdrops,
              "drop counters match the junk sent, reason by reason, less what the kernel dropped",
              f"got {json.dumps(drops)}, want {json.dumps(expect)} less {kdrops}")
        check(junk["replay"] > 0 and junk["wrong_key"] > 0, "replays and wrong-key datagrams were in the flood")
        check(stalls.opened >= args.stalls and stalls.closed_at_once > 0,
              "stalled connections opened and the receiver capped them", f"{stalls.opened} opened")
        check(end_sample["fds"] == start_sample["fds"], "receiver fds back to the start",
              f"{start_sample['fds']} -> {end_sample['fds']}")
        # RSS: once warm (every thread, malloc arena and stack the receiver
        # will use exists), junk and stalls must not grow it. 1 MiB is far
        # below what a leak of 8 bytes per junk datagram or 1 kB per stalled
        # connection would add here, and above the page-level noise of
        # malloc arenas being touched by new connection threads.
        growth = end_sample["rss_kb"] - warm["rss_kb"]
        check(growth <= 1024, "receiver RSS does not grow once warm (bound 1024 kB)",
              f"{warm['rss_kb']} -> {end_sample['rss_kb']} kB")
        check(final.get("write_errors") == 0 and final.get("live_sessions") == 0, "no write errors, no session left")
    except Exception as e:  # a timeout or a process that never answered: a failure, with its traceback
        import traceback
        traceback.print_exc()
        check(False, f"the soak itself stopped: {e!r}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if args.keep or (results and not all(results)):
            print(f"soak: logs kept in {root}")
        else:
            import shutil
            shutil.rmtree(root, ignore_errors=True)
        # Always the last line, whichever way the run ended.
        failed = results.count(False)
        print(f"soak: {len(results) - failed} passed, {failed} failed", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--remolo", required=True)
    r.add_argument("--seconds", type=float, default=20)
    r.add_argument("--workers", type=int, default=4)
    r.add_argument("--stalls", type=int, default=100)
    r.add_argument("--keep", action="store_true")
    f = sub.add_parser("flood")
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--capture", required=True)
    f.add_argument("--until", type=float, required=True, help="CLOCK_MONOTONIC seconds (Python's time.monotonic)")
    f.add_argument("--seed", type=int, default=0)
    y = sub.add_parser("relay")
    y.add_argument("--listen", type=int, required=True)
    y.add_argument("--to", type=int, required=True)
    y.add_argument("--capture", required=True)
    a = ap.parse_args()
    if a.cmd == "run":
        results = []
        run(a, results)
        sys.exit(0 if results and all(results) else 1)
    if a.cmd == "flood":
        flood(a)
    else:
        relay(a)


if __name__ == "__main__":
    main()
