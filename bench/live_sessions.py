"""Two live 16 fps WebSocket sessions side by side, the full default stack on each
(docs/benchmarks.md#live-sessions-side-by-side).

One evaluator process runs two episodes at once (``run_episode`` twice in one event loop, as
``run_jobs_on_servers`` does), each attached to its own WebSocket stream: a server process of
its own (as a model server is) that sends a rendered rollout's frames as 640×432 JPEG at
16 fps, with a ``chunk_done`` every 9 frames (the ``worldfoundry`` profile's shape). Every
session must keep up: no dropped frame (a live source drops what perception cannot take), no
backlog (the perception queue stays a few frames deep), and scores soon after the last frame.

Prints, per session: frames received and perceived, dropped, the frames/s perceived, the
deepest perception queue, last frame → final scores; and the evaluator's CPU seconds per
second of video (its TransNetV2 workers included), with the load average.

Usage: python bench/live_sessions.py [--sessions 2] [--seconds-per-key 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.replay import ReplaySource, read_rollout

from bench.common import process_cpu_seconds, serve_websocket, write_rollout
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, Progress
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.urls import AttachOptions, open_network_source

FPS = 16.0
KEYS = ("W", "A", "L")


def _serve(frames_path: str, port_out: mp.Queue[int]) -> None:  # type: ignore[type-arg]
    """A model server in its own process: the rollout's JPEG frames at 16 fps, in a loop."""
    from aiohttp import web

    payload = json.loads(Path(frames_path).read_text())
    frames = [bytes.fromhex(h) for h in payload]

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=4 * 1024**2)
        await ws.prepare(request)
        await ws.receive()  # configure
        await ws.send_str(json.dumps({"type": "ready", "fps": FPS}))
        await ws.receive()  # the first keydown
        t0, n = time.monotonic(), 0
        try:
            while not ws.closed:
                await asyncio.sleep(max(0.0, t0 + n / FPS - time.monotonic()))
                await ws.send_bytes(frames[n % len(frames)])
                n += 1
                if n % 9 == 0:
                    await ws.send_str(json.dumps({"type": "chunk_done", "frames": 9}))
        except ConnectionError:
            pass  # the evaluator closed the session after its last key
        return ws

    async def main() -> None:
        _, port = await serve_websocket(socket)
        port_out.put(port)
        await asyncio.Event().wait()

    asyncio.run(main())


class Watch(EpisodeObserver):
    """What one session's pipeline reports: queue depth, drops, when the last frame came."""

    def __init__(self) -> None:
        self.max_queue = 0
        self.dropped = 0
        self.received = 0
        self.first_frame = 0.0
        self.last_frame = 0.0
        self.end = 0.0

    def on_frame(self, event: object) -> None:
        self.received += 1
        self.last_frame = time.perf_counter()
        self.first_frame = self.first_frame or self.last_frame

    def on_progress(self, progress: Progress) -> None:
        self.max_queue = max(self.max_queue, progress.queue_depth)
        self.dropped = progress.dropped

    def on_end(self, outcome: EpisodeOutcome) -> None:
        self.end = time.perf_counter()


def jpeg_frames(rollout: Path, out: Path) -> None:
    """The rollout's frames as JPEG (quality 90), hex in a JSON list, for the servers."""
    import av
    import cv2

    with av.open(str(rollout / "video.mp4")) as container:
        frames = [f.to_ndarray(format="bgr24") for f in container.decode(video=0)]
    encoded = [bytes(cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]) for f in frames]
    out.write_text(json.dumps([e.hex() for e in encoded]))


async def sessions(ports: list[int], seconds_per_key: float, base: Path) -> list[Watch]:
    watches = [Watch() for _ in ports]
    config = PipelineConfig()  # the full default stack (CPU embedding, TransNetV2, imaging)

    async def one(i: int, port: int) -> EpisodeOutcome:
        source = open_network_source(
            f"ws://127.0.0.1:{port}/ws",
            KEYS,
            episode=f"session{i}",
            suite="bench",
            options=AttachOptions(
                clock=None, seconds_per_key=seconds_per_key, profile="worldfoundry"
            ),
        )
        return await run_episode(
            source, config=config, results_dir=base / f"session{i}", observers=[watches[i]]
        )

    outcomes = await asyncio.gather(*(one(i, p) for i, p in enumerate(ports)))
    for outcome in outcomes:
        assert outcome.complete, outcome.errors
    return watches


def warm_up(rollout: Path, sessions: int, out: Path) -> None:
    """Replay a second of video in ``sessions`` episodes at once: the TransNetV2 workers a
    run's first cases start (about a second each, on the perception thread) are then in the
    pool, as they are for every later case of a run."""

    async def replays() -> None:
        await asyncio.gather(
            *(
                run_episode(
                    ReplaySource(read_rollout(rollout)),
                    config=PipelineConfig(),
                    results_dir=out / f"warm{i}",
                )
                for i in range(sessions)
            )
        )

    asyncio.run(replays())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--seconds-per-key", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout in this dir")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="streameval-bench-"))
    rollout = base / "live_rollout"
    if not (rollout / "meta.json").exists():
        write_rollout(rollout, list(KEYS), seconds_per_key=args.seconds_per_key)
    frames = base / "live_frames.json"
    if not frames.exists():
        jpeg_frames(rollout, frames)
    warm = base / "warm_rollout"
    if not (warm / "meta.json").exists():
        write_rollout(warm, ["W"], seconds_per_key=1.0)
    warm_up(warm, args.sessions, base / "out")
    ctx = mp.get_context("spawn")
    servers, ports = [], []
    for _ in range(args.sessions):
        port_out: mp.Queue[int] = ctx.Queue()  # type: ignore[type-arg]
        server = ctx.Process(target=_serve, args=(str(frames), port_out), daemon=True)
        server.start()
        servers.append(server)
        ports.append(port_out.get(timeout=60))
    video_s = len(KEYS) * args.seconds_per_key
    try:
        load_before = os.getloadavg()[0]
        exclude = {s.pid for s in servers if s.pid is not None}
        cpu0, t0 = process_cpu_seconds(exclude), time.perf_counter()
        watches = asyncio.run(sessions(ports, args.seconds_per_key, base / "out"))
        cpu = process_cpu_seconds(exclude) - cpu0
        wall = time.perf_counter() - t0
    finally:
        for server in servers:
            server.terminate()
    print(
        f"{args.sessions} live WebSocket sessions at {FPS:.0f} fps side by side, 640x432 JPEG,"
        f" {video_s:.0f} s each, full default stack, one evaluator process"
        " (TransNetV2 workers already in the pool, as for a run's later cases)"
    )
    for i, w in enumerate(watches):
        span = w.last_frame - w.first_frame
        fps = (w.received - 1) / span if span > 0 else 0.0
        print(
            f"  session {i}: {w.received} frames received at {fps:5.2f} frames/s, dropped"
            f" {w.dropped}, perception queue at most {w.max_queue} frames;"
            f"  last frame -> final scores {w.end - w.last_frame:5.2f} s"
        )
    print(
        f"  evaluator CPU (TransNetV2 workers included): {cpu:.1f} s in {wall:.1f} s wall ="
        f" {cpu / (video_s * args.sessions):.3f} CPU-s per video-s per session"
    )
    print(
        f"  (load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} on"
        f" {os.cpu_count()} cores, the servers' own work included)"
    )


if __name__ == "__main__":
    main()
