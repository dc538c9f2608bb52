"""Every served style of the field, each against a test server written from its public
description (``ws_servers``, ``press_servers``, ``keycode_server``: chunked generation, keys
read at chunk boundaries, the procedural world), attached with its built-in profile: clean vs
reversed direction accuracy, a server 1.5 s late scores a lower response latency, and a turn.

Measured (2-core machine): direction accuracy clean 100 / reversed 0 for every style; turn
(L/R) rotation accuracy 97.0–99.5 (86.6–89.9 before the depth-free fit's derotation,
docs/methods.md#motion-type-fit); response_latency_trans on time vs 1.5 s late: worldfoundry
82.8 vs 43.8, keycode 85.9 vs 57.8, press 58.3 vs 18.3, gamecraft 69.8 vs 41.3, camera-pose
86.1 vs 0.0 (press servers answer one block late already: one press queued per block)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from pathlib import Path

import pytest
from streameval.replay import ReplaySource
from streameval.replay.rollout import read_rollout_dir

from streameval.core.observers import EpisodeOutcome
from streameval.engine.pipeline import run_episode
from streameval.engine.recording import RecordingObserver
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.styles import STYLES, attach_style
from tests.transports.worlds import CONFIG, MEMORY_OFF, world
from tests.transports.ws_servers import command_app, start

# Real-time sessions on two shared cores: a score assertion can miss when the machine is
# starved (frames rendered late get the next key); one rerun of the assertion, never of a
# timeout or any other exception.
pytestmark = pytest.mark.flaky(reruns=1, only_rerun=["AssertionError"])


NAMES = list(STYLES)


def _accuracy(outcome: object, metric: str) -> float:
    value = outcome.scores.metrics[metric].normalized  # type: ignore[attr-defined]
    assert value is not None, metric
    return float(value)


async def _in_turn(*episodes: Awaitable[EpisodeOutcome]) -> list[EpisodeOutcome]:
    """The episodes one after the other, each against a server of its own. Not side by side:
    a test's three real-time sessions at 16 fps (evaluator and server each) ask ~1.4 cores,
    and with the suite's other workers busy on two cores the servers fell behind: a press
    server answered its first key 1.8 s late, the stable zone of a 2.5 s key held only
    stillness and the clean episode scored 0 (CI, four tests; reproduced with three workers
    on this module: 1–3 of 14 failed side by side, 0 of 28 one after the other). WebRTC
    styles always went one after the other (a VP8 encoder and decoder per peer)."""
    return [await episode for episode in episodes]


# gamecraft runs with `make test-long`: `make test` keeps its style attached (bursts below) and
# direction scored over MJPEG with keys on an HTTP channel (mjpeg/test_transport.py)
CLEAN_IN_MAKE_TEST = ("worldfoundry", "keycode", "press", "camera-pose")


@pytest.mark.parametrize(
    "name",
    [n if n in CLEAN_IN_MAKE_TEST else pytest.param(n, marks=pytest.mark.long) for n in NAMES],
)
def test_clean_scores_high_reversed_low_and_a_turn_is_a_turn(name: str) -> None:
    clean, reversed_, turn = asyncio.run(
        _in_turn(
            attach_style(name, ("W", "S"), 2.5, config=MEMORY_OFF),
            attach_style(name, ("W", "S"), 2.5, reverse=True, config=MEMORY_OFF),
            attach_style(name, ("L", "R"), 2.5, config=MEMORY_OFF),
        )
    )
    for outcome in (clean, reversed_, turn):
        assert outcome.complete, outcome.errors
        assert outcome.interactivity["alignment"] == "inferred"
    assert _accuracy(clean, "direction_accuracy_trans") >= 80
    assert _accuracy(reversed_, "direction_accuracy_trans") <= 20
    assert _accuracy(turn, "direction_accuracy_rot") >= 80


# The late-server mechanism is the same for every style (keys held or pressed, frames timed on
# arrival): `make test` checks it on one held-key style here and on the public WebRTC peer
# (test_public_peer.py); `make test-long` on every style, pressed keys too.
LATE_IN_MAKE_TEST = ("worldfoundry",)


@pytest.mark.parametrize(
    "name",
    [n if n in LATE_IN_MAKE_TEST else pytest.param(n, marks=pytest.mark.long) for n in NAMES],
)
def test_a_late_server_scores_lower_response_latency(name: str) -> None:
    """Two 4 s keys (the switch's segment has a stable zone; webrtc/test_public_peer.py)."""
    on_time, late = asyncio.run(
        _in_turn(
            attach_style(name, ("A", "D"), 4.0, config=MEMORY_OFF),
            attach_style(name, ("A", "D"), 4.0, delay_s=1.5, config=MEMORY_OFF),
        )
    )
    fast = _accuracy(on_time, "response_latency_trans")
    assert late.interactivity["key_to_response_ms_median"] > 1500
    slow_result = late.scores.metrics["response_latency_trans"]
    if slow_result.status == "not_applicable":
        # a style that answers a request per chunk (camera-pose) delivers 1.5 s late too few
        # frames for the switch's segment to have a stable zone: not a score of 0
        # (docs/methods.md#shortest-keys)
        assert slow_result.reason is not None and "keys too short" in slow_result.reason
        print(f"{name}: response_latency_trans on time {fast:.1f}, 1.5 s late: too few frames")
        return
    slow = _accuracy(late, "response_latency_trans")
    print(f"{name}: response_latency_trans on time {fast:.1f}, 1.5 s late {slow:.1f}")
    assert fast - slow > 5


def test_chunk_statistics_reach_the_episode() -> None:
    outcome = asyncio.run(attach_style("worldfoundry", ("W",), 3.0, config=MEMORY_OFF))
    inter = outcome.interactivity
    assert inter["chunk_origin"] == "server" and inter["chunks"] >= 3
    assert inter["chunk_frames_median"] == 9
    assert inter["server_generation_ms"] > 0 and inter["server_queue_depth"] >= 0
    assert inter["server_dropped_frames"] == 0
    starts = inter["chunk_starts"]
    assert starts == sorted(starts) and starts[0] == 0
    assert all(c["frames"] == 9 for c in inter["chunk_log"][:-1])


def test_a_webrtc_server_that_announces_its_fps_on_the_data_channel_runs_at_it(
    tmp_path: Path,
) -> None:
    """A profile's ``[ready] fps`` read over WebRTC as over a WebSocket: the session starts
    at the rate the server says on the key channel (12), not the profile's (16)."""
    from streameval.transports.profiles import load_profile

    base = Path(load_profile("keycode").path).read_text(encoding="utf-8")
    mine = tmp_path / "announcing.toml"
    mine.write_text(
        base.replace('name = "keycode"', 'name = "announcing"')
        + '\n[ready]\nmatch = { type = "ready" }\nfps = "fps"\ntimeout_s = 10\n'
    )
    episode = attach_style(
        "keycode", ("W",), 3.0, profile=str(mine), config=MEMORY_OFF, announce_fps=12.0
    )
    outcome = asyncio.run(episode)
    assert outcome.complete, outcome.errors
    inter = outcome.interactivity
    assert (inter["fps_source"], inter["fps_announced"]) == ("server", 12.0)
    assert outcome.info.fps == 12.0


def test_bursts_mark_chunks_when_the_server_says_nothing() -> None:
    outcome = asyncio.run(attach_style("gamecraft", ("W",), 3.0, config=MEMORY_OFF))
    inter = outcome.interactivity
    assert inter["chunk_origin"] == "bursts" and inter["chunks"] >= 3
    assert inter["chunk_frames_median"] == 9
    assert "server_generation_ms" not in inter


def test_a_websocket_recording_replays_bit_identically(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    live = asyncio.run(
        attach_style("worldfoundry", ("A", "D"), 2.5, observers=[RecordingObserver(rec)])
    )
    assert live.complete, live.errors
    lines = (rec / "chunks.jsonl").read_text().splitlines()
    assert len(lines) == live.interactivity["chunks"] >= 3
    replayed = asyncio.run(run_episode(ReplaySource(read_rollout_dir(rec)), config=CONFIG))
    assert {k: m.normalized for k, m in replayed.scores.metrics.items()} == {
        k: m.normalized for k, m in live.scores.metrics.items()
    }
    for field in ("chunks", "chunk_origin", "chunk_starts", "chunk_log", "server_generation_ms",
                  "server_queue_depth", "server_dropped_frames"):  # fmt: skip
        assert replayed.interactivity[field] == live.interactivity[field], field


COMMAND_PROFILE = """
# a server none of the built-ins covers: keys as {"cmd": "move", "dir": ..., "on": ...},
# frames as base64 JPEG in a JSON field, chunks announced as {"event": "chunk", "n": 8}
name = "command"
transport = "ws"
fps = 16
[frames]
encoding = "base64"
field = "data"
[keys]
semantics = "hold"
names = { W = "forward", S = "back", A = "left", D = "right", L = "turn_left", R = "turn_right" }
[stats]
match = { event = "chunk" }
frames = "n"
fields = { generation_ms = "gen_ms" }
[templates.keydown]
cmd = "move"
dir = "{key}"
on = true
[templates.keyup]
cmd = "move"
dir = "{key}"
on = false
"""


def test_a_declarative_profile_drives_a_new_style_with_no_code(tmp_path: Path) -> None:
    profile = tmp_path / "command.toml"
    profile.write_text(COMMAND_PROFILE)

    async def run(keys: tuple[str, ...], **kw: object) -> object:
        runner, port = await start(command_app(world(), **kw))  # type: ignore[arg-type]
        try:
            source = open_network_source(
                f"ws://127.0.0.1:{port}/play", keys, episode="cmd", suite="test",
                options=AttachOptions(clock=None, seconds_per_key=2.5, profile=str(profile)),
            )  # fmt: skip
            await source.connect()
            return await run_episode(source, config=MEMORY_OFF)
        finally:
            await runner.cleanup()

    clean = asyncio.run(run(("W", "S")))
    reversed_ = asyncio.run(run(("W", "S"), reverse=True))
    assert clean.complete, clean.errors  # type: ignore[attr-defined]
    assert _accuracy(clean, "direction_accuracy_trans") >= 80
    assert _accuracy(reversed_, "direction_accuracy_trans") <= 20
    inter = clean.interactivity  # type: ignore[attr-defined]
    assert inter["chunk_origin"] == "server" and inter["chunk_frames_median"] == 8
    assert inter["server_generation_ms"] > 0
    json.dumps(inter)  # the block is plain JSON


def test_a_server_delivering_far_below_the_session_fps_is_one_warning() -> None:
    # world-arcade's own code (tools/field/) announces no fps and delivered 4–7 fps against
    # the keycode profile's 16: the session's seconds were wrong and nothing said so
    from streameval.core.observers import EpisodeObserver

    class Warnings(EpisodeObserver):
        def __init__(self) -> None:
            self.lines: list[str] = []

        def on_warning(self, message: str) -> None:
            self.lines.append(message)

    seen = Warnings()
    outcome = asyncio.run(attach_style("keycode", ("A", "D"), 2.0, observers=[seen], fps=6.0))
    assert outcome.interactivity["fps_announced"] is None
    (line,) = [w for w in seen.lines if "delivered" in w]
    assert "announces no fps: the session ran at 16 fps" in line, line
    delivered = float(line.split("delivered ")[1].split(" fps")[0])
    assert delivered < 16 * 0.6
