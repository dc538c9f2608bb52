"""``streameval probe`` through the doors beyond a plain server: a ``python:`` adapter (its
W S A D L R checked, not mapped), a server that turns only by the mouse (Overworld's engine,
its mouse inverted: the probe finds which sign turns which way and writes ``[keys.mouse]``),
and a world that only exists as a web page (``browser+``, headless Chromium). The bridge's
own probe test (a second environment) is in ``tests/transports/bridge``.

Measured (2-core machine): an adapter probe 3 s; the Overworld engine 16 s (six names);
the page turned by the mouse ~25 s (eight names, Chromium's start included)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from streameval.transports.profiles import load_profile
from tests.transports.browser.test_browser import Site
from tests.transports.overworld_server import Overworld
from tests.transports.test_overworld import PASSPHRASE, Served
from tests.transports.worlds import world

ADAPTERS = Path(__file__).resolve().parents[1] / "transports" / "bridge" / "adapter_world.py"
QUICK = ("--seconds", "1.5", "--rest", "1")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _probe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["probe", *args, "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out) if captured.out.strip() else {}
    return code, doc, captured.err


def test_an_adapter_is_probed_key_by_key_and_crossed_keys_are_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = _probe(capsys, f"python:{ADAPTERS}:ground_world", *QUICK)
    assert code == 0, err
    assert doc["mapping"] == {k: k for k in "WSADLR"} and doc["profile"] is None
    assert doc["adapter"] == "ground-world, in process"
    does = {k["name"]: k["motion"] for k in doc["keys"]}
    assert does == {"W": "forward", "S": "back", "A": "strafe left", "D": "strafe right",
                    "L": "yaw left", "R": "yaw right"}  # fmt: skip
    turn = next(k for k in doc["keys"] if k["name"] == "L")
    assert turn["speed"] == pytest.approx(24.0, abs=1.5)  # 1.5° a frame at 16 fps
    assert doc["server"]["fps_announced"] == 16 and doc["server"]["fps_measured"] > 16

    # an adapter whose L and R are wired the wrong way round: named, exit 1
    code, doc, err = _probe(capsys, f"python:{ADAPTERS}:crossed_world", *QUICK)
    assert code == 1 and doc["mapping"] is None
    # the adapter's own print (it loads "weights") went to stderr, not into the JSON
    assert "loading weights: 100%" in err
    lines = [line for line in err.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 2
    assert "L (yaw left): the adapter's 'L' does yaw right, its 'R' does yaw left" in lines[0]
    assert "no profile written" not in err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((f"python:{ADAPTERS}:ground_world", "--write-profile", "x.toml"),
         "--write-profile x.toml: a python: adapter takes W S A D L R itself"),
        ((f"python:{ADAPTERS}:ground_world", "--profile", "web-wasd"),
         "--profile web-wasd: a python: adapter takes W S A D L R itself"),
        (("ws://127.0.0.1:9/ws", "--profile", "public", "--page", "world"),
         "--page world: only for a browser+http://HOST:PORT URL"),
        (("ws://127.0.0.1:9/ws", "--profile", "public", "--python", "/usr/bin/python3"),
         "--python /usr/bin/python3: only for a python:MODULE:FACTORY URL"),
        (("ws://127.0.0.1:9/ws", "--profile", "overworld", "--try", "mouse:0,0"),
         "--try mouse:0,0: a mouse motion is mouse:DX,DY"),
        (("ws://127.0.0.1:9/ws",), "ws://127.0.0.1:9/ws: give --profile"),
        (("python:nosuchmodule_xyz:make",), "cannot import 'nosuchmodule_xyz'"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit_the_door_are_one_line(
    args: tuple[str, ...], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


@pytest.fixture
def inverted() -> Iterator[Served]:
    s = Served(Overworld(model=world, invert_mouse=True))
    try:
        yield s
    finally:
        s.close()


@pytest.mark.xdist_group("case-servers")
@pytest.mark.timeout(180)
def test_a_mouse_turned_server_gets_its_mouse_signs_found_and_written(
    inverted: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Overworld engine turns only by the mouse, here with the mouse inverted: the
    built-in profile's L (8 counts left a frame) turns right. The probe presses the profile's
    own motions, finds the other sign turns left, and writes it."""
    written = tmp_path / "ow.toml"
    code, doc, err = _probe(capsys, inverted.claim_url, "--profile", "overworld", *QUICK,
                            "--write-profile", str(written))  # fmt: skip
    assert code == 0, err
    assert doc["mapping"] == {"W": "W", "S": "S", "A": "A", "D": "D",
                              "L": "mouse:8,0", "R": "mouse:-8,0"}  # fmt: skip
    assert [k["name"] for k in doc["keys"]] == ["W", "S", "A", "D", "mouse:-8,0", "mouse:8,0"]
    profile = load_profile(str(written))
    assert profile.keys.mouse == {"L": (8.0, 0.0), "R": (-8.0, 0.0)}
    assert not profile.keys.is_button("L") and profile.lease is not None
    # the passphrase is nowhere: not the JSON, not the file, not the console
    assert PASSPHRASE not in json.dumps(doc) + written.read_text() + err
    # every control of the probe: buttons W A S D or a mouse motion, never an L/R button
    assert all(set(c["buttons"]) <= {"W", "A", "S", "D"} for c in inverted.server.controls)
    (granted,) = [c for c in inverted.server.claims if c["success"]]
    assert inverted.server.releases == [granted["session_id"]]


