"""``serve --webrtc`` with the procedural world, attached by two aiortc peers in one process:
lossless mode (our protocol on the data channel) and the public style (VP8 video track)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.webrtc.serve import WebRTCServer
from streameval.transports.webrtc.transport import WebRTCSource
from tests.transports.worlds import CONFIG, MEMORY_OFF, NAME, in_process, normalized, world

# Real-time sessions on two shared cores: a score assertion can miss when the machine is
# starved (frames rendered late get the next key); one rerun of the assertion, never of a
# timeout or any other exception.
pytestmark = pytest.mark.flaky(reruns=1, only_rerun=["AssertionError"])


async def _attach(
    keys: tuple[str, ...], live: LiveConfig, config: PipelineConfig = CONFIG, **kw: Any
) -> EpisodeOutcome:
    w = world()
    server = WebRTCServer(world, name=NAME, fps=w.fps, width=w.width, height=w.height)
    port = await server.start("127.0.0.1", 0)
    try:
        source = WebRTCSource(
            SourceRequest(
                f"webrtc+http://127.0.0.1:{port}/offer",
                keys,
                episode="ep",
                suite="test",
                config=live,
            ),
            **kw,
        )
        await source.connect()
        return await run_episode(source, config=config)
    finally:
        await server.stop()


def test_lossless_mode_is_bit_identical_to_in_process() -> None:
    keys, spk = ("A", "D"), 1.5
    served = asyncio.run(
        _attach(keys, LiveConfig(clock="video", seconds_per_key=spk), lossless=True)
    )
    assert served.complete, served.errors
    assert served.frames == 48
    assert normalized(served) == normalized(in_process(keys, spk))
    assert served.interactivity["alignment"] == "reported"


def test_public_style_video_track_scores_like_in_process() -> None:
    keys, spk = ("A", "D"), 4.0
    # direction columns only (memory and quality are not within a codec tolerance, below)
    served = asyncio.run(_attach(keys, LiveConfig(clock="wall", seconds_per_key=spk), MEMORY_OFF))
    local = in_process(keys, spk, MEMORY_OFF)
    inter = served.interactivity
    assert served.complete, served.errors
    assert inter["alignment"] == "inferred" and inter["clock"] == "wall"
    assert served.frames > 20
    # Tolerance over VP8 + wall clock: direction accuracy and purity within 5 points of
    # in-process (measured accuracy 99.84 vs 99.95, purity 99.13 vs 99.25 at 16 fps delivered;
    # a world rendering slower than 16 fps used to lose purity, 49.6 vs 99.4, before the fit
    # followed the segments that arrived). Memory and quality are not within a codec
    # tolerance (revisit 95.1 vs 100, imaging drift 90.7 vs 95.6: VP8 artefacts and arrival
    # alignment); the lossless test above is the exact comparison.
    dropped, received = inter["frames_dropped"], inter["frames_received"]
    if dropped > 0.1 * received or (inter["delivered_fps"] or 0) < 8:
        pytest.skip(
            f"machine too loaded to compare scores: perception dropped {dropped} of "
            f"{received} frames, {inter['delivered_fps']} fps delivered"
        )
    for name in ("direction_accuracy_trans", "direction_purity_trans"):
        a, b = normalized(served)[name], normalized(local)[name]
        assert a is not None and b is not None and abs(a - b) <= 5.0, (name, a, b)
