#!/usr/bin/python3
"""Answers GNOME's "Remote desktop" consent dialog (xdg-desktop-portal-gnome)
through the accessibility bus, the way a person would: turn on "Allow remote
interaction", then press Share (or Cancel, to refuse).

    consent.py accept|refuse [--count N] [--timeout S]

Prints one line per dialog answered ("consent: accepted" / "consent:
refused") and exits after N dialogs (default 1) or S seconds (exit 1).
Key presses at fixed delays race the dialog; AT-SPI waits for the real
widgets."""
import sys
import time

import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

PORTAL_APP = "xdg-desktop-portal-gnome"
DIALOG_TITLE = "Remote desktop"
SWITCH_LABEL = "Allow remote interaction"
# GTK 4 shows its GtkSwitch as a check box (AT-SPI 2.46 has no switch role).
TOGGLES = tuple(getattr(Atspi.Role, r) for r in ("CHECK_BOX", "TOGGLE_BUTTON", "SWITCH") if hasattr(Atspi.Role, r))


def children(a):
    try:
        n = a.get_child_count()
    except Exception:
        return []
    out = []
    for i in range(n):
        try:
            c = a.get_child_at_index(i)
        except Exception:
            c = None
        if c is not None:
            out.append(c)
    return out


def walk(a):
    yield a
    for c in children(a):
        yield from walk(c)


def find_dialog():
    desk = Atspi.get_desktop(0)
    for app in children(desk):
        try:
            if app.get_name() != PORTAL_APP:
                continue
        except Exception:
            continue
        for win in children(app):
            try:
                if win.get_name() == DIALOG_TITLE and win.get_state_set().contains(Atspi.StateType.SHOWING):
                    return win
            except Exception:
                continue
    return None


def do_action(a, wanted):
    n = a.get_n_actions()
    for i in range(n):
        if a.get_action_name(i) == wanted:
            return a.do_action(i)
    raise RuntimeError(f"no action {wanted!r} on {a.get_role_name()} {a.get_name()!r}")


def answer(dialog, accept):
    switch = share = cancel = None
    for a in walk(dialog):
        try:
            role, name = a.get_role(), a.get_name() or ""
        except Exception:
            continue
        if role in TOGGLES and name == SWITCH_LABEL:
            switch = a
        elif role == Atspi.Role.PUSH_BUTTON and name.endswith("Share"):
            share = a
        elif role == Atspi.Role.PUSH_BUTTON and name.endswith("Cancel"):
            cancel = a
    if accept:
        if switch is None or share is None:
            return False
        if not switch.get_state_set().contains(Atspi.StateType.CHECKED):
            do_action(switch, "toggle")
        # Share becomes sensitive once a device is allowed.
        for _ in range(50):
            if share.get_state_set().contains(Atspi.StateType.SENSITIVE):
                break
            time.sleep(0.02)
        do_action(share, "click")
    else:
        if cancel is None:
            return False
        do_action(cancel, "click")
    return True


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("accept", "refuse"):
        print(__doc__, file=sys.stderr)
        return 2
    accept = args[0] == "accept"
    count, timeout = 1, 60.0
    if "--count" in args:
        count = int(args[args.index("--count") + 1])
    if "--timeout" in args:
        timeout = float(args[args.index("--timeout") + 1])
    deadline = time.monotonic() + timeout
    done = 0
    while done < count:
        if time.monotonic() > deadline:
            print(f"consent: no dialog within {timeout:g} s ({done} of {count} answered)", flush=True)
            return 1
        d = find_dialog()
        if d is not None:
            try:
                if answer(d, accept):
                    done += 1
                    print("consent: " + ("accepted" if accept else "refused"), flush=True)
                    # The dialog goes away; do not answer it twice.
                    for _ in range(100):
                        if find_dialog() is None:
                            break
                        time.sleep(0.05)
                    continue
            except Exception as e:  # the dialog went while we looked
                print(f"consent: retrying ({e})", file=sys.stderr, flush=True)
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
