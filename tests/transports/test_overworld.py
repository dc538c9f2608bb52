"""``attach "http://HOST:PORT/claim?key=…" --profile overworld`` against a server that behaves
as Overworld's world engine does (``overworld_server``, written from its public code): the
session is claimed, played one control message per frame, and released — also when the
episode fails or is interrupted; a busy server or a wrong passphrase is one line; the camera
turns only by the mouse, and the built-in profile's L/R mouse motion scores as a turn."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from streameval.cli.main import main
from tests.cases.arena_synth import scene, write_image
from tests.transports.case_servers import start_app
from tests.transports.overworld_server import Overworld, engine_app, router_app
from tests.transports.worlds import MEMORY_OFF, world

pytestmark = pytest.mark.xdist_group("case-servers")

PASSPHRASE = "open-sesame"
PROFILE = Path(__file__).resolve().parents[2] / "streameval/transports/profiles/overworld.toml"


class Served:
    """The router and one engine, each on its own port, on a loop of their own thread."""

    def __init__(self, server: Overworld) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def up() -> tuple[Any, Any, int]:
            engine, port = await start_app(engine_app(server))
            server.worker_port = port
            router, router_port = await start_app(router_app(server))
            return engine, router, router_port

        self.engine, self.router, port = self.run(up())
        self.base = f"http://127.0.0.1:{port}"
        self.claim_url = f"{self.base}/claim?key={PASSPHRASE}"

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.run(self.router.cleanup())
        self.run(self.engine.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served(Overworld(model=world))
    try:
        yield s
    finally:
        s.close()


def _attach(url: str, out: Path, *args: str) -> int:
    return main(["attach", url, "--profile", "overworld", "--model-name", "ow", "--out",
                 str(out), "--no-tui", "--no-report", "--cuts", "scenedetect-adaptive",
                 "--no-frame-timeout", "8", *args])  # fmt: skip


def _scores(out: Path) -> dict[str, Any]:
    (path,) = out.rglob("scores.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _secret_written(out: Path) -> list[str]:
    return [str(p) for p in out.rglob("*") if p.is_file() and PASSPHRASE.encode() in p.read_bytes()]


@pytest.mark.timeout(180)
def test_a_mouse_turned_world_scores_its_turns_and_the_session_is_released(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image = write_image(tmp_path / "start.jpg", scene(3, 320, 216))
    out = tmp_path / "out"
    code = _attach(served.claim_url, out, "--actions", "7", "--seconds-per-key", "4.5",
                   "--image", str(image), "--prompt", "A street.")  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = _scores(out)
    assert doc["complete"], doc["errors"]
    assert doc["model"] == "ow"  # --model-name names the model, not only its folder
    rot = doc["metrics"]["direction_accuracy_rot"]
    assert rot["status"] == "official" and rot["normalized"] >= 90, rot
    server = served.server
    # claimed once, released once, nothing left claimed; the heartbeat kept the claim
    (granted,) = [c for c in server.claims if c["success"]]
    assert server.releases == [granted["session_id"]] and not server.claimed
    assert server.heartbeats >= 3
    # the start: the prompt, the seed image, a reset to it — then one control per frame
    assert server.seen[:3] == ["prompt", "seed_image", "reset"]
    assert doc["conditioning"]["honoured"] is True
    # on the wire: L and R are mouse motion only (8 counts a frame), never a button
    moving = [c["mouse_dx"] for c in server.controls if c["mouse_dx"] != 0]
    assert all(c["buttons"] == [] and c["mouse_dy"] == 0 for c in server.controls)
    flip = moving.index(8.0)
    assert set(moving[:flip]) == {-8.0} and set(moving[flip:]) == {8.0}
    assert flip >= 10  # a segment's worth of frames turned left, then right
    # one control per frame, at most the profile's fps: as many controls as frames sent
    received = doc["interactivity"]["frames_received"] + doc["interactivity"]["frames_preroll"]
    assert abs(len(server.controls) - received) <= 2
    # the passphrase is nowhere: not in the results, not on the console
    assert _secret_written(out) == []
    assert PASSPHRASE not in captured.out + captured.err


# `make test-long`: a world that ignores keys is `make test`'s keys-ignored tests; here the
# overworld style's buttons in place of mouse turns
@pytest.mark.long
@pytest.mark.timeout(180)
def test_the_same_turns_sent_as_buttons_move_nothing(served: Served, tmp_path: Path) -> None:
    """The control for the test above: this world turns by the mouse only, so a profile that
    sends L/R as buttons (as a key-driven server would want) gets no turn at all."""
    text = (
        PROFILE.read_text()
        .replace("mouse = { L = { dx = -8.0 }, R = { dx = 8.0 } }", "")
        .replace('D = "D" }', 'D = "D", L = "Q", R = "E" }')
    )
    buttons = tmp_path / "buttons.toml"
    buttons.write_text(text)
    out = tmp_path / "out"
    code = main(["attach", served.claim_url, "--profile", str(buttons), "--model-name", "ow",
                 "--out", str(out), "--no-tui", "--no-report", "--cuts", "scenedetect-adaptive",
                 "--actions", "7", "--seconds-per-key", "4.5"])  # fmt: skip
    assert code == 0
    doc = _scores(out)
    rot = doc["metrics"]["direction_accuracy_rot"]
    assert rot["normalized"] is None or rot["normalized"] < 50, rot
    assert {tuple(c["buttons"]) for c in served.server.controls} >= {("Q",), ("E",)}
    assert doc["interactivity"]["keys_ignored"] is True
    assert served.server.releases and not served.server.claimed


def test_a_busy_server_and_a_wrong_passphrase_are_one_line_each(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with urlopen(served.claim_url) as answer:  # someone else holds the only slot
        other = json.loads(answer.read())
    assert other["success"] is True
    assert _attach(served.claim_url, tmp_path / "busy", "--actions", "7",
                   "--seconds-per-key", "1") == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "the server refused the claim: no_gpu_available" in err
    assert "key=***" in err and PASSPHRASE not in err
    wrong = f"{served.base}/claim?key=guess"
    assert _attach(wrong, tmp_path / "wrong", "--actions", "7", "--seconds-per-key", "1") == 2
    assert "the server refused the claim: invalid_key" in capsys.readouterr().err
    assert served.server.releases == []  # nothing of ours was claimed: nothing released


def test_an_episode_longer_than_the_claim_is_refused_and_the_claim_released(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = Served(Overworld(model=world, expires_in=1.5))
    try:
        code = _attach(s.claim_url, tmp_path / "out", "--actions", "7", "--seconds-per-key", "1")
        err = capsys.readouterr().err
        assert code == 2, err
        assert "the server lends a session for 1.5 s, and this episode needs 2 s" in err
        (granted,) = s.server.claims
        assert s.server.releases == [granted["session_id"]]
    finally:
        s.close()


def test_a_session_the_server_expires_ends_the_episode_and_is_released(
    tmp_path: Path,
) -> None:
    """A router that does not say how long it lends (no ``expires_in``) ends the session at
    2 s: ``session_expired`` ends the episode there, incomplete, with what came."""
    server = Overworld(model=world, expires_in=2.0, warn_before_s=1.0)
    s = Served(server)
    profile = tmp_path / "no-expiry.toml"
    profile.write_text(PROFILE.read_text().replace('expires = "expires_in"\n', 'expires = ""\n'))
    try:
        out = tmp_path / "out"
        code = main(["attach", s.claim_url, "--profile", str(profile), "--model-name", "ow",
                     "--out", str(out), "--no-tui", "--no-report", "--record", "off",
                     "--actions", "7", "--seconds-per-key", "3"])  # fmt: skip
        assert code != 0
        doc = _scores(out)
        assert doc["complete"] is False and doc["frames"] > 0
        (error,) = [e for e in doc["errors"] if e["fatal"]]
        # whichever says it first: the socket's session_expired, or the next heartbeat's answer
        assert error["message"].endswith((
            'the server ended the session: {"type": "session_expired"}',
            "the server ended the claim: session_not_found",
        )), error  # fmt: skip
        # the socket's close is the server's only when its session_expired came first; when
        # the heartbeat's session_not_found did, we closed it (and released the claim)
        if error["message"].endswith('session_expired"}'):
            deadline = time.monotonic() + 5.0  # its close is noted on the server's own loop
            while "session expired" not in server.closed and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "session expired" in server.closed
        assert not server.claimed  # freed by the server; our release found nothing to free
    finally:
        s.close()


def test_an_interrupted_episode_releases_its_claim(served: Served) -> None:
    """Ctrl-C (the episode's task cancelled) still gives the GPU back."""
    from streameval.engine.pipeline import run_episode
    from streameval.transports.urls import AttachOptions, open_network_source

    async def scenario() -> Any:
        source = open_network_source(
            served.claim_url, ("L", "R"), episode="e", suite="t",
            options=AttachOptions(clock=None, seconds_per_key=20.0, profile="overworld"),
        )  # fmt: skip
        task = asyncio.create_task(run_episode(source, config=MEMORY_OFF))
        for _ in range(400):
            if len(served.server.controls) >= 10:
                break
            await asyncio.sleep(0.025)
        task.cancel()
        return await asyncio.gather(task, return_exceptions=True)

    (outcome,) = asyncio.run(scenario())
    assert not isinstance(outcome, BaseException) or isinstance(outcome, asyncio.CancelledError)
    (granted,) = [c for c in served.server.claims if c["success"]]
    assert served.server.releases == [granted["session_id"]] and not served.server.claimed


def test_credential_query_fields_are_redacted_wherever_urls_are_named() -> None:
    from streameval.errors import redact_url

    claim = "http://10.0.0.5:8000/claim?key=open-sesame&gpu=1"
    assert redact_url(claim) == "http://10.0.0.5:8000/claim?key=***&gpu=1"
    assert redact_url("wss://h/ws?token=t0k&x=1") == "wss://h/ws?token=***&x=1"
    # an MQTT URL's key= is a client certificate's file, not a secret; its password is
    mqtt = "mqtts://me:pw@broker:8883/s?cafile=ca.pem&key=me.key"
    assert redact_url(mqtt) == "mqtts://me@broker:8883/s?cafile=ca.pem&key=me.key"
    assert redact_url("http://h:1/claim") == "http://h:1/claim"  # untouched, byte for byte
