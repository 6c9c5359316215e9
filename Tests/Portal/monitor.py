#!/usr/bin/python3
"""Prints every call a client makes to the RemoteDesktop portal
(org.freedesktop.portal.RemoteDesktop: CreateSession ... Notify*) and every
input call the portal's GNOME backend passes on to mutter
(org.gnome.Mutter.RemoteDesktop.Session Notify*), one line each:

    portal NotifyPointerAxis {'finish': <true>} 0.0 0.0
    mutter NotifyPointerAxis 0.0 0.0 1

The second shows what reached the compositor, e.g. the axis `finish` flag
(bit 0), which mutter before 48 does not pass on to applications.
Prints "monitoring" once it listens."""
import os
import sys

import gi
from gi.repository import Gio, GLib  # noqa: E402

WATCHED = {
    "org.freedesktop.portal.RemoteDesktop": "portal",
    "org.gnome.Mutter.RemoteDesktop.Session": "mutter",
}


def show(v):
    return str(v.unpack())


def on_message(_conn, msg, incoming):
    # A monitor must never answer what it sees (the bus would drop it), so
    # the method calls it sees stop here; our own call and its reply go on.
    if not incoming or msg.get_message_type() != Gio.DBusMessageType.METHOD_CALL:
        return msg
    who = WATCHED.get(msg.get_interface())
    member = msg.get_member() or ""
    if who == "portal" or (who and member.startswith("Notify")):
        body = msg.get_body()
        args = [] if body is None else [show(body.get_child_value(i)) for i in range(body.n_children())]
        if who == "portal" and member.startswith("Notify"):
            args = args[1:]  # the session handle
        sys.stdout.write(f"{who} {member} {' '.join(args)}\n")
        sys.stdout.flush()
    return None


def main():
    address = os.environ["DBUS_SESSION_BUS_ADDRESS"]
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
    conn.add_filter(on_message)
    rules = [f"type='method_call',interface='{i}'" for i in WATCHED]
    conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring",
                   "BecomeMonitor", GLib.Variant("(asu)", (rules, 0)), None, Gio.DBusCallFlags.NONE, -1, None)
    print("monitoring", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
