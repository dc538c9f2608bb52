"""Request-response servers (``http://`` with a profile; docs/serve-formats.md#request-response):
a Yume-style web app and a plain per-segment server written in the tests (``servers.py``,
no streameval code, the procedural world as the model), attached with the built-in
``yume-webapp`` profile or a profile of the test's own.

Measured (2-core machine): Yume style clean 100 / reversed 0 direction accuracy with 2 s keys
(29 new frames per request, 3 requests, ~8 s an episode)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from streameval.replay import ReplaySource
from streameval.replay.rollout import read_rollout_dir

from streameval.cli.main import main
from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.engine.recording import RecordingObserver
from streameval.transports.profiles import PROFILES
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.segments.servers import segment_app
from tests.transports.worlds import CONFIG, MEMORY_OFF, world
from tests.transports.ws_servers import start

YUME = "/api/generate_long"


def _profile(tmp_path: Path, *edits: tuple[str, str], base: str = "yume-webapp") -> str:
    """A built-in profile with text replacements, as a file of the test's own."""
    text = Path(PROFILES.get(base)).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "edited.toml"
    path.write_text(text)
    return str(path)


async def _attach(
    tmp_path: Path,
    keys: tuple[str, ...] = ("W", "S"),
    spk: float = 2.0,
    *,
    profile: str = "yume-webapp",
    path: str = YUME,
    observers: list[Any] | None = None,
    config: PipelineConfig = MEMORY_OFF,
    **server: Any,
) -> EpisodeOutcome:
    runner, port = await start(segment_app(world(), tmp_path / "outputs", **server))
    try:
        source = open_network_source(
            f"http://127.0.0.1:{port}{path}", keys, episode="seg", suite="test",
            options=AttachOptions(clock=None, seconds_per_key=spk, profile=profile),
        )  # fmt: skip
        await source.connect()
        async with asyncio.timeout(120):
            return await run_episode(source, config=config, observers=observers)
    finally:
        await runner.cleanup()


def _accuracy(outcome: EpisodeOutcome) -> float:
    value = outcome.scores.metrics["direction_accuracy_trans"].normalized
    assert value is not None
    return float(value)


def _errors(outcome: EpisodeOutcome) -> str:
    return " | ".join(str(e) for e in outcome.errors)


@pytest.mark.timeout(180)
def test_yume_style_clean_high_reversed_low_and_the_recording_replays_bit_identically(
    tmp_path: Path,
) -> None:
    rec = tmp_path / "rec"
    # the full config for the episode replayed: every column must come back bit-identical
    clean = asyncio.run(_attach(tmp_path, observers=[RecordingObserver(rec)], config=CONFIG))
    reversed_ = asyncio.run(_attach(tmp_path / "r", reverse=True))
    for outcome in (clean, reversed_):
        assert outcome.complete, outcome.errors
        inter = outcome.interactivity
        assert (inter["transport"], inter["clock"], inter["alignment"]) == (
            "http", "video", "reported",
        )  # fmt: skip
    assert _accuracy(clean) >= 80 and _accuracy(reversed_) <= 20
    inter = clean.interactivity
    # keep_last = 29: the context frames each continued answer repeats are not new frames
    assert inter["chunk_origin"] == "server" and inter["chunk_frames_median"] == 29
    assert inter["chunk_starts"] == [0, 29, 58] and clean.frames == 87
    assert inter["server_generation_ms"] > 0
    keys = [json.loads(line)["key"] for line in (rec / "actions.jsonl").read_text().splitlines()]
    assert keys == ["W"] * 58 + ["S"] * 29  # each frame with the key that asked for it
    replayed = asyncio.run(run_episode(ReplaySource(read_rollout_dir(rec)), config=CONFIG))
    assert {k: m.normalized for k, m in replayed.scores.metrics.items()} == {
        k: m.normalized for k, m in clean.scores.metrics.items()
    }
    for field in ("chunks", "chunk_starts", "chunk_log", "server_generation_ms"):
        assert replayed.interactivity[field] == inter[field], field


PER_SEGMENT = """
name = "segment-bytes"
transport = "http"
fps = 16
[keys]
names = { W = "w", S = "s", A = "a", D = "d", L = "left", R = "right" }
[request]
per = "segment"
timeout_s = 60
[request.body]
action = "{key}"
frames = "{frames}"
[answer]
kind = "video"
"""


@pytest.mark.timeout(120)
def test_one_request_per_key_segment_with_the_video_in_the_body(tmp_path: Path) -> None:
    profile = tmp_path / "bytes.toml"
    profile.write_text(PER_SEGMENT)
    outcome = asyncio.run(_attach(tmp_path, spk=1.0, profile=str(profile), path="/generate"))
    assert outcome.complete, outcome.errors
    assert outcome.frames == 32  # the server made each segment exactly {frames} long
    assert outcome.interactivity["chunk_starts"] == [0, 16]


