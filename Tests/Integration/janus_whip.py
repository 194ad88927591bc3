"""A WHIP endpoint whose media side is Janus (an ICE-lite WebRTC server), for the ICE-lite test.

    python janus_whip.py --token TOKEN --report OUT.json --work DIR

Starts its own `janus` (by pid; its config folder written into DIR: ICE-lite, loopback only,
the HTTP API on a free loopback port, only the Record&Play plugin), then serves WHIP on
127.0.0.1 (a free port, printed as {"port": P} on stdout): POST /whip/live with the bearer token
(401 otherwise, counted) -> Janus: create a session, attach janus.plugin.recordplay, "record"
with the offer -> 201 with Janus's answer and a Location; DELETE on it -> "stop" (Janus closes
the .mjr recordings) and the session destroyed. On DELETE or SIGTERM it stops Janus, converts the
recordings with janus-pp-rec (H.264 -> .mp4, Opus -> .opus) and writes the report:

    {"posts", "unauthorized", "deletes", "answer_ice_lite", "answer_codecs", "errors",
     "recordings": [paths], "converted": {"video": path | null, "audio": path | null}}

What arrived is decoded by the test with PyAV, not here and never by our own parser.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
from aiohttp import web

JANUS = "/usr/bin/janus"
PP_REC = "/usr/bin/janus-pp-rec"
LIBDIR = "/usr/lib/x86_64-linux-gnu/janus"


def free_port() -> int:
    # The one port picker (tools/ is on PYTHONPATH): the parallel runner's per-worker block.
    from bktools.ingest import free_port as pick
    return pick()


def write_config(conf: Path, rec: Path, http_port: int) -> None:
    conf.mkdir(parents=True, exist_ok=True)
    rec.mkdir(parents=True, exist_ok=True)
    plugins = sorted(p.name for p in Path(LIBDIR, "plugins").glob("libjanus_*.so") if "recordplay" not in p.name)
    transports = sorted(p.name for p in Path(LIBDIR, "transports").glob("libjanus_*.so") if "http" not in p.name)
    (conf / "janus.jcfg").write_text(f"""general: {{
    configs_folder = "{conf}"
    plugins_folder = "{LIBDIR}/plugins"
    transports_folder = "{LIBDIR}/transports"
    events_folder = "{LIBDIR}/events"
    loggers_folder = "{LIBDIR}/loggers"
    debug_level = 4
    admin_secret = "{secrets.token_hex(8)}"
}}
media: {{
    rtp_port_range = "20000-40000"
}}
nat: {{
    ice_lite = true
    full_trickle = false
    ice_enforce_list = "127.0.0.1"
    ignore_mdns = true
}}
plugins: {{
    disable = "{','.join(plugins)}"
}}
transports: {{
    disable = "{','.join(transports)}"
}}
events: {{
    broadcast = false
}}
""")
    (conf / "janus.transport.http.jcfg").write_text(f"""general: {{
    json = "plain"
    base_path = "/janus"
    http = true
    port = {http_port}
    ip = "127.0.0.1"
    https = false
}}
admin: {{
    admin_http = false
}}
""")
    (conf / "janus.plugin.recordplay.jcfg").write_text(f"""general: {{
    path = "{rec}"
}}
""")


class Front:
    def __init__(self, token: str, report: Path, work: Path):
        self.token, self.report_path, self.work = token, report, work
        self.rec = work / "recordings"
        self.http_port = free_port()
        self.api = f"http://127.0.0.1:{self.http_port}/janus"
        self.state = {"posts": 0, "unauthorized": 0, "deletes": 0, "answer_ice_lite": None, "answer_codecs": [],
                      "errors": [], "recordings": [], "converted": {"video": None, "audio": None}}
        self.janus: subprocess.Popen | None = None
        self.session: int | None = None
        self.handle: int | None = None
        self.client: aiohttp.ClientSession | None = None
        self.keepalive: asyncio.Task | None = None
        self.done = asyncio.Event()

    async def start_janus(self) -> None:
        conf = self.work / "janus-conf"
        write_config(conf, self.rec, self.http_port)
        log = open(self.work / "janus.log", "wb")
        self.janus = subprocess.Popen([JANUS, "--configs-folder", str(conf), "--config", str(conf / "janus.jcfg"),
                                       "--disable-colors"], stdout=log, stderr=subprocess.STDOUT)
        self.client = aiohttp.ClientSession()
        for _ in range(100):
            if self.janus.poll() is not None:
                raise RuntimeError(f"janus exited {self.janus.returncode}: see {self.work / 'janus.log'}")
            try:
                async with self.client.get(f"{self.api}/info") as r:
                    if r.status == 200:
                        info = await r.json(content_type=None)
                        if "janus.plugin.recordplay" in info.get("plugins", {}):
                            return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError("janus did not answer on its HTTP API within 10 s")

    async def call(self, path: str, body: dict) -> dict:
        body = {"transaction": secrets.token_hex(6), **body}
        async with self.client.post(f"{self.api}{path}", json=body) as r:
            return await r.json(content_type=None)

    async def event(self, timeout: float = 10) -> dict:
        """The next asynchronous event of the session (long poll)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while loop.time() < end:
            async with self.client.get(f"{self.api}/{self.session}?maxev=1") as r:
                ev = await r.json(content_type=None)
            if ev.get("janus") == "event":
                return ev
        raise RuntimeError("no event from janus")

    async def keep_alive(self) -> None:
        while True:
            await asyncio.sleep(15)
            await self.call(f"/{self.session}", {"janus": "keepalive"})

    async def post(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self.state["unauthorized"] += 1
            return web.Response(status=401)
        self.state["posts"] += 1
        offer = await request.text()
        try:
            s = await self.call("", {"janus": "create"})
            self.session = s["data"]["id"]
            h = await self.call(f"/{self.session}", {"janus": "attach", "plugin": "janus.plugin.recordplay"})
            self.handle = h["data"]["id"]
            ack = await self.call(f"/{self.session}/{self.handle}", {
                "janus": "message", "body": {"request": "record", "name": "whip", "filename": "whip"},
                "jsep": {"type": "offer", "sdp": offer}})
            if ack.get("janus") not in ("ack", "event"):
                raise RuntimeError(f"record refused: {ack}")
            ev = ack if ack.get("janus") == "event" else await self.event()
            answer = (ev.get("jsep") or {}).get("sdp")
            if not answer:
                raise RuntimeError(f"no answer: {ev}")
        except Exception as e:  # the test reads the errors from the report
            self.state["errors"].append(f"POST: {e!r}")
            return web.Response(status=500, text=str(e))
        self.state["answer_ice_lite"] = bool(re.search(r"^a=ice-lite\r?$", answer, re.M))
        self.state["answer_codecs"] = sorted(set(m.lower() for m in re.findall(r"^a=rtpmap:\d+ (\w+)/", answer, re.M)))
        self.keepalive = asyncio.create_task(self.keep_alive())
        return web.Response(status=201, text=answer, content_type="application/sdp",
                            headers={"Location": "/whip/resource/1"})

    async def delete(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self.state["unauthorized"] += 1
            return web.Response(status=401)
        self.state["deletes"] += 1
        try:
            await self.call(f"/{self.session}/{self.handle}", {"janus": "message", "body": {"request": "stop"}})
            await asyncio.sleep(0.5)
            await self.call(f"/{self.session}", {"janus": "destroy"})
        except Exception as e:
            self.state["errors"].append(f"DELETE: {e!r}")
        self.done.set()
        return web.Response(status=200)

    async def finish(self) -> None:
        if self.keepalive:
            self.keepalive.cancel()
        if self.client:
            await self.client.close()
        if self.janus and self.janus.poll() is None:
            self.janus.send_signal(signal.SIGINT)
            try:
                self.janus.wait(10)
            except subprocess.TimeoutExpired:
                self.janus.kill()
                self.janus.wait()
        mjr = sorted(str(p) for p in self.rec.glob("*.mjr"))
        self.state["recordings"] = mjr
        for path in mjr:
            kind = "video" if "video" in Path(path).name else "audio"
            out = Path(path).with_suffix(".mp4" if kind == "video" else ".opus")
            r = subprocess.run([PP_REC, path, str(out)], capture_output=True, text=True, timeout=120)
            if r.returncode == 0 and out.exists():
                self.state["converted"][kind] = str(out)
            else:
                self.state["errors"].append(f"janus-pp-rec {Path(path).name}: exit {r.returncode} {r.stderr[-300:]}")
        self.report_path.write_text(json.dumps(self.state))


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", required=True)
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    front = Front(a.token, a.report, a.work)
    try:
        await front.start_janus()
    except Exception as e:
        front.state["errors"].append(repr(e))
        await front.finish()
        print(json.dumps({"error": repr(e)}), flush=True)
        return 1
    app = web.Application()
    app.router.add_post("/whip/live", front.post)
    app.router.add_delete("/whip/resource/1", front.delete)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port, "janus_pid": front.janus.pid}), flush=True)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, front.done.set)
    await front.done.wait()
    await runner.cleanup()
    await front.finish()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