# `make test-long`: `make test` probes the mouse-turned engine above; here its written profile
# attached, scoring the turns the probe found
@pytest.mark.long
@pytest.mark.xdist_group("case-servers")
@pytest.mark.timeout(240)
def test_the_written_mouse_profile_scores_the_inverted_server(
    inverted: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = tmp_path / "ow.toml"
    code, _, err = _probe(capsys, inverted.claim_url, "--profile", "overworld", *QUICK,
                          "--write-profile", str(written))  # fmt: skip
    assert code == 0, err
    for profile, good in ((str(written), True), ("overworld", False)):
        out = tmp_path / ("probed" if good else "builtin")
        code = main(["attach", inverted.claim_url, "--profile", profile, "--out", str(out),
                     "--no-tui", "--no-report", "--actions", "7", "--seconds-per-key", "4.5",
                     "--no-frame-timeout", "8"])  # fmt: skip
        assert code == 0
        (path,) = out.rglob("scores.json")
        rot = json.loads(path.read_text())["metrics"]["direction_accuracy_rot"]["normalized"]
        assert (rot >= 90) if good else (rot <= 10), (profile, rot)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.close()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (.ci/run installs it)")
@pytest.mark.timeout(240)
def test_a_page_turned_by_the_mouse_is_probed_and_its_profile_written(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``world.html?turn=mouse``: the arrows turn nothing, the pointer's motion does. No
    ``--profile``: the page is probed with ``web-wasd``; the mouse motions are tried (here
    first, by ``--try``) and written as ``[keys.mouse]``."""
    url = f"browser+{site.base}/world.html?variant=clean&turn=mouse"
    written = tmp_path / "web.toml"
    code, doc, err = _probe(capsys, url, *QUICK, "--try", "mouse:-8,0", "--try", "mouse:8,0",
                            "--write-profile", str(written))  # fmt: skip
    assert code == 0, err
    assert doc["profile"] == "web-wasd"
    assert doc["mapping"] == {"W": "w", "S": "s", "A": "a", "D": "d",
                              "L": "mouse:-8,0", "R": "mouse:8,0"}  # fmt: skip
    does = {k["name"]: k["motion"] for k in doc["keys"]}
    assert does["ArrowLeft"] == does["ArrowRight"] == "nothing"
    assert "j" not in does  # the mapping was complete: the alternatives were not pressed
    profile = load_profile(str(written))
    assert profile.keys.mouse == {"L": (-8.0, 0.0), "R": (8.0, 0.0)}
    assert profile.transport == ("browser",) and profile.browser is not None


# `make test-long`: `make test` probes a page above; here a page whose turn keys are its own
# (j/l: every alternative pressed until they are found), and its written profile attached
@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (.ci/run installs it)")
@pytest.mark.timeout(300)
def test_a_page_with_its_own_turn_keys_is_probed_and_attached(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"browser+{site.base}/world.html?variant=clean&turnkeys=j,l"
    written = tmp_path / "web.toml"
    code, doc, err = _probe(capsys, url, *QUICK, "--write-profile", str(written))
    assert code == 0, err
    assert doc["mapping"] == {"W": "w", "S": "s", "A": "a", "D": "d", "L": "j", "R": "l"}
    out = tmp_path / "out"
    code = main(["attach", url, "--profile", str(written), "--out", str(out), "--no-tui",
                 "--no-report", "--actions", "7", "--seconds-per-key", "4"])  # fmt: skip
    assert code == 0
    (path,) = out.rglob("scores.json")
    rot = json.loads(path.read_text())["metrics"]["direction_accuracy_rot"]["normalized"]
    assert rot >= 90
