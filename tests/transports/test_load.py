"""Load: one evaluator process, 4 concurrent sessions at 16 FPS 640×432, over MQTT and over
WebRTC (servers in their own process). Every session must keep up: delivered fps near 16
and the transport's queue of undelivered frames bounded (it never grows with time).

This measures the transports (receive + decode). Perception of 64 frames/s at 640×432 does
not fit in two CPU cores; there the pipeline drops frames by its declared policy (counted).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streameval.core.events import EndOfStream, EpisodeEnd, FrameEvent
from streameval.transports.base import LiveSource
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.mqtt.transport import MqttSource
from streameval.transports.native_gate import DECIDE_AFTER
from streameval.transports.webrtc.transport import WebRTCSource
from tests.transports.conftest import Broker

pytestmark = pytest.mark.long  # `make test-long`

SESSIONS = 4
SECONDS = 4.0
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def servers(broker: Broker) -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.transports.load_servers", str(broker.port), str(SESSIONS)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().split()
    assert line and line[0] == "ready", line
    try:
        yield int(line[1])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _drain(source: LiveSource) -> dict[str, float]:
    """Receive a session's frames as fast as the evaluator can (no perception)."""
    frames, t_first, t_last = 0, 0.0, 0.0
    while True:
        try:
            event = await source.recv()
        except EndOfStream:
            break
        if isinstance(event, FrameEvent):
            frames += 1
            t_last = time.perf_counter()
            t_first = t_first or t_last
            assert event.image.shape == (432, 640, 3)
        elif isinstance(event, EpisodeEnd):
            assert event.complete, event.reason
    await source.close()
    return {
        "frames": frames,
        "fps": (frames - 1) / (t_last - t_first) if frames > 1 else 0.0,
        "max_pending": source.max_pending_seen,
    }


async def _sessions(sources: list[LiveSource]) -> tuple[list[dict[str, float]], float]:
    """Per-session results and the evaluator's CPU seconds per frame received (all threads
    of this process: receive, depacketize, decode, convert)."""
    await asyncio.gather(*(s.connect() for s in sources))
    cpu0 = time.process_time()
    results = list(await asyncio.gather(*(_drain(s) for s in sources)))
    frames = sum(r["frames"] for r in results)
    return results, (time.process_time() - cpu0) / max(1, frames)


def _check(results: list[dict[str, float]], cpu_per_frame: float, what: str) -> None:
    if not _machine_has_room() and min(r["frames"] for r in results) < 8:
        # a starved server process (load average above the cores) may deliver nothing in the
        # test's 4 s; then there is no evaluator cost per frame to measure (seen at load 7)
        pytest.skip(f"{what}: load average {os.getloadavg()[0]:.1f}, servers delivered {results}")
    # headroom: how many times the evaluator's own work fits in one core at 4 × 16 fps
    headroom = 1.0 / (SESSIONS * 16 * cpu_per_frame)
    print(what, results, f"cpu {1000 * cpu_per_frame:.1f} ms/frame, headroom x{headroom:.1f}")
    for r in results:
        # a few frames, never a growing queue: the first DECIDE_AFTER frames wait by design
        # while the native-frame gate learns the stream's cadence (transports/native_gate.py)
        assert r["max_pending"] <= DECIDE_AFTER + 8, (what, results)
    assert headroom > 1.0, (what, cpu_per_frame)


def _machine_has_room() -> bool:
    """The delivered rate is the *servers'* (their own process here): on a machine whose
    load average exceeds its cores they are starved (measured 9 fps each at load 17 on 2
    cores, while the evaluator's queue stayed at 1 frame and its CPU headroom at x9.6)."""
    return os.getloadavg()[0] <= (os.cpu_count() or 1)


def _check_rate(results: list[dict[str, float]], what: str) -> None:
    if not _machine_has_room():
        print(f"{what}: load average {os.getloadavg()[0]:.1f}, delivered rate not checked")
        return
    for r in results:
        assert r["fps"] > 14.5, (what, results)
        assert r["frames"] >= 0.9 * SECONDS * 16, (what, results)


def test_four_mqtt_sessions_at_16_fps(broker: Broker, servers: int) -> None:
    live = LiveConfig(clock="wall", seconds_per_key=SECONDS / 2)
    sources: list[LiveSource] = [
        MqttSource(
            SourceRequest(
                broker.url(f"load{i}"), ("A", "D"), episode=f"m{i}", suite="load", config=live
            )
        )
        for i in range(SESSIONS)
    ]
    results, cpu = asyncio.run(_sessions(sources))
    _check(results, cpu, "mqtt")
    _check_rate(results, "mqtt")


def test_four_webrtc_sessions_at_16_fps(servers: int) -> None:
    live = LiveConfig(clock="wall", seconds_per_key=SECONDS / 2)
    sources: list[LiveSource] = [
        WebRTCSource(
            SourceRequest(
                f"webrtc+http://127.0.0.1:{servers}/offer",
                ("A", "D"),
                episode=f"w{i}",
                suite="load",
                config=live,
            )
        )
        for i in range(SESSIONS)
    ]
    results, cpu = asyncio.run(_sessions(sources))
    _check(results, cpu, "webrtc")
    # The delivered rate is the server's: the test's one server process VP8-encodes 64
    # frames/s of 640x432, which needs more than this 2-core machine spares (measured 17 fps
    # with one session, 4-7 fps each with four, at load average 15). Checked where the
    # machine has cores for both ends.
    if (os.cpu_count() or 1) >= 8:
        _check_rate(results, "webrtc")
