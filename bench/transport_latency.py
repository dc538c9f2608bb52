"""Latency and decode cost of the network transports (docs/serve-formats.md).

Prints, on loopback with a model that costs nothing (a fixed 640×432 frame):
  - key-to-frame latency: from the evaluator's ``step`` (the key for frame i) to frame i
    handed to the pipeline, through a real mosquitto broker (MQTT) and through two aiortc
    peers (WebRTC lossless); both ends are streameval (host + evaluator). For MQTT the same
    round trip with plain aiomqtt clients (no streameval code, same broker, same payload size)
    is measured in alternating blocks of the same run: the difference of the medians is what
    streameval adds (target: ≤ 5 ms), the rest is the broker, paho/aiomqtt and the kernel,
    which on a loaded machine dominate;
  - the same over a loopback aiohttp WebSocket (``ws_transport.py``): streameval's
    ``WebSocketSource`` (profile template, message classification, admission, chunk log)
    against plain aiohttp sending the key and decoding the binary JPEG (target: ≤ 5 ms added);
  - decode cost per 640×432 frame of each transport's payload: raw msgpack (MQTT, lossless
    WebRTC), PNG, JPEG (MJPEG), VP8 (public WebRTC video track, PyAV/libvpx + RGB convert).

Usage: python bench/transport_latency.py [--frames N]   (needs mosquitto on PATH for MQTT)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.protocol.wire import Frame, decode, encode

from streameval.core.events import EndOfStream, FrameEvent, KeySent
from streameval.transports.base import LiveSource
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.mqtt.serve import serve_mqtt
from streameval.transports.mqtt.transport import MqttSource
from streameval.transports.webrtc.serve import WebRTCServer
from streameval.transports.webrtc.transport import WebRTCSource

W, H, FPS = 640, 432, 16.0
BLOCKS = 4
WEBRTC_FRAMES = 40


class FixedFrame:
    """A model whose step costs nothing: latency measured is the transports' alone."""

    def __init__(self) -> None:
        self.image = np.random.default_rng(0).integers(0, 255, (H, W, 3), dtype=np.uint8)

    def step(self, key: str) -> np.ndarray:
        return self.image


async def _latencies(source: LiveSource) -> list[float]:
    await source.connect()
    t0 = time.perf_counter()
    sent: dict[int, float] = {}
    out: list[float] = []
    try:
        while True:
            event = await source.recv()
            if isinstance(event, KeySent):
                sent[event.frame] = event.t_wall
            elif isinstance(event, FrameEvent) and event.index in sent:
                out.append(time.perf_counter() - sent.pop(event.index))
    except EndOfStream:
        pass
    await source.close()
    print(f"  ({len(out) / (time.perf_counter() - t0):.1f} frames/s with one frame in flight)")
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def bare_round_trips(port: int, frames: int, size: int) -> list[float]:
    """The floor no MQTT evaluator goes under: the same round trip with no streameval code
    (plain aiomqtt clients in this loop, the same broker, a key of a few bytes out at QoS 1,
    a payload of the raw frame's size back at QoS 0)."""
    import aiomqtt

    payload = np.random.default_rng(2).integers(0, 255, size, dtype=np.uint8).tobytes()
    common = {"hostname": "127.0.0.1", "port": port, "max_queued_incoming_messages": 1024}
    out: list[float] = []
    async with aiomqtt.Client(**common) as server, aiomqtt.Client(**common) as evaluator:  # type: ignore[arg-type]
        await server.subscribe("bare/keys", qos=1)
        await evaluator.subscribe("bare/frames", qos=0)

        async def answer() -> None:
            async for _ in server.messages:
                await server.publish("bare/frames", payload, qos=0)

        answering = asyncio.create_task(answer())
        frames_in = evaluator.messages.__aiter__()
        for i in range(frames):
            t = time.perf_counter()
            await evaluator.publish("bare/keys", b"step %d" % i, qos=1)
            await frames_in.__anext__()
            out.append(time.perf_counter() - t)
        answering.cancel()
        await asyncio.gather(answering, return_exceptions=True)
    return out[3:]  # connection warm-up


async def streameval_round_trips(port: int, frames: int) -> list[float]:
    url = f"mqtt://127.0.0.1:{port}/bench"
    ready = asyncio.Event()
    server = asyncio.create_task(
        serve_mqtt(FixedFrame(), url, name="fixed", fps=FPS, width=W, height=H, ready=ready)
    )
    await ready.wait()
    try:
        live = LiveConfig(clock="video", seconds_per_key=frames / FPS)
        source = MqttSource(SourceRequest(url, ("W",), episode="bench", suite="bench", config=live))
        return (await _latencies(source))[3:]
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)


