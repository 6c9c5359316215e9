#!/usr/bin/python3
"""A fullscreen GTK 3 window on the compositor ($WAYLAND_DISPLAY) that
reports what reaches it, one line per event on stdout:

    ready W H                       (once, a second after it is shown)
    motion X Y                      (surface coordinates, fractions kept)
    button N press|release X Y      (GDK button numbers: 1 left, 2 middle, 3 right)
    scroll DX DY stop=0|1           (smooth deltas; stop: the end of a gesture)
    scroll-discrete up|down|left|right
    key CODE press|release          (evdev code: the hardware keycode - 8)

Nothing is reported during its first second: mutter animates a new window in,
and positions during that animation are scaled."""
import sys
import time

import gi
gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

SETTLE_S = 1.0
shown_at = None
ready = False


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def on_map(win, _ev):
    global shown_at
    shown_at = time.monotonic()

    def settle():
        global ready
        ready = True
        alloc = win.get_allocation()
        out(f"ready {alloc.width} {alloc.height}")
        return False
    GLib.timeout_add(int(SETTLE_S * 1000), settle)
    return False


def on_motion(_w, ev):
    if ready:
        out(f"motion {ev.x:.3f} {ev.y:.3f}")
    return True


def on_button(_w, ev):
    if ready and ev.type in (Gdk.EventType.BUTTON_PRESS, Gdk.EventType.BUTTON_RELEASE):
        kind = "press" if ev.type == Gdk.EventType.BUTTON_PRESS else "release"
        out(f"button {ev.button} {kind} {ev.x:.3f} {ev.y:.3f}")
    return True


def on_scroll(_w, ev):
    if not ready:
        return True
    if ev.direction == Gdk.ScrollDirection.SMOOTH:
        _, dx, dy = ev.get_scroll_deltas()
        stop = 1 if ev.is_scroll_stop_event() else 0
        out(f"scroll {dx:.4f} {dy:.4f} stop={stop}")
    else:
        names = {Gdk.ScrollDirection.UP: "up", Gdk.ScrollDirection.DOWN: "down",
                 Gdk.ScrollDirection.LEFT: "left", Gdk.ScrollDirection.RIGHT: "right"}
        out(f"scroll-discrete {names.get(ev.direction, '?')}")
    return True


def on_key(_w, ev):
    if ready:
        kind = "press" if ev.type == Gdk.EventType.KEY_PRESS else "release"
        out(f"key {ev.hardware_keycode - 8} {kind}")
    return True


def main():
    win = Gtk.Window(title="remolo-portal-client")
    win.add_events(Gdk.EventMask.POINTER_MOTION_MASK | Gdk.EventMask.BUTTON_PRESS_MASK
                   | Gdk.EventMask.BUTTON_RELEASE_MASK | Gdk.EventMask.SCROLL_MASK
                   | Gdk.EventMask.SMOOTH_SCROLL_MASK | Gdk.EventMask.KEY_PRESS_MASK
                   | Gdk.EventMask.KEY_RELEASE_MASK)
    win.connect("map-event", on_map)
    win.connect("motion-notify-event", on_motion)
    win.connect("button-press-event", on_button)
    win.connect("button-release-event", on_button)
    win.connect("scroll-event", on_scroll)
    win.connect("key-press-event", on_key)
    win.connect("key-release-event", on_key)
    win.connect("destroy", Gtk.main_quit)
    win.fullscreen()
    win.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
