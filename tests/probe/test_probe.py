"""``streameval probe`` against servers written in the tests (``probe_servers``: chunked, a
first chunk of 12 frames then 8, motion eased in over 0.5 s and out over 1 s): it finds every
name of W S A D L R under both letter conventions, the fps, the chunk lengths and the ease
times; the profile it writes attaches and scores; a key that does nothing, a server that
moves alone, never answers or closes mid-probe is one line and no profile.

One probe per convention (module-scoped), read by several tests. Measured (2-core machine):
both conventions mapped, delivered fps 15.7-15.9, ease-in 0.38 s and ease-out 0.76-0.83 s
(10 %-90 % of 0.5 s and 1 s ramps), ~23 s a probe."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from streameval.core.observers import EpisodeOutcome
from streameval.engine.pipeline import run_episode
from streameval.transports.urls import AttachOptions, open_network_source
from tests.probe.eased_world import EasedWorld
from tests.probe.probe_servers import (
    CHUNK,
    EASE_IN_S,
    EASE_OUT_S,
    FIRST_CHUNK,
    FPS,
    OTHER,
    USUAL,
    Motion,
    probe_app,
    start,
)
from tests.probe.served import served
from tests.transports.worlds import CONFIG

pytestmark = pytest.mark.xdist_group("probe")

PRESS = ["--seconds", "1.2", "--rest", "1.0"]
CHUNK_S = CHUNK / FPS


@dataclass
class Probed:
    code: int
    report: dict[str, Any]
    err: str
    written: Path


def _probe(keymap: dict[str, Motion], out: Path, *extra: str, **app: Any) -> Probed:
    written = out / "probed.toml"
    stdout, stderr = io.StringIO(), io.StringIO()
    with served(probe_app(EasedWorld().render, keymap, **app)) as url:
        args = ["probe", url, "--profile", "worldfoundry", "--json", *PRESS]
        with redirect_stdout(stdout), redirect_stderr(stderr):
            code = main([*args, "--write-profile", str(written), *extra])
    text = stdout.getvalue()
    return Probed(code, json.loads(text) if text.strip() else {}, stderr.getvalue(), written)


@pytest.fixture(scope="module")
def usual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probed]:
    yield _probe(USUAL, tmp_path_factory.mktemp("usual"))


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probed]:
    yield _probe(OTHER, tmp_path_factory.mktemp("other"))


@pytest.mark.timeout(120)
def test_every_name_is_found_under_both_conventions(usual: Probed, other: Probed) -> None:
    assert usual.code == 0, usual.err
    assert usual.report["mapping"] == {"W": "w", "S": "s", "A": "a", "D": "d", "L": "j", "R": "l"}
    assert other.code == 0, other.err
    assert other.report["mapping"] == {"W": "w", "S": "s", "A": "j", "D": "l", "L": "a", "R": "d"}
    does = {k["name"]: k["motion"] for k in other.report["keys"]}
    assert does["a"] == "yaw left" and does["j"] == "strafe left"
    assert other.report["no_key"]["motion"] == "nothing"


@pytest.mark.timeout(120)
def test_the_server_facts_are_measured(usual: Probed, other: Probed) -> None:
    for probed in (usual, other):
        server = probed.report["server"]
        assert abs(server["fps_measured"] - FPS) <= 0.5, server
        assert server["fps_announced"] == FPS
        assert server["chunk_first"] == FIRST_CHUNK and server["chunk_later"] == [CHUNK]
        assert server["resolution"] == [320, 216]
        assert {"type=ready", "type=configuring", "type=chunk_done", "binary frame"} <= set(
            server["messages"]
        )


@pytest.mark.timeout(120)
def test_ease_times_are_within_one_chunk(usual: Probed, other: Probed) -> None:
    for probed in (usual, other):
        for key in probed.report["keys"]:
            assert abs(key["ease_in_s"] - EASE_IN_S) <= CHUNK_S, key
            assert abs(key["ease_out_s"] - EASE_OUT_S) <= CHUNK_S, key
            assert 0 < key["response_s"] < 2.0, key


async def _attach(url: str, profile: str, keys: tuple[str, ...]) -> EpisodeOutcome:
    source = open_network_source(
        url, keys, episode="probed", suite="test",
        options=AttachOptions(clock=None, seconds_per_key=3.0, profile=profile),
    )  # fmt: skip
    await source.connect()
    return await run_episode(source, config=CONFIG)


def _family_episodes(keymap: dict[str, Motion], profile: str) -> list[EpisodeOutcome]:
    async def each() -> list[EpisodeOutcome]:
        out = []
        for keys in (("W", "S"), ("A", "D"), ("L", "R")):
            runner, port = await start(probe_app(EasedWorld().render, keymap))
            try:
                url = f"ws://127.0.0.1:{port}/api/realtime/ws"
                out.append(await _attach(url, profile, keys))
            finally:
                await runner.cleanup()
        return out

    return asyncio.run(each())


@pytest.mark.timeout(180)
@pytest.mark.flaky(reruns=1, only_rerun=["AssertionError"])
@pytest.mark.parametrize("convention", ["usual", "other"])
def test_the_written_profile_attaches_and_scores_every_family(
    convention: str, request: pytest.FixtureRequest
) -> None:
    probed: Probed = request.getfixturevalue(convention)
    keymap = USUAL if convention == "usual" else OTHER
    assert probed.report["written"] == str(probed.written)
    fwd, lat, yaw = _family_episodes(keymap, str(probed.written))
    for outcome, metric in ((fwd, "trans"), (lat, "trans"), (yaw, "rot")):
        assert outcome.complete, outcome.errors
        value = outcome.scores.metrics[f"direction_accuracy_{metric}"].normalized
        assert value is not None and value >= 80, (outcome.info.episode, metric, value)
        assert "keys_contradicted" not in outcome.interactivity


@pytest.mark.timeout(120)
def test_attach_warns_when_a_key_turns_instead_of_strafing() -> None:
    """The other convention attached with the usual letters: A and D turn."""

    async def episode() -> EpisodeOutcome:
        runner, port = await start(probe_app(EasedWorld().render, OTHER))
        try:
            return await _attach(f"ws://127.0.0.1:{port}/api/realtime/ws", "worldfoundry",
                                 ("A", "D"))  # fmt: skip
        finally:
            await runner.cleanup()

    outcome = asyncio.run(episode())
    contradicted = outcome.interactivity.get("keys_contradicted") or []
    assert {c["key"] for c in contradicted} == {"A", "D"}, contradicted
    assert all(c["p_yaw"] >= 0.8 for c in contradicted)
