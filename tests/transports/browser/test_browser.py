"""``attach browser+URL``: a world that only exists as a web page (``world.html``, a canvas
among textured billboards that obeys held keys, nothing of streameval), scored live through
headless Chromium; a Chromium the user started, reached by its debugging port; a page that
never shows its start; no Chromium at all.

Measured (2-core machine under load, 4.5 s keys): clean direction_accuracy_trans 100 on W→S,
direction_accuracy_rot 97.4-98.7 on L→R; reversed 0 / 0; turned by the mouse 98.9."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest
from aiohttp import web

from streameval.cli.main import main
from tests.transports.case_servers import start_app
from tests.transports.conftest import free_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium not installed (.ci/run installs it from Debian)"
    ),
    pytest.mark.xdist_group("browser"),
]
HERE = Path(__file__).resolve().parent
SPK = "4.5"  # the control columns need keys of 4.13 s at least
# Real-time sessions on two shared cores: a score assertion can miss when the machine is
# starved; one rerun of the assertion (as tests/transports/test_styles.py), never of a
# timeout or any other exception.
realtime = pytest.mark.flaky(reruns=1, only_rerun=["AssertionError"])


class Site:
    """``world.html`` served by aiohttp on a loop of its own thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def page(_: web.Request) -> web.FileResponse:
            return web.FileResponse(HERE / "world.html")

        app = web.Application()
        app.router.add_get("/world.html", page)
        future = asyncio.run_coroutine_threadsafe(start_app(app), self.loop)
        self.runner, port = future.result(30)
        self.base = f"http://127.0.0.1:{port}"

    def url(self, variant: str = "clean") -> str:
        return f"browser+{self.base}/world.html?variant={variant}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.close()


def _attach(url: str, out: Path, *args: str) -> int:
    return main(["attach", url, "--model-name", "web", "--out", str(out), "--no-tui",
                 "--no-report", "--cuts", "scenedetect-adaptive", "--seconds-per-key", SPK,
                 *args])  # fmt: skip


def _scores(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.rglob("scores.json")}


def _accuracy(doc: dict[str, Any], name: str) -> float:
    value = doc["metrics"][name]["normalized"]
    assert value is not None, doc["metrics"][name]
    return float(value)


@realtime
@pytest.mark.timeout(300)
def test_a_canvas_world_scores_its_keys_and_a_reversed_one_does_not(
    site: Site, tmp_path: Path
) -> None:
    clean = tmp_path / "clean"
    assert _attach(site.url(), clean, "--actions", "6,7") == 0
    docs = _scores(clean)
    ws, lr = docs["006_WS"], docs["007_LR"]
    assert ws["complete"] and lr["complete"], (ws["errors"], lr["errors"])
    assert _accuracy(ws, "direction_accuracy_trans") >= 90
    assert _accuracy(lr, "direction_accuracy_rot") >= 90
    for doc in (ws, lr):  # the frames came through a browser capture, and it says so
        live = doc["interactivity"]
        assert live["transport"] == "browser" and live["capture"] == "browser-screencast"
        assert live["frames_received"] >= 100  # ~16 fps for 9 s, less what perception drops
        assert live["capture_counts"]["undecodable"] == 0
    # the page's 640x360 canvas, not the small one beside it nor the whole viewport
    meta = json.loads((clean / "web" / "006_WS" / "recording" / "meta.json").read_text())
    assert (meta["width"], meta["height"]) == (640, 360)
    # the report says it above the real-time figures, in words
    assert main(["report", str(clean / "web" / "006_WS")]) == 0
    (page,) = clean.rglob("report.html")
    assert "Frames came through a browser capture (browser-screencast)" in page.read_text()

    reversed_ = tmp_path / "reversed"
    assert _attach(site.url("reversed"), reversed_, "--actions", "6,7") == 0
    docs = _scores(reversed_)
    assert _accuracy(docs["006_WS"], "direction_accuracy_trans") <= 10
    assert _accuracy(docs["007_LR"], "direction_accuracy_rot") <= 10


# `make test-long`: a late server's lower response latency is `make test`'s over WebRTC
# (test_public_peer.py); here the same through a browser capture
@pytest.mark.long
@realtime
@pytest.mark.timeout(300)
def test_a_page_that_answers_late_is_measured_late(site: Site, tmp_path: Path) -> None:
    on_time, late = tmp_path / "on-time", tmp_path / "late"
    assert _attach(site.url(), on_time, "--actions", "6") == 0
    assert _attach(site.url("late"), late, "--actions", "6") == 0
    fast, slow = _scores(on_time)["006_WS"], _scores(late)["006_WS"]
    assert fast["interactivity"]["key_to_response_ms_median"] < 800
    assert slow["interactivity"]["key_to_response_ms_median"] > 1400
    assert _accuracy(slow, "response_latency_trans") < _accuracy(fast, "response_latency_trans")


