#!/usr/bin/env python3
"""A stand-in xdg-desktop-portal ScreenCast service for tests, on the session bus of
DBUS_SESSION_BUS_ADDRESS (the private one scripts/pipewire-up starts, which activates nothing).

It is kept only for what the real portal cannot be made to do on demand (docs/TEST-DEBTS.md): the
user denying or cancelling the dialog, and a portal that never answers. Everything a grant does
runs against the real portal (Tests/Integration/test_real_portal.py, scripts/desktop-up).

It owns org.freedesktop.portal.Desktop and implements what broadcast calls up to the dialog:
  - org.freedesktop.DBus.Properties.Get/GetAll on org.freedesktop.portal.ScreenCast
    (version, AvailableSourceTypes, AvailableCursorModes);
  - ScreenCast.CreateSession / SelectSources / Start, each returning a Request object path
    (/org/freedesktop/portal/desktop/request/SENDER/TOKEN) and then emitting
    org.freedesktop.portal.Request.Response(u code, a{sv} results) on it;
  - org.freedesktop.portal.Session.Close.

The dialog outcome is --mode: deny (Start answers 2), cancel (Start answers 1), silent (Start
never answers, to test client timeouts). Every call is appended to --log FILE as one JSON object
per line. Prints "ready" on stdout once the name is owned.

usage: fake_portal.py [--mode deny|cancel|silent] [--cursor-modes N] [--version N] [--log FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

from dbus_next import BusType, Message, MessageType, Variant
from dbus_next.aio import MessageBus

DESKTOP = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SCREENCAST = "org.freedesktop.portal.ScreenCast"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
PROPS = "org.freedesktop.DBus.Properties"


class FakePortal:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.bus: MessageBus | None = None
        self.sessions: dict[str, str] = {}  # session path -> owner unique name

    def log(self, entry: dict) -> None:
        if self.args.log:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def props(self) -> dict[str, Variant]:
        return {"version": Variant("u", self.args.version),
                "AvailableSourceTypes": Variant("u", 1),
                "AvailableCursorModes": Variant("u", self.args.cursor_modes)}

    @staticmethod
    def plain(options: dict) -> dict:
        return {k: v.value for k, v in options.items()}

    def request_path(self, sender: str, token: str) -> str:
        return f"{PATH}/request/{sender.lstrip(':').replace('.', '_')}/{token}"

    def respond_later(self, path: str, code: int, results: dict[str, Variant]) -> None:
        # The reply carrying the Request path goes out first; the Response follows, as with a real portal.
        async def send() -> None:
            await asyncio.sleep(0.05)
            await self.bus.send(Message.new_signal(path, REQUEST, "Response", "ua{sv}", [code, results]))
        asyncio.get_running_loop().create_task(send())

    def handle(self, msg: Message):
        if msg.message_type != MessageType.METHOD_CALL:
            return None
        member, iface = msg.member, msg.interface
        if iface == PROPS and msg.path == PATH:
            if member == "Get" and msg.body[0] == SCREENCAST and msg.body[1] in self.props():
                return Message.new_method_return(msg, "v", [self.props()[msg.body[1]]])
            if member == "GetAll" and msg.body[0] == SCREENCAST:
                return Message.new_method_return(msg, "a{sv}", [self.props()])
            return Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownInterface", "no such interface")
        if iface == SESSION and member == "Close":
            self.log({"call": "Close", "session": msg.path})
            self.sessions.pop(msg.path, None)
            return Message.new_method_return(msg)
        if iface != SCREENCAST:
            return None
        sender = msg.sender
        if member == "CreateSession":
            opts = msg.body[0]
            token = opts["handle_token"].value
            session = f"{PATH}/session/{sender.lstrip(':').replace('.', '_')}/{opts['session_handle_token'].value}"
            self.sessions[session] = sender
            self.log({"call": "CreateSession", "options": self.plain(opts)})
            path = self.request_path(sender, token)
            self.respond_later(path, 0, {"session_handle": Variant("s", session)})
            return Message.new_method_return(msg, "o", [path])
        if member in ("SelectSources", "Start"):
            session = msg.body[0]
            if self.sessions.get(session) != sender:
                return Message.new_error(msg, "org.freedesktop.portal.Error.NotAllowed", "unknown session")
        if member == "SelectSources":
            opts = msg.body[1]
            self.log({"call": "SelectSources", "options": self.plain(opts)})
            path = self.request_path(sender, opts["handle_token"].value)
            self.respond_later(path, 0, {})
            return Message.new_method_return(msg, "o", [path])
        if member == "Start":
            opts = msg.body[2]
            self.log({"call": "Start", "parent_window": msg.body[1], "mode": self.args.mode})
            path = self.request_path(sender, opts["handle_token"].value)
            if self.args.mode in ("deny", "cancel"):
                self.respond_later(path, 2 if self.args.mode == "deny" else 1, {})
            return Message.new_method_return(msg, "o", [path])
        return Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", f"{member} not implemented")

    async def run(self) -> None:
        self.bus = await MessageBus(bus_type=BusType.SESSION).connect()
        self.bus.add_message_handler(self.handle)
        reply = await self.bus.request_name(DESKTOP)
        print("ready", reply, flush=True)
        # Ends with the bus (scripts/pipewire-down stops the dbus-daemon).
        await self.bus.wait_for_disconnect()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["deny", "cancel", "silent"], default="deny")
    p.add_argument("--cursor-modes", type=int, default=3)
    p.add_argument("--version", type=int, default=4)
    p.add_argument("--log")
    args = p.parse_args()
    # A parent (e.g. a Swift test runner) may have left SIGTERM blocked or ignored, and both
    # survive exec; make SIGTERM/SIGINT stop us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        asyncio.run(FakePortal(args).run())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
