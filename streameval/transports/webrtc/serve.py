"""``serve --webrtc HOST:PORT``: a ``step(key)`` model as a WebRTC server, in both styles.

``POST /offer`` with JSON ``{"sdp", "type"}`` answers with JSON ``{"sdp", "type"}``. Each
peer gets its own model from the factory and its own ``ModelHost``:

- an offer with a video transceiver gets the frames as a paced video track (lossy codec), and
  JSON keydown/keyup/heartbeat on any text channel drive it (public style, browser key names);
- a data channel labelled ``streameval`` speaks our protocol: msgpack messages in (steps,
  keys, reset), whole frames out with their metadata, chunked (lossless mode).

A benchmark case starts on the text channel (the built-in ``serve`` profile): a JSON
``{"type": "configure" | "reset", "image_base64" | "image_path", "prompt", "intrinsics"}``
(``image_path`` only under the folder the server was given, ``--image-root``) resets the
model with them (``host.start_arguments``: by the names its ``reset`` takes); one it
cannot take is answered ``{"type": "error", "message": ...}`` on the same channel. Our protocol
(lossless mode) carries no image: ``attach --lossless`` refuses cases with images up front (over
MQTT the start rides on the ``reset``: ``transports/mqtt/serve.py``).

Listens on loopback unless told another address.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from streameval.errors import StartRefused, WireError, one_line
from streameval.protocol.public_keys import BROWSER_KEYS
from streameval.protocol.wire import (
    MAX_MESSAGE_BYTES,
    Frame,
    Heartbeat,
    Hello,
    KeyDown,
    KeyUp,
    decode,
    encode,
)
from streameval.transports.host import ModelHost, start_arguments
from streameval.transports.webrtc.chunks import split
from streameval.transports.webrtc.loopback import (
    LOOPBACK_HOSTS,
    peer_connection,
    use_loopback_candidates,
)

VIDEO_CLOCK = 90_000
MAX_OFFER_BYTES = 256 * 1024


def _video_track(fps: float) -> tuple[Any, asyncio.Queue[Frame]]:
    """A video track fed by a small queue (oldest frame dropped if the peer lags)."""
    import av
    from aiortc import MediaStreamTrack

    queue: asyncio.Queue[Frame] = asyncio.Queue(maxsize=4)

    class HostTrack(MediaStreamTrack):
        kind = "video"

        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        async def recv(self) -> Any:
            frame = await queue.get()
            video = av.VideoFrame.from_ndarray(frame.image, format="rgb24")
            video.pts = round(self.n * VIDEO_CLOCK / fps)
            video.time_base = Fraction(1, VIDEO_CLOCK)
            self.n += 1
            return video

    return HostTrack(), queue


class WebRTCServer:
    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        name: str,
        fps: float,
        width: int,
        height: int,
        key_names: dict[str, str] | None = None,
        image_root: Path | None = None,
    ) -> None:
        self.factory = factory
        self.image_root = image_root  # the folder a configure's image_path may name files in
        self.name = name
        self.fps = fps
        self.width = width
        self.height = height
        names = key_names or BROWSER_KEYS
        self.from_browser = {v: k for k, v in names.items()}
        self.peers: set[Any] = set()
        self.hosts: set[ModelHost] = set()
        self._runner: Any = None

    async def start(self, host: str, port: int) -> int:
        """Listen; return the port (0 picks a free one)."""
        from aiohttp import web

        if host in LOOPBACK_HOSTS:
            use_loopback_candidates()
        app = web.Application(client_max_size=MAX_OFFER_BYTES)
        app.router.add_post("/offer", self._offer)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        # port 0 asks the OS for a free one: read back which
        server: Any = site._server
        sockets = server.sockets if server is not None else []
        return int(sockets[0].getsockname()[1]) if sockets else port

    async def stop(self) -> None:
        for h in list(self.hosts):
            await h.stop()
        for pc in list(self.peers):
            with contextlib.suppress(Exception):
                await pc.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _offer(self, request: Any) -> Any:
        from aiohttp import web
        from aiortc import RTCSessionDescription

        try:
            body = await request.json()
            offer = RTCSessionDescription(sdp=str(body["sdp"]), type=str(body["type"]))
        except (ValueError, KeyError, TypeError):
            return web.Response(status=400, text='expected JSON {"sdp": ..., "type": "offer"}')
        pc = peer_connection()
        self.peers.add(pc)
        queue: asyncio.Queue[Frame] | None = None
        ours: list[Any] = []

        async def publish(frame: Frame) -> None:
            if queue is not None:
                if queue.full():
                    queue.get_nowait()
                queue.put_nowait(frame)
            for channel in ours:
                if channel.readyState == "open":
                    for chunk in split(encode(frame, encoding="raw"), frame.index):
                        channel.send(chunk)

        host = ModelHost(self.factory(), self.fps, publish)
        self.hosts.add(host)
        host.start()
        if "m=video" in offer.sdp:
            track, queue = _video_track(self.fps)
            pc.addTrack(track)

        @pc.on("datachannel")  # type: ignore[untyped-decorator]
        def on_channel(channel: Any) -> None:
            if channel.label == "streameval":
                ours.append(channel)
                hello = encode(Hello(self.name, self.fps, self.width, self.height))
                for chunk in split(hello, 0xFFFFFFFF):
                    channel.send(chunk)
            channel.on("message", lambda m: asyncio.ensure_future(self._message(host, m, channel)))

        @pc.on("connectionstatechange")  # type: ignore[untyped-decorator]
        async def on_state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await host.stop()
                self.hosts.discard(host)
                self.peers.discard(pc)
                await pc.close()

        await pc.setRemoteDescription(offer)
        await pc.setLocalDescription(await pc.createAnswer())
        return web.json_response({"sdp": pc.localDescription.sdp, "type": pc.localDescription.type})

    async def _message(self, host: ModelHost, message: Any, channel: Any) -> None:
        if isinstance(message, bytes):
            try:
                await host.handle(decode(message, max_bytes=MAX_MESSAGE_BYTES))
            except WireError as exc:
                print(f"serve: rejected message: {exc}", file=sys.stderr)
            return
        try:
            body = json.loads(message)
            kind = body.get("type")
        except (ValueError, AttributeError):
            print(f"serve: rejected text message {message[:80]!r}", file=sys.stderr)
            return
        if kind == "heartbeat":
            await host.handle(Heartbeat())
        elif kind in ("keydown", "keyup"):
            key = self.from_browser.get(str(body.get("key")))
            if key is None:
                return  # a key we do not play (a browser sends every key pressed)
            await host.handle(KeyDown(key) if kind == "keydown" else KeyUp(key))
        elif kind in ("configure", "reset"):
            await self._start(host, body, channel)

    async def _start(self, host: ModelHost, body: dict[str, Any], channel: Any) -> None:
        """A case's start: the model reset with its image, caption and intrinsics, or the
        reason it cannot be, sent back in the client's words (``{"type": "error"}``)."""
        try:
            await host.restart(start_arguments(host.model, body, self.image_root))
        except StartRefused as exc:
            words = str(exc)
        except Exception as exc:  # the model's own reset failed: its words, the server goes on
            words = one_line(f"reset failed: {type(exc).__name__}: {exc}")[:300]
        else:
            return
        print(f"serve: refused a {body.get('type')}: {words}", file=sys.stderr)
        if channel.readyState == "open":
            channel.send(json.dumps({"type": "error", "message": words}))
