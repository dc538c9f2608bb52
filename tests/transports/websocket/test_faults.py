"""WebSocket faults (docs/serve-formats.md#faults): each keeps the episode and its recording,
marks it incomplete when it cannot go on with the reason in one line, counts what it refused,
and leaves other sessions alone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from streameval.core.observers import EpisodeOutcome
from streameval.engine.pipeline import run_episode
from streameval.engine.recording import RecordingObserver
from streameval.transports.profiles import PROFILES
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.worlds import MEMORY_OFF, world
from tests.transports.ws_servers import start, worldfoundry_app


def _profile(tmp_path: Path, *edits: tuple[str, str]) -> str:
    """The worldfoundry profile with text replacements, as a file of the test's own."""
    text = Path(PROFILES.get("worldfoundry")).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "wf.toml"
    path.write_text(text)
    return str(path)


async def _episode(
    tmp_path: Path, fault: str | None, keys: tuple[str, ...] = ("W", "S"), spk: float = 3.0,
    profile: str = "worldfoundry", timeout_s: float = 10.0, name: str = "rec",
) -> EpisodeOutcome:  # fmt: skip
    runner, port = await start(worldfoundry_app(world(), fault=fault))
    try:
        source = open_network_source(
            f"ws://127.0.0.1:{port}/api/realtime/ws", keys, episode="fault", suite="test",
            options=AttachOptions(clock=None, seconds_per_key=spk, profile=profile,
                                  no_frame_timeout_s=timeout_s),
        )  # fmt: skip
        await source.connect()
        return await run_episode(
            source, config=MEMORY_OFF, observers=[RecordingObserver(tmp_path / name)]
        )
    finally:
        await runner.cleanup()


def _errors(outcome: EpisodeOutcome) -> str:
    return " | ".join(str(e) for e in outcome.errors)


def _recorded(tmp_path: Path, name: str = "rec") -> int:
    return len((tmp_path / name / "actions.jsonl").read_text().splitlines())


def test_closed_mid_episode_names_code_and_reason_and_spares_other_sessions(
    tmp_path: Path,
) -> None:
    async def both() -> list[Any]:
        return await asyncio.gather(
            _episode(tmp_path, "close", spk=4.0, name="a"), _episode(tmp_path, None, name="b")
        )

    broken, clean = asyncio.run(both())
    assert not broken.complete and broken.frames > 0
    assert "code 1011 internal server error, reason 'worker crashed'" in _errors(broken)
    assert _recorded(tmp_path, "a") == broken.frames  # the recording is flushed
    assert clean.complete, clean.errors


def test_no_answer_to_configure_ends_the_episode(tmp_path: Path) -> None:
    profile = _profile(tmp_path, ("timeout_s = 120", "timeout_s = 1"))
    outcome = asyncio.run(_episode(tmp_path, "never-ready", profile=profile, timeout_s=3.0))
    assert not outcome.complete and outcome.frames == 0
    assert "no answer to configure within 1 s" in _errors(outcome)


def test_non_jpeg_and_truncated_frames_are_counted_and_skipped(tmp_path: Path) -> None:
    outcome = asyncio.run(_episode(tmp_path, "garbage"))
    assert outcome.complete, outcome.errors
    assert outcome.interactivity["malformed"] >= 2
    errors = _errors(outcome)
    assert "neither JPEG nor PNG" in errors and "truncated JPEG" in errors
    assert outcome.frames > 30 and _recorded(tmp_path) == outcome.frames  # the rest went on


def test_an_oversized_message_is_named(tmp_path: Path) -> None:
    profile = _profile(tmp_path, ("max_message_bytes = 16777216", "max_message_bytes = 1048576"))
    outcome = asyncio.run(_episode(tmp_path, "oversized", profile=profile))
    assert not outcome.complete and outcome.frames > 0
    assert "message too big" in _errors(outcome) and "1048576-byte limit" in _errors(outcome)
    assert _recorded(tmp_path) == outcome.frames


def test_text_where_binary_frames_were_expected(tmp_path: Path) -> None:
    outcome = asyncio.run(_episode(tmp_path, "text-frames", timeout_s=2.0))
    assert not outcome.complete and outcome.frames == 0
    errors = _errors(outcome)
    assert "where binary frames were expected" in errors
    assert "stalled: no frame for 2 s (last message refused: text message" in errors


def test_a_server_that_drops_silent_clients_is_named(tmp_path: Path) -> None:
    profile = _profile(tmp_path, ("heartbeat_s = 5.0\n", ""), ("[templates.heartbeat]\n", ""),
                       ('type = "heartbeat"\n', ""))  # fmt: skip
    outcome = asyncio.run(_episode(tmp_path, "stale", keys=("W",), spk=6.0, profile=profile))
    assert not outcome.complete and outcome.frames > 0
    errors = _errors(outcome)
    assert "code 1008 policy violation, reason 'stale client'" in errors
    assert "sends no heartbeat: this server may need one" in errors


def test_a_template_that_does_not_render_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = _profile(tmp_path, ('key = "{key}" }\n', 'key = "{keycode}" }\n'))
    url = "ws://127.0.0.1:9/api/realtime/ws"
    args = ["attach", url, "--profile", profile, "--key-map", "W=forward", "--actions", "1"]
    assert main([*args, "--out", str(tmp_path / "out"), "--no-tui"]) == 2
    err = capsys.readouterr().err
    assert "no value for {keycode}" in err and "Traceback" not in err


def test_a_keys_endpoint_that_never_answers_ends_the_episode_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A press-per-chunk server whose POST /control never returns: the episode ends
    incomplete naming the keys URL (the send's own timeout), with the frames that came."""
    import numpy as np
    from aiohttp import web

    from streameval.transports.profiles import keychannel as keychannel
    from tests.transports.chunked_world import jpeg

    monkeypatch.setattr(keychannel, "SEND_TIMEOUT_S", 1.0)
    body = jpeg(np.full((64, 96, 3), 128, np.uint8))

    async def video(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "multipart/x-mixed-replace; boundary=frame"}
        )
        await response.prepare(request)
        try:
            while True:
                part = f"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: {len(body)}"
                await response.write(part.encode() + b"\r\n\r\n" + body + b"\r\n")
                await asyncio.sleep(1 / 16)
        except (ConnectionResetError, asyncio.CancelledError):
            return response

    async def control(request: web.Request) -> web.Response:
        await asyncio.sleep(3600)  # the server took the request and never answers
        return web.json_response({"ok": True})

    async def scenario() -> EpisodeOutcome:
        app = web.Application()
        app.router.add_get("/video/0", video)
        app.router.add_post("/control/0", control)
        runner, port = await start(app)
        try:
            source = open_network_source(
                f"mjpeg+http://127.0.0.1:{port}/video/0",
                ("W", "S"),
                episode="stuck",
                suite="test",
                options=AttachOptions(
                    clock=None,
                    seconds_per_key=3.0,
                    profile="gamecraft",
                    keys_url=f"http://127.0.0.1:{port}/control/0",
                ),
            )
            await source.connect()
            async with asyncio.timeout(30):
                return await run_episode(source, config=MEMORY_OFF)
        finally:
            await runner.cleanup()

    outcome = asyncio.run(scenario())
    assert not outcome.complete
    reasons = " ".join(e.message for e in outcome.errors)
    assert "/control/0: no answer within 1 s" in reasons, reasons