# `make test-long`: attaching by a debugging port opens the same CDP session `make test`
# drives (test_a_canvas_world_...); here a second Chromium the user started
@pytest.mark.long
@realtime
@pytest.mark.timeout(240)
def test_a_chromium_the_user_started_is_attached_by_its_port_and_left_running(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert CHROMIUM is not None
    port = free_port()
    world = site.url().removeprefix("browser+")
    user = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", f"--user-data-dir={tmp_path / 'profile'}",
         f"--remote-debugging-port={port}", "--window-size=1280,800", world],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        devtools = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        tabs: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not any(
            t["title"] == "canvas world" for t in tabs
        ):  # until the world's tab has loaded (its title)
            try:
                with urlopen(f"{devtools}/json/list") as answer:
                    tabs = [t for t in json.loads(answer.read()) if t["type"] == "page"]
            except OSError:
                pass
            time.sleep(0.2)
        assert tabs, "chromium opened no DevTools port"
        # a second tab, as a user's browser has (headless opens one URL only)
        with urlopen(Request(f"{devtools}/json/new?about:blank", method="PUT")) as answer:
            assert answer.status == 200
        # two tabs and no --page: which one is the world is asked, in one line
        assert _attach(f"browser+{devtools}", tmp_path / "which", "--actions", "7") == 2
        err = capsys.readouterr().err
        assert "tabs match, give --page TEXT" in err and "canvas world" in err
        # --page on a URL that is a page, not a DevTools port: named
        code = _attach(site.url(), tmp_path / "notport", "--page", "world", "--actions", "7")
        assert code == 2
        assert "not its DevTools port" in capsys.readouterr().err

        out = tmp_path / "out"
        assert _attach(f"browser+{devtools}", out, "--page", "canvas world", "--actions", "7") == 0
        doc = _scores(out)["007_LR"]
        assert doc["complete"], doc["errors"]
        assert _accuracy(doc, "direction_accuracy_rot") >= 90
        assert user.poll() is None  # the user's browser is theirs: still running, tab open
        with urlopen(f"{devtools}/json/list") as answer:
            titles = [t["title"] for t in json.loads(answer.read())]
        assert "canvas world" in titles
    finally:
        user.terminate()
        user.wait(10)


def test_a_page_that_never_shows_its_start_is_one_line(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "web.toml"
    profile.write_text(
        (HERE.parents[2] / "streameval/transports/profiles/web_wasd.toml")
        .read_text()
        .replace('capture = "screencast"', 'start_selector = "#play"\nstart_timeout_s = 2')
    )
    code = _attach(site.url(), tmp_path / "out", "--profile", str(profile), "--actions", "7")
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if "never showed its start" in line]
    assert len(lines) == 1, err
    assert "in 2 s: no element matches '#play'" in lines[0]


def test_no_chromium_is_one_line_with_its_fix(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMEVAL_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    assert _attach(site.url(), tmp_path / "out", "--actions", "7") == 2
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "Chromium" in line]
    assert "not found on PATH" in line and "apt-get install chromium" in line
    monkeypatch.setenv("STREAMEVAL_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert _attach(site.url(), tmp_path / "out2", "--actions", "7") == 2
    err = capsys.readouterr().err
    assert "STREAMEVAL_CHROMIUM" in err and "apt-get install chromium" in err


MOUSE_PROFILE = """
name = "web-mouse"
transport = "browser"

[keys]
names = { W = "w", S = "s", A = "a", D = "d" }
mouse = { L = { dx = -8.0 }, R = { dx = 8.0 } }
"""


# `make test-long`: mouse turns are `make test`'s over the overworld style
# (test_overworld.py) and in the profiles' unit tests; here the same through a browser
@pytest.mark.long
@realtime
@pytest.mark.timeout(300)
def test_a_page_turned_by_the_mouse_turns_by_the_profiles_mouse_motion(
    site: Site, tmp_path: Path
) -> None:
    """``[keys.mouse]``: L/R as pointer motion, 8 pixels a frame; the page (``?turn=mouse``)
    turns only by the mouse's ``movementX``. The built-in profile's arrows turn nothing
    there: the control that says the mouse did it."""
    profile = tmp_path / "mouse.toml"
    profile.write_text(MOUSE_PROFILE)
    url = site.url() + "&turn=mouse"
    out = tmp_path / "mouse"
    assert _attach(url, out, "--profile", str(profile), "--actions", "7") == 0
    doc = _scores(out)["007_LR"]
    assert doc["complete"], doc["errors"]
    assert _accuracy(doc, "direction_accuracy_rot") >= 90

    arrows = tmp_path / "arrows"
    assert _attach(url, arrows, "--actions", "7") == 0
    doc = _scores(arrows)["007_LR"]
    rot = doc["metrics"]["direction_accuracy_rot"]["normalized"]
    assert rot is None or rot < 50, rot
    assert doc["interactivity"]["keys_ignored"] is True
