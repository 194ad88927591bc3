#!/usr/bin/env python3
"""A stand-in xdg-desktop-portal ScreenCast service for tests, on the session bus of
DBUS_SESSION_BUS_ADDRESS (the private one scripts/pipewire-up starts).

It owns org.freedesktop.portal.Desktop and implements exactly what broadcast uses:
  - org.freedesktop.DBus.Properties.Get/GetAll on org.freedesktop.portal.ScreenCast
    (version, AvailableSourceTypes, AvailableCursorModes);
  - ScreenCast.CreateSession / SelectSources / Start, each returning a Request object path
    (/org/freedesktop/portal/desktop/request/SENDER/TOKEN) and then emitting
    org.freedesktop.portal.Request.Response(u code, a{sv} results) on it;
  - ScreenCast.OpenPipeWireRemote -> h: a unix socket connected to the real PipeWire daemon
    ($PIPEWIRE_RUNTIME_DIR or $XDG_RUNTIME_DIR /pipewire-0), which is a valid remote fd;
  - org.freedesktop.portal.Session.Close.

The dialog outcome is --mode: grant (Start answers 0 with the node of --node, default
pw-test-screen, and a restore token), deny (Start answers 2), cancel (Start answers 1),
silent (Start never answers, to test client timeouts).

Tokens it issues are kept in --tokens FILE (one per line), so a later run of the stand-in
still recognises them. Every call is appended to --log FILE as one JSON object per line, with
"restore_token_known": true/false when SelectSources carries a restore_token.
Prints "ready" on stdout once the name is owned.

usage: fake_portal.py [--mode grant|deny|cancel|silent] [--node NAME] [--cursor-modes N]
                      [--version N] [--log FILE] [--tokens FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys

from dbus_next import BusType, Message, MessageType, Variant
from dbus_next.aio import MessageBus

DESKTOP = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SCREENCAST = "org.freedesktop.portal.ScreenCast"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
PROPS = "org.freedesktop.DBus.Properties"


def node_id(name: str) -> int:
    """The id of the PipeWire node called NAME, from pw-dump."""
    dump = json.loads(subprocess.run(["pw-dump"], capture_output=True, text=True, check=True).stdout)
    for obj in dump:
        if obj.get("type") == "PipeWire:Interface:Node":
            props = (obj.get("info") or {}).get("props") or {}
            if props.get("node.name") == name:
                return int(obj["id"])
    raise LookupError(f"no PipeWire node named {name}")


def pipewire_socket() -> int:
    run = os.environ.get("PIPEWIRE_RUNTIME_DIR") or os.environ["XDG_RUNTIME_DIR"]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(run, os.environ.get("PIPEWIRE_REMOTE", "pipewire-0")))
    return s.detach()


class FakePortal:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.bus: MessageBus | None = None
        self.sessions: dict[str, str] = {}  # session path -> owner unique name

    def log(self, entry: dict) -> None:
        if self.args.log:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def known_tokens(self) -> set[str]:
        try:
            with open(self.args.tokens) as f:
                return {line.strip() for line in f if line.strip()}
        except (OSError, TypeError):
            return set()

    def issue_token(self) -> str:
        token = "fake-restore-" + secrets.token_hex(8)
        if self.args.tokens:
            with open(self.args.tokens, "a") as f:
                f.write(token + "\n")
        return token

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
        if member in ("SelectSources", "Start", "OpenPipeWireRemote"):
            session = msg.body[0]
            if self.sessions.get(session) != sender:
                return Message.new_error(msg, "org.freedesktop.portal.Error.NotAllowed", "unknown session")
        if member == "SelectSources":
            opts = msg.body[1]
            entry = {"call": "SelectSources", "options": self.plain(opts)}
            if "restore_token" in opts:
                entry["restore_token_known"] = opts["restore_token"].value in self.known_tokens()
            self.log(entry)
            path = self.request_path(sender, opts["handle_token"].value)
            self.respond_later(path, 0, {})
            return Message.new_method_return(msg, "o", [path])
        if member == "Start":
            opts = msg.body[2]
            self.log({"call": "Start", "parent_window": msg.body[1], "mode": self.args.mode})
            path = self.request_path(sender, opts["handle_token"].value)
            if self.args.mode == "grant":
                node = node_id(self.args.node)
                stream = [node, {"source_type": Variant("u", 1), "size": Variant("(ii)", [1280, 720])}]
                token = self.issue_token()
                self.log({"event": "granted", "node": node, "restore_token": token})
                self.respond_later(path, 0, {"streams": Variant("a(ua{sv})", [stream]),
                                             "restore_token": Variant("s", token)})
            elif self.args.mode in ("deny", "cancel"):
                self.respond_later(path, 2 if self.args.mode == "deny" else 1, {})
            return Message.new_method_return(msg, "o", [path])
        if member == "OpenPipeWireRemote":
            fd = pipewire_socket()
            self.log({"call": "OpenPipeWireRemote"})
            # dbus-next does not close passed fds; ours is only needed until the reply is out.
            asyncio.get_running_loop().call_later(5, os.close, fd)
            return Message.new_method_return(msg, "h", [0], unix_fds=[fd])
        return Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", f"{member} not implemented")

    async def run(self) -> None:
        self.bus = await MessageBus(bus_type=BusType.SESSION, negotiate_unix_fd=True).connect()
        self.bus.add_message_handler(self.handle)
        reply = await self.bus.request_name(DESKTOP)
        print("ready", reply, flush=True)
        # Ends with the bus (scripts/pipewire-down stops the dbus-daemon).
        await self.bus.wait_for_disconnect()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=["grant", "deny", "cancel", "silent"], default="grant")
    p.add_argument("--node", default="pw-test-screen")
    p.add_argument("--cursor-modes", type=int, default=3)
    p.add_argument("--version", type=int, default=4)
    p.add_argument("--log")
    p.add_argument("--tokens")
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
