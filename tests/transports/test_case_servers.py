"""Benchmark cases sent to servers the way their profile says (docs/serve-formats.md
#conditioning-a-case), against servers written in the tests from public descriptions
(``case_servers``): each starts from the image it is given and moves over it with the keys.

Over an ``arena_inputs`` folder made here (``tests/cases/arena_synth.py``, 2 sets × 3 images,
13 cases): every case's image and caption reach the server (it records what it read: the
image's sha256, the caption, the intrinsics), the first frame is the case image for a server
that honours it and not for one that ignores it, and a case the server refuses ends that
episode incomplete with the server's own words while the other cases are scored.

Real-time sessions, short (0.5 s keys) and one after the other (one xdist group).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.cases import HONOURED_SIMILARITY, first_frame_similarity, load_cases
from streameval.cases.conditioning import Conditioning, parse_server_paths
from streameval.cases.model import Case
from streameval.core.events import FrameEvent
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.pipeline import run_episode
from streameval.transports.urls import AttachOptions, network_case_opener, open_network_source
from tests.cases.arena_synth import write_arena
from tests.transports.case_servers import (
    INLINE_PROFILE,
    PATH_PROFILE,
    RESET_PROFILE,
    Received,
    inline_case_app,
    start_app,
    worldfoundry_case_app,
)
from tests.transports.watchdog import watchdog
from tests.transports.worlds import MEMORY_OFF

pytestmark = pytest.mark.xdist_group("case-servers")

SECONDS_PER_KEY = 0.5
REFUSED_CAPTION = "Scene 1 of third_view/style"


@dataclass(frozen=True)
class Drive:
    keys: tuple[str, ...]
    seconds_per_key: float
    suite: str


class FirstFrame(EpisodeObserver):
    def __init__(self) -> None:
        self.image: np.ndarray | None = None

    def on_frame(self, event: FrameEvent) -> None:
        if self.image is None:
            self.image = np.asarray(event.image)


@dataclass
class Ran:
    case: Case
    outcome: EpisodeOutcome
    first: np.ndarray | None

    @property
    def reason(self) -> str:
        return " | ".join(e.message for e in self.outcome.errors)

    def similarity(self) -> float:
        assert self.first is not None, self.case.key
        return first_frame_similarity(Conditioning(self.case).image(), self.first)


async def run_cases(
    url: str,
    options: AttachOptions,
    cases: Sequence[Case],
    server_paths: tuple[tuple[str, str], ...] = (),
) -> list[Ran]:
    """Each case one episode on ``url``, one after the other, as the case runner opens them
    (``network_case_opener``)."""
    open_for_case = network_case_opener(url, options)
    out = []
    for case in cases:
        drive = Drive(tuple(case.keys or "W"), SECONDS_PER_KEY, case.suite)
        source = open_for_case(case, drive, Conditioning(case, 7, server_paths))
        await source.connect()
        first = FirstFrame()
        outcome = await run_episode(source, config=MEMORY_OFF, observers=[first])
        out.append(Ran(case, outcome, first.image))
    return out


def _serve(make: Callable[[], Any], body: Callable[[int], Any]) -> Any:
    async def main() -> Any:
        runner, port = await start_app(make())
        dog = asyncio.create_task(watchdog(asyncio.current_task(), 240.0))
        try:
            return await body(port)
        finally:
            dog.cancel()
            await runner.cleanup()

    return asyncio.run(main())


def _options(profile: str) -> AttachOptions:
    return AttachOptions(clock=None, seconds_per_key=SECONDS_PER_KEY, profile=profile,
                         no_frame_timeout_s=8.0)  # fmt: skip


def _sha(case: Case) -> str:
    assert case.image_path is not None
    return hashlib.sha256(case.image_path.read_bytes()).hexdigest()


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    return write_arena(tmp_path / "arena_inputs")


def test_worldfoundry_style_every_case_starts_from_its_image_one_refused(
    arena: Path, tmp_path: Path
) -> None:
    """The built-in ``worldfoundry`` profile: the image uploaded, then named in configure."""
    cases = load_cases(arena).cases
    received: list[Received] = []
    ran: list[Ran] = _serve(
        lambda: worldfoundry_case_app(tmp_path / "uploads", received, refuse=REFUSED_CAPTION),
        lambda port: run_cases(
            f"ws://127.0.0.1:{port}/api/realtime/ws", _options("worldfoundry"), cases
        ),
    )
    assert len(ran) == len(received) == 13
    for r, got in zip(ran, received, strict=True):
        assert got.prompt == r.case.prompt  # every case's caption …
        assert got.image_path is not None and Path(got.image_path).parent == tmp_path / "uploads"
        if REFUSED_CAPTION in str(r.case.prompt):
            assert not r.outcome.complete
            assert "the server refused the session: ValueError: prompt refused by the " in r.reason
            assert got.image_sha256 is None
            continue
        assert got.image_sha256 == _sha(r.case) == r.case.image_sha256  # … and its image
        assert r.outcome.complete, (r.case.key, r.reason)
        assert r.outcome.frames >= len(r.case.keys or "") * SECONDS_PER_KEY * 16 * 0.6
        assert r.outcome.info.episode == r.case.name
        assert r.outcome.info.extra["case"] == r.case.record()
        assert r.outcome.scores.metrics, r.case.key
        similarity = r.similarity()
        print(f"{r.case.key}: first-frame similarity {similarity:.3f}")
        assert similarity >= HONOURED_SIMILARITY
    refused = [r for r in ran if not r.outcome.complete]
    assert [r.case.key for r in refused] == [
        c.key for c in cases if REFUSED_CAPTION in str(c.prompt)
    ]
    assert len(refused) == 1  # image 1 of third_view/style has one action


def test_a_configure_without_an_image_is_refused_in_the_servers_words(tmp_path: Path) -> None:
    """No case: configure leaves the fields out, and the Studio refuses such a session."""

    async def body(port: int) -> EpisodeOutcome:
        source = open_network_source(
            f"ws://127.0.0.1:{port}/api/realtime/ws",
            ("W",),
            episode="no-case",
            suite="test",
            options=_options("worldfoundry"),
        )
        await source.connect()
        return await run_episode(source, config=MEMORY_OFF)

    received: list[Received] = []
    outcome = _serve(lambda: worldfoundry_case_app(tmp_path / "up", received), body)
    assert not outcome.complete and outcome.frames == 0
    reason = " | ".join(e.message for e in outcome.errors)
    assert (
        "the server refused the session: ValueError: Queued segment setup is missing: "
        "prompt, initial image." in reason
    ), reason
    assert received[0].prompt is None and received[0].image_path is None


def test_inline_base64_style_through_a_profile_written_here(arena: Path, tmp_path: Path) -> None:
    profile = tmp_path / "inline.toml"
    profile.write_text(INLINE_PROFILE)
    cases = load_cases(arena, sets="third_view/style", images="0,2").cases[:3]
    received: list[Received] = []
    ran = _serve(
        lambda: inline_case_app(received),
        lambda port: run_cases(f"ws://127.0.0.1:{port}/play", _options(str(profile)), cases),
    )
    for r, got in zip(ran, received, strict=True):
        assert r.outcome.complete, r.reason
        assert got.image_sha256 == _sha(r.case) and got.prompt == r.case.prompt
        assert got.extra["mime"] == "image/png"
        assert got.extra["size"] == list(r.case.image_size or ())
        assert got.extra["intrinsics"] == pytest.approx(list(r.case.intrinsics or ()))
        assert got.extra["case"] == r.case.key and got.extra["seed"] == 7
        assert got.keys[0] == (r.case.keys or "")[0]
        assert r.similarity() >= HONOURED_SIMILARITY


def test_a_server_that_ignores_the_image_does_not_start_from_it(
    arena: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "inline.toml"
    profile.write_text(INLINE_PROFILE)
    cases = load_cases(arena, sets="first_view/real", images="0", actions="1,6").cases
    received: list[Received] = []
    ran = _serve(
        lambda: inline_case_app(received, ignore_image=True),
        lambda port: run_cases(f"ws://127.0.0.1:{port}/play", _options(str(profile)), cases),
    )
    assert len(ran) == 2
    for r, got in zip(ran, received, strict=True):
        assert r.outcome.complete and got.image_sha256 == _sha(r.case)  # sent, not honoured
        similarity = r.similarity()
        print(f"{r.case.key}: ignored image, first-frame similarity {similarity:.3f}")
        assert similarity < HONOURED_SIMILARITY


def test_a_path_the_server_reads_on_another_machine(arena: Path, tmp_path: Path) -> None:
    """``image = "path"`` with ``--server-path LOCAL=REMOTE``: the server reads /bench/…"""
    profile = tmp_path / "path.toml"
    profile.write_text(PATH_PROFILE)
    cases = load_cases(arena, sets="first_view/real", images="1", actions="5").cases
    received: list[Received] = []
    ran = _serve(
        lambda: worldfoundry_case_app(tmp_path / "up", received, mount=("/bench/in", arena)),
        lambda port: run_cases(
            f"ws://127.0.0.1:{port}/api/realtime/ws",
            _options(str(profile)),
            cases,
            parse_server_paths([f"{arena}=/bench/in"]),
        ),
    )
    (r,), (got,) = ran, received
    assert r.outcome.complete, r.reason
    assert got.image_path == "/bench/in/first_view/real/001.jpg"
    assert got.image_sha256 == _sha(r.case) and got.extra == {"case": r.case.key}
    assert r.similarity() >= HONOURED_SIMILARITY


def test_an_upload_the_server_refuses_ends_that_case_with_its_words(
    arena: Path, tmp_path: Path
) -> None:
    cases = load_cases(arena, sets="first_view/real", images="0", actions="1").cases
    received: list[Received] = []
    ran = _serve(
        lambda: worldfoundry_case_app(tmp_path / "up", received, upload_limit=1000),
        lambda port: run_cases(
            f"ws://127.0.0.1:{port}/api/realtime/ws", _options("worldfoundry"), cases
        ),
    )
    (r,) = ran
    assert not r.outcome.complete and r.outcome.frames == 0 and not received
    assert "image upload to http://127.0.0.1:" in r.reason
    assert "/api/session/input refused: HTTP 413 " in r.reason
    assert "Maximum request body size 1000 exceeded" in r.reason


def test_the_inline_profile_sends_the_file_bytes_as_base64(arena: Path) -> None:
    case = load_cases(arena).cases[0]
    values = Conditioning(case).values()
    assert base64.b64decode(values["image_base64"]) == Path(str(case.image_path)).read_bytes()


def test_reset_on_the_same_connection_starts_each_case_after_the_first(
    arena: Path, tmp_path: Path
) -> None:
    """``start = "reset"``: one connection; the first case configures it, each next case
    sends the profile's ``reset`` with its own image, and starts from it."""
    profile = tmp_path / "reset.toml"
    profile.write_text(RESET_PROFILE)
    cases = load_cases(arena, sets="third_view/style").cases[:3]
    received: list[Received] = []
    connections: list[int] = []

    async def body(port: int) -> list[Ran]:
        opener = network_case_opener(f"ws://127.0.0.1:{port}/play", _options(str(profile)))
        out = []
        try:
            for case in cases:
                drive = Drive(tuple(case.keys or ""), SECONDS_PER_KEY, case.suite)
                source = opener(case, drive, Conditioning(case))
                await source.connect()
                first = FirstFrame()
                outcome = await run_episode(source, config=MEMORY_OFF, observers=[first])
                out.append(Ran(case, outcome, first.image))
        finally:
            await opener.aclose()
        return out

    ran = _serve(lambda: inline_case_app(received, connections=connections), body)
    assert connections == [0]  # one connection for the three cases
    assert [("again" in got.extra) for got in received] == [False, True, True]
    for r, got in zip(ran, received, strict=True):
        assert r.outcome.complete, r.reason
        assert got.image_sha256 == _sha(r.case) and got.prompt == r.case.prompt
        assert got.extra["case"] == r.case.key
        assert r.similarity() >= HONOURED_SIMILARITY, r.case.key