async def mqtt_latency(frames: int) -> tuple[list[float], list[float]] | None:
    """(streameval, bare) round trips through one mosquitto, in alternating blocks so both
    see the same machine load: bare, streameval, bare, streameval…"""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(exe).exists():
        return None
    port = _free_port()
    size = len(encode(Frame(index=0, key="W", image=FixedFrame().image)))
    ours: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "m.conf"
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
        broker = subprocess.Popen([exe, "-c", str(conf)], stderr=subprocess.DEVNULL)
        try:
            await asyncio.sleep(0.5)
            for _ in range(BLOCKS):
                bare += await bare_round_trips(port, frames // BLOCKS, size)
                ours += await streameval_round_trips(port, frames // BLOCKS)
            return ours, bare
        finally:
            broker.terminate()
            broker.wait()


async def webrtc_latency(frames: int) -> list[float]:
    server = WebRTCServer(FixedFrame, name="fixed", fps=FPS, width=W, height=H)
    port = await server.start("127.0.0.1", 0)
    try:
        live = LiveConfig(clock="video", seconds_per_key=frames / FPS)
        source = WebRTCSource(
            SourceRequest(
                f"webrtc+http://127.0.0.1:{port}/offer",
                ("W",),
                episode="bench",
                suite="bench",
                config=live,
            ),
            lossless=True,
        )
        return await _latencies(source)
    finally:
        await server.stop()


def _per_call_ms(fn: Callable[[], object], n: int = 50) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return 1000 * (time.perf_counter() - t) / n


def _vp8_decode_ms(image: np.ndarray, n: int = 50) -> float:
    import av

    codec = av.CodecContext.create("libvpx", "w")
    codec.width, codec.height, codec.pix_fmt = W, H, "yuv420p"
    codec.options = {"deadline": "realtime", "cpu-used": "8"}
    packets = []
    rng = np.random.default_rng(1)
    for i in range(n):
        shifted = np.roll(image, 4 * i, axis=1) ^ rng.integers(0, 2, image.shape, dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(shifted, format="rgb24")
        frame.pts = i
        packets.extend(codec.encode(frame))
    packets.extend(codec.encode(None))
    decoder = av.CodecContext.create("libvpx", "r")
    t = time.perf_counter()
    count = 0
    for packet in packets:
        for frame in decoder.decode(packet):
            frame.to_ndarray(format="rgb24")
            count += 1
    return 1000 * (time.perf_counter() - t) / max(1, count)


async def _thread_hop_ms(n: int = 200) -> float:
    """``asyncio.to_thread`` of a step that costs nothing: the host's hop off the loop."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await asyncio.to_thread(lambda: None)
        times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times)


def own_work_ms() -> dict[str, float]:
    """What streameval itself does per frame on the MQTT path besides waiting on sockets:
    the host's step off the event loop, encoding the frame, decoding it."""
    frame = Frame(index=0, key="W", image=FixedFrame().image)
    payload = encode(frame)
    return {
        "model step off the loop (to_thread)": asyncio.run(_thread_hop_ms()),
        "encode raw frame (server)": _per_call_ms(lambda: encode(frame)),
        "decode raw frame (evaluator)": _per_call_ms(lambda: decode(payload)),
    }


def decode_costs() -> dict[str, float]:
    import cv2

    image = cv2.GaussianBlur(
        np.random.default_rng(0).integers(0, 255, (H, W, 3), dtype=np.uint8), (0, 0), 2
    )
    frame = Frame(index=0, key="W", image=image)
    raw, png, jpeg = (encode(frame, encoding=e) for e in ("raw", "png", "jpeg"))  # type: ignore[arg-type]
    return {
        "raw msgpack (MQTT, WebRTC lossless)": _per_call_ms(lambda: decode(raw)),
        "png msgpack": _per_call_ms(lambda: decode(png)),
        "jpeg (MJPEG, q90)": _per_call_ms(lambda: decode(jpeg)),
        "vp8 (WebRTC video track)": _vp8_decode_ms(image),
    }


def _summary(name: str, lat: list[float] | None) -> float | None:
    if not lat:
        print(f"{name:<34} not measured (mosquitto not installed)")
        return None
    ms = sorted(1000 * x for x in lat)
    median = statistics.median(ms)
    print(
        f"{name:<34} median {median:6.2f} ms   p95 "
        f"{ms[int(0.95 * (len(ms) - 1))]:6.2f} ms   ({len(ms)} frames)"
    )
    return median


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0] + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


def main() -> None:
    import streameval.transports.base as live_module

    # one frame in flight: the latency of a single key, not of a pipelined request window
    live_module.STEP_WINDOW = 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=400)
    args = parser.parse_args()
    print(f"load average {_load()} (before)")
    print("key-to-frame latency on loopback (zero-cost model, 640x432 raw, one frame in flight)")
    measured = asyncio.run(mqtt_latency(args.frames))
    if measured is None:
        _summary("MQTT (mosquitto), step mode", None)
    else:
        ours = _summary("MQTT: streameval serve + attach", measured[0])
        bare = _summary("MQTT: bare aiomqtt, same broker", measured[1])
        if ours is not None and bare is not None:
            print(
                f"{'  added by streameval':<34} median {ours - bare:6.2f} ms   "
                f"(ratio {ours / bare:.2f}; target <= 5 ms)"
            )
    print(f"load average {_load()} (after MQTT)")
    for name, ms in own_work_ms().items():
        print(f"{'  ' + name:<38} {ms:6.2f} ms")
    # aiortc's SCTP moves a raw frame in ~0.4 s: a few dozen frames say it, 400 take minutes
    from bench.ws_transport import ws_latency

    ws_ours, ws_bare = asyncio.run(ws_latency(args.frames))
    ours_ws = _summary("WebSocket: streameval attach ws://", ws_ours)
    bare_ws = _summary("WebSocket: bare aiohttp + decode", ws_bare)
    if ours_ws is not None and bare_ws is not None:
        print(
            f"{'  added by streameval':<34} median {ours_ws - bare_ws:6.2f} ms   "
            f"(ratio {ours_ws / bare_ws:.2f}; target <= 5 ms)"
        )
    webrtc_frames = min(args.frames, WEBRTC_FRAMES)
    _summary("WebRTC lossless (data channel)", asyncio.run(webrtc_latency(webrtc_frames)))
    print("decode cost per 640x432 frame")
    for name, ms in decode_costs().items():
        print(f"{name:<34} {ms:6.2f} ms")


if __name__ == "__main__":
    main()
