"""``streameval attach URL --profile worldfoundry --image PATH``: one start for every episode of
a plain attach, sent exactly as a case's start (uploaded, then named in ``configure``), against
the WorldFoundry-style server of the tests (``case_servers``, written from the Studio's public
code), which refuses a session without an image. Without ``--image`` or ``--cases`` the attach
is refused in one line before anything connects."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from streameval.cases import HONOURED_SIMILARITY
from streameval.cli.main import main
from tests.cases.arena_synth import scene, write_image
from tests.transports.test_case_cli import Servers

pytestmark = pytest.mark.xdist_group("case-servers")

PROMPT = "A quiet square at noon."


def _attach(url: str, out: Path, *more: str) -> int:
    return main([
        "attach", url, "--profile", "worldfoundry", "--actions", "6", "--seconds-per-key", "1",
        "--model-name", "wf", "--out", str(out), "--no-tui", "--no-report", "--record", "off",
        "--no-frame-timeout", "8", *more,
    ])  # fmt: skip


@pytest.mark.timeout(120)
def test_attach_image_is_every_episodes_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image = write_image(tmp_path / "start.jpg", scene(5, 160, 120))
    servers = Servers(tmp_path / "uploads")
    try:
        url = f"ws://127.0.0.1:{servers.ports[0]}/api/realtime/ws"
        code = _attach(url, tmp_path / "out", "--image", str(image), "--prompt", PROMPT,
                       "--intrinsics", "128,128,79.5,59.5")  # fmt: skip
        refused = _attach(url, tmp_path / "none")
    finally:
        servers.close()
    err = capsys.readouterr().err
    assert code == 0, err
    (received,) = servers.received[0]  # the refused attach sent nothing
    assert received.prompt == PROMPT
    assert received.image_sha256 == hashlib.sha256(image.read_bytes()).hexdigest()
    doc = json.loads((tmp_path / "out" / "wf" / "006_WS" / "scores.json").read_text())
    assert doc["complete"], doc["errors"]
    assert doc["case"]["set"] == "attach" and doc["case"]["name"] == "006_WS"
    assert doc["case"]["image_sha256"] == received.image_sha256
    assert doc["conditioning"]["sent"] is True and doc["conditioning"]["honoured"] is True
    assert doc["conditioning"]["first_frame_similarity"] >= HONOURED_SIMILARITY
    assert refused == 2
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert lines == [
        "error: --profile worldfoundry: the server generates nothing without a start image: "
        "give --image PATH (one start for every episode) or --cases PATH (a benchmark's cases)"
    ]
    assert not (tmp_path / "none").exists()


def test_image_options_are_checked_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "ws://127.0.0.1:9/api/realtime/ws"  # nothing listens: a check that connected would fail
    image = write_image(tmp_path / "start.png", scene(6, 64, 48))
    cases = [
        (["--image", str(tmp_path / "missing.jpg")], "missing.jpg: missing image"),
        (["--image", str(image), "--intrinsics", "1,2,3"], "--intrinsics: intrinsics of shape"),
        (["--intrinsics", "1,1,1,1"], "--intrinsics: needs --image"),
        (["--prompt", "only words"], "--profile worldfoundry: the server generates nothing"),
    ]
    for extra, want in cases:
        assert _attach(url, tmp_path / "out", *extra) == 2, extra
        (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
        assert want in line, (extra, line)
