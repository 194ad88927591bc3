#!/usr/bin/python3
"""Screen damage with real compositor input: moves the pointer through Mutter's RemoteDesktop API
(org.gnome.Mutter.RemoteDesktop, a session of its own) for SECONDS, back and forth, about 60 times
a second. Mutter's ScreenCast sends a frame only when the screen changes; with an embedded cursor,
a moving pointer is such a change. Needs Debian's /usr/bin/python3 with python3-gi and the desktop
session's DBUS_SESSION_BUS_ADDRESS (scripts/desktop-up); run as the desktop user.

usage: desktop_damage.py SECONDS        prints "moves N" at the end
"""
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

NAME = "org.gnome.Mutter.RemoteDesktop"


def call(bus, path, iface, method, args=None):
    return bus.call_sync(NAME, path, iface, method, args, None, Gio.DBusCallFlags.NONE, 5000, None)


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    session = call(bus, "/org/gnome/Mutter/RemoteDesktop", NAME, "CreateSession").unpack()[0]
    call(bus, session, NAME + ".Session", "Start")
    moves = 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            step = 12.0 if (moves // 30) % 2 == 0 else -12.0  # half a second each way
            call(bus, session, NAME + ".Session", "NotifyPointerMotionRelative",
                 GLib.Variant("(dd)", (step, step / 2)))
            moves += 1
            time.sleep(1 / 60)
    finally:
        call(bus, session, NAME + ".Session", "Stop")
    print("moves", moves, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
