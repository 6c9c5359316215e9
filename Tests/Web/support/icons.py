#!/usr/bin/env python3
"""The phone page's icons: icon.svg and its PNGs (180 for iOS's
apple-touch-icon, 192 and 512 for the web app manifest), drawn from the
same shapes with the standard library only (zlib and struct), so they can
be made again anywhere:

    python3 Tests/Web/support/icons.py [Sources/RemoloWeb/page]

The colours are style.css's. The background fills the whole square and
everything else stays inside the central circle of 40% radius, so the
icon serves as both "any" and "maskable" (W3C Web App Manifest, maskable
icons' safe zone): a launcher may cut it to a circle or a squircle.
"""
import math
import os
import struct
import sys
import zlib

BACKGROUND = "#15171a"
PAD, EDGE, DOT = "#23272c", "#3d6f9e", "#7fb2e0"
# In a 512 box: the surface, a finger's path on it and the finger.
RECT = (116, 146, 280, 220, 36)      # x, y, w, h, corner radius
STROKE = 10
TRAIL = ((196, 310), (300, 226))
DOT_AT, DOT_R = (300, 226), 28

SVG = f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512">
<rect width="512" height="512" fill="{BACKGROUND}"/>
<rect x="{RECT[0]}" y="{RECT[1]}" width="{RECT[2]}" height="{RECT[3]}" rx="{RECT[4]}" fill="{PAD}" stroke="{EDGE}" stroke-width="{STROKE}"/>
<path d="M{TRAIL[0][0]} {TRAIL[0][1]}L{TRAIL[1][0]} {TRAIL[1][1]}" stroke="{EDGE}" stroke-width="{STROKE}" stroke-linecap="round"/>
<circle cx="{DOT_AT[0]}" cy="{DOT_AT[1]}" r="{DOT_R}" fill="{DOT}"/>
</svg>
"""


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def rounded_rect(px, py):
    x, y, w, h, r = RECT
    cx, cy = x + w / 2, y + h / 2
    qx, qy = abs(px - cx) - (w / 2 - r), abs(py - cy) - (h / 2 - r)
    return math.hypot(max(qx, 0), max(qy, 0)) + min(max(qx, qy), 0) - r


def segment(px, py):
    (ax, ay), (bx, by) = TRAIL
    dx, dy = bx - ax, by - ay
    t = max(0, min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def draw(size):
    """RGB rows: each shape's coverage from its signed distance (antialiased over one pixel)."""
    k = 512 / size
    layers = [
        (rgb(PAD), lambda x, y: rounded_rect(x, y)),
        (rgb(EDGE), lambda x, y: abs(rounded_rect(x, y)) - STROKE / 2),
        (rgb(EDGE), lambda x, y: segment(x, y) - STROKE / 2),
        (rgb(DOT), lambda x, y: math.hypot(x - DOT_AT[0], y - DOT_AT[1]) - DOT_R),
    ]
    bg = rgb(BACKGROUND)
    rows = []
    for j in range(size):
        row = bytearray()
        for i in range(size):
            x, y = (i + 0.5) * k, (j + 0.5) * k
            c = bg
            for colour, sdf in layers:
                a = min(1, max(0, 0.5 - sdf(x, y) / k))
                if a:
                    c = tuple(round(c[n] + (colour[n] - c[n]) * a) for n in range(3))
            row += bytes(c)
        rows.append(bytes(row))
    return rows


def png(rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    h, w = len(rows), len(rows[0]) // 3
    raw = b"".join(b"\x00" + r for r in rows)  # filter 0 on every row: flat colours compress well anyway
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                              "Sources", "RemoloWeb", "page")
    with open(os.path.join(out, "icon.svg"), "w") as f:
        f.write(SVG)
    for size in (180, 192, 512):
        with open(os.path.join(out, f"icon-{size}.png"), "wb") as f:
            f.write(png(draw(size)))


if __name__ == "__main__":
    main()