@pytest.mark.timeout(120)
def test_a_server_side_path_is_read_through_the_path_map(tmp_path: Path) -> None:
    mapped = f'path = "video_abs"\npath_map = {{ "/srv/yume/outputs" = "{tmp_path / "outputs"}" }}'
    profile = _profile(tmp_path, ('url = "video_rel"', mapped))
    outcome = asyncio.run(
        _attach(tmp_path, ("W",), 1.0, profile=profile, server_dir="/srv/yume/outputs")
    )
    assert outcome.complete, outcome.errors
    assert outcome.frames == 29


FAULTS = [
    ("not-video", (), "/outputs/1_long.mp4 (20 bytes): not a video (Invalid data found"),
    ("empty", (), "/outputs/1_long.mp4 (5686 bytes): a video with no frames"),
    ("missing", (('url = "video_rel"', 'path = "video_abs"'),), "which does not exist here"),
    ("http-500", (), "chunk 1 (key W): HTTP 500: Internal Server Error"),
    ("error", (), "chunk 1 (key W): server says: RuntimeError: Wan is not loaded"),
    ("not-json", (), "the answer is not JSON (text/html): <!doctype html>"),
    ("never", (("timeout_s = 1800", "timeout_s = 6"),), "chunk 1 (key W): no answer within 6 s"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("fault", "edits", "line"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_ends_the_started_episode_with_its_line(
    tmp_path: Path, fault: str, edits: tuple[tuple[str, str], ...], line: str
) -> None:
    """The first answer is fine, the second is the fault: the episode keeps its 29 frames
    (recorded), ends incomplete, and the reason is one line with no traceback."""
    profile = _profile(tmp_path, *edits) if edits else "yume-webapp"
    rec = tmp_path / "rec"
    outcome = asyncio.run(
        _attach(tmp_path, profile=profile, fault=fault, fault_from=1,
                observers=[RecordingObserver(rec)])
    )  # fmt: skip
    assert not outcome.complete and outcome.frames == 29
    errors = _errors(outcome)
    assert line in errors, errors
    assert "Traceback" not in errors and "\n" not in errors
    assert len((rec / "actions.jsonl").read_text().splitlines()) == 29


@pytest.mark.timeout(60)
def test_the_command_line_names_a_fault_and_an_unreachable_server_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    base = ["--profile", "yume-webapp", "--actions", "1", "--seconds-per-key", "1", "--no-tui"]
    assert main(["attach", "http://127.0.0.1:9/api/generate_long", *base, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9/api/generate_long: server unreachable" in err
    assert "Traceback" not in err

    async def served() -> int:
        runner, port = await start(segment_app(world(), tmp_path / "outputs", fault="http-500"))
        try:
            url = f"http://127.0.0.1:{port}{YUME}"
            args = ["attach", url, *base, "--out", str(out)]
            return await asyncio.to_thread(main, args)
        finally:
            await runner.cleanup()

    assert asyncio.run(served()) == 2
    err = capsys.readouterr().err
    assert "chunk 0 (key" in err and "HTTP 500: Internal Server Error" in err
    assert "Traceback" not in err


def test_bad_profiles_and_options_are_one_line(tmp_path: Path) -> None:
    from streameval.errors import BadInputError

    url = "http://127.0.0.1:9/api/generate_long"

    def problem(profile: str | None, clock: str | None = None) -> str:
        with pytest.raises(BadInputError) as info:
            open_network_source(url, ("W",), episode="e", suite="test",
                                options=AttachOptions(clock=clock, seconds_per_key=1.0,
                                                      profile=profile))  # type: ignore[arg-type]  # fmt: skip
        return str(info.value)

    assert "a request-response server needs --profile" in problem(None)
    assert "profile 'worldfoundry' is for ws:// URLs" in problem("worldfoundry")
    assert "its clock is the video's" in problem("yume-webapp", "wall")
    no_turn = _profile(tmp_path, ('no_turn = "·"\n', ""))
    assert "no value for {turn}" in problem(no_turn)
    both = _profile(tmp_path, ('url = "video_rel"', 'url = "video_rel"\npath = "video_abs"'))
    assert "answer.url: a JSON answer names its video by exactly one of url or path" in problem(
        both
    )


@pytest.mark.timeout(120)
def test_a_chunk_longer_than_a_segment_skips_no_key(tmp_path: Path) -> None:
    """0.5 s keys (8 frames) and 29-frame answers: each key still gets its chunk, in order."""
    rec = tmp_path / "rec"
    outcome = asyncio.run(
        _attach(tmp_path, ("W", "S", "A"), 0.5, observers=[RecordingObserver(rec)])
    )
    assert outcome.complete, outcome.errors
    keys = [json.loads(line)["key"] for line in (rec / "actions.jsonl").read_text().splitlines()]
    assert keys == ["W"] * 29 + ["S"] * 29 + ["A"] * 29
