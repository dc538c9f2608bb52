"""Against a server that behaves as WorldFoundry Studio's realtime socket does (``studio_server``,
written from its public code): silent at rest, ``ready`` with the model's fps, Matrix-Game 3.0's
cadence (57 frames, then 40, at 17 fps), no frame without a start image. The session runs at
the announced fps; announced and delivered fps are both in scores.json, and a mismatch is one
warning line; frames sent before ``ready`` are kept and counted."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from tests.cases.arena_synth import scene, write_image
from tests.transports.case_servers import start_app
from tests.transports.studio_server import Studio, studio_app

pytestmark = pytest.mark.xdist_group("case-servers")


class Served:
    """One studio server on a loop of its own thread (the command line runs its own loop)."""

    def __init__(self, uploads: Path, studio: Studio) -> None:
        self.studio = studio
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        app = studio_app(uploads, studio)
        self.runner, port = asyncio.run_coroutine_threadsafe(start_app(app), self.loop).result(30)
        self.url = f"ws://127.0.0.1:{port}/api/realtime/ws"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def _run(tmp_path: Path, studio: Studio, *args: str) -> tuple[int, dict[str, Any], str]:
    image = write_image(tmp_path / "start.jpg", scene(3, 160, 120))
    served = Served(tmp_path / "uploads", studio)
    out = tmp_path / "out"
    try:
        code = main([
            "attach", served.url, "--profile", "worldfoundry", "--image", str(image),
            "--prompt", "A street.", "--model-name", "wf", "--out", str(out), "--no-tui",
            "--no-report", "--record", "off", "--no-frame-timeout", "8", *args,
        ])  # fmt: skip
    finally:
        served.close()
    (path,) = out.rglob("scores.json")
    return code, json.loads(path.read_text()), path.parent.name


@pytest.mark.timeout(120)
def test_the_session_runs_at_the_fps_the_server_announces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    studio = Studio()  # Matrix-Game 3.0: 17 fps, 57 then 40 frames a chunk
    code, doc, _ = _run(tmp_path, studio, "--actions", "6", "--seconds-per-key", "4.5")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert doc["complete"], doc["errors"]
    assert doc["fps"] == 17.0  # the profile says 16: the server's own rate wins
    block = doc["interactivity"]
    assert (block["fps_source"], block["fps_announced"]) == ("server", 17.0)
    # delivered: measured over the arrivals (this loaded CPU may pace the server late); a
    # warning exactly when it is more than 5 % off
    off = abs(block["delivered_fps"] / 17.0 - 1) > 0.05
    assert captured.out.count("the server announced 17 fps but delivered") == int(off)
    assert block["chunk_origin"] == "server"
    assert [c["frames"] for c in block["chunk_log"][:2]] == [57, 40]
    assert doc["conditioning"]["honoured"] is True
    # silent at rest: every frame the server sent came while a key was held
    (session,) = studio.sessions
    assert block["frames_received"] + block["frames_preroll"] <= session["frames"]


@pytest.mark.timeout(120)
def test_a_mismatch_beyond_5_percent_is_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    studio = Studio(fps=17.0, first_chunk=9, chunk=9, pace_fps=13.0)
    code, doc, _ = _run(tmp_path, studio, "--actions", "6", "--seconds-per-key", "1.5")
    out = capsys.readouterr().out
    assert code == 0 and doc["fps"] == 17.0
    lines = [line for line in out.splitlines() if "the server announced" in line]
    assert len(lines) == 1, out
    delivered = float(lines[0].split("delivered ")[1].split(" fps")[0])
    assert "announced 17 fps" in lines[0] and delivered < 17 * 0.95  # paced at 13 (or later)


@pytest.mark.timeout(120)
def test_frames_sent_before_ready_are_kept_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    studio = Studio(fps=16.0, first_chunk=9, chunk=9, before_ready=12)
    code, doc, _ = _run(tmp_path, studio, "--actions", "6", "--seconds-per-key", "1.5")
    assert code == 0, capsys.readouterr().err
    block = doc["interactivity"]
    assert block["frames_before_ready"] == 12
    assert block["frames_received"] >= 12 + 2 * 16  # the 12 and both keys' frames
    assert doc["frames"] == block["frames_received"]


@pytest.mark.timeout(120)
def test_back_to_back_episodes_wait_while_the_session_before_still_holds_the_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the Studio holds one session; a closed one holds it until its in-flight chunk is done,
    # and the next episode's connect comes sooner: it was refused ("already active") and
    # the episode incomplete with 0 frames
    studio = Studio(fps=16.0, first_chunk=9, chunk=9, one_session=True, drain_s=3.0)
    image = write_image(tmp_path / "start.jpg", scene(3, 160, 120))
    served = Served(tmp_path / "uploads", studio)
    out = tmp_path / "out"
    try:
        code = main([
            "attach", served.url, "--profile", "worldfoundry", "--image", str(image),
            "--model-name", "wf", "--out", str(out), "--no-tui", "--no-report", "--record",
            "off", "--no-frame-timeout", "8", "--actions", "6,8", "--seconds-per-key", "1",
        ])  # fmt: skip
    finally:
        served.close()
    assert code == 0, capsys.readouterr().err
    docs = [json.loads(p.read_text()) for p in sorted(out.rglob("scores.json"))]
    assert [d["episode"] for d in docs] == ["006_WS", "008_AD"]
    assert all(d["complete"] and d["frames"] > 0 for d in docs), [d["errors"] for d in docs]
    assert studio.refused >= 1  # the second episode came while the first still held it
    assert len([s for s in studio.sessions if s["keys"]]) == 2  # each ran once it was free


@pytest.mark.timeout(120)
def test_keys_shorter_than_a_few_first_chunk_latencies_are_said_to_measure_the_cadence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Matrix-Game 3.0's cadence with its generation time: the first chunk (57 frames at 17
    # fps) comes ~3.4 s after the first key
    studio = Studio(gen_s_per_frame=1 / 17)
    code, doc, _ = _run(tmp_path, studio, "--actions", "6", "--seconds-per-key", "5")
    out = capsys.readouterr().out
    assert code == 0, doc["errors"]
    (line,) = [x for x in out.splitlines() if "measure the cadence" in x]
    latency = float(line.split("answered the first key ")[1].split(" s")[0])
    assert 3.0 <= latency <= 5.0, line
    assert "keys of 5 s are shorter than 3 such latencies" in line
    need = float(line.split("keys of at least ")[1].split(" s")[0])
    assert need == pytest.approx(3 * latency, abs=0.2)  # each printed to 0.1 s


@pytest.mark.timeout(120)
def test_a_profile_that_knows_the_cadence_says_so_before_the_first_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from streameval.transports.profiles import load_profile

    base = Path(load_profile("worldfoundry").path).read_text(encoding="utf-8")
    mine = tmp_path / "mg3.toml"
    mine.write_text(base.replace('name = "worldfoundry"', 'name = "mg3"\nresponse_s = 3.4'))
    studio = Studio(fps=16.0, first_chunk=9, chunk=9)
    code, doc, _ = _run(tmp_path, studio, "--actions", "6", "--seconds-per-key", "1.5",
                        "--profile", str(mine))  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, doc["errors"]
    lines = [x for x in out.splitlines() if "measure the cadence" in x]
    assert len(lines) == 1, out  # said once: before the first frame, not again at the switch
    assert "the profile says the picture answers a key 3.4 s after it" in lines[0]
    assert "keys of 1.5 s are shorter" in lines[0] and "at least 10.2 s" in lines[0]


def test_probe_refuses_a_profile_that_needs_an_image_without_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["probe", "ws://127.0.0.1:9/api/realtime/ws", "--profile", "worldfoundry"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "--profile worldfoundry" in err[0] and "--image PATH" in err[0]


@pytest.mark.timeout(120)
def test_a_turn_still_showing_the_chunks_of_the_key_before_is_no_strafe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WorldFoundry Studio's own code with Matrix-Game 3.0's cadence, keys W then R: the
    # picture trails the keys by a chunk, the R segment still moves forward, and its fit
    # reads that as translation (p_yaw 0): "key R strafes instead of turning" was wrong
    import numpy as np

    from tests.probe.eased_world import EasedWorld

    studio = Studio(gen_s_per_frame=1 / 17, render=EasedWorld().render)
    code, doc, name = _run(tmp_path, studio, "--actions", "9", "--seconds-per-key", "5")
    out = capsys.readouterr().out
    assert code == 0 and name == "009_WR", doc["errors"]
    (cache,) = (tmp_path / "out").rglob("signals.npz")
    signals = np.load(cache)
    r = signals["frame_keys"][: signals["sx"].size] == "R"
    assert r.sum() >= 10
    # the premise: what came under R is mostly the W chunks' forward motion
    assert np.nanmedian(np.abs(signals["srad"][r])) > np.nanmedian(np.abs(signals["sx"][r]))
    assert "strafes instead of turning" not in out
    assert "keys_contradicted" not in doc["interactivity"]


@pytest.mark.timeout(180)
def test_probe_on_a_server_silent_at_rest_writes_the_names_and_the_announced_fps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.probe.eased_world import EasedWorld

    studio = Studio(fps=17.0, first_chunk=12, chunk=9, render=EasedWorld().render)
    image = write_image(tmp_path / "start.jpg", scene(4, 160, 120))
    served = Served(tmp_path / "uploads", studio)
    written = tmp_path / "probed.toml"
    try:
        code = main([
            "probe", served.url, "--profile", "worldfoundry", "--image", str(image),
            "--prompt", "A street.", "--seconds", "1.5", "--rest", "1.0", "--json",
            "--write-profile", str(written),
        ])  # fmt: skip
    finally:
        served.close()
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["no_key"]["motion"] == "nothing"  # silent at rest: no stall, no motion
    # the motion stops with a press's last frame: an ease-out, not "-"
    assert all(key["ease_out_s"] is not None for key in report["keys"]), report["keys"]
    text = written.read_text()
    from streameval.transports.profiles.model import parse_profile

    profile = parse_profile(text, str(written))
    assert profile.key_names() == {"W": "w", "S": "s", "A": "a", "D": "d", "L": "j", "R": "l"}
    assert profile.fps is not None and abs(profile.fps - 17.0) <= 0.5
    assert "fps as the server announced it" in text
    # the key -> picture time, so a run with keys too short for it is told before it starts
    assert profile.response_s is not None and 0 < profile.response_s < 1.5, text
    # nothing of the base file's own comments (they described its names and its fps)
    assert "paced at the server's fps" not in text and "j / l turn" not in text


# `make test-long`: a server's own error words are quoted in `make test` by the segment
# transport's faults (segments/test_transport.py); here the probe's "server said" lines, --all
@pytest.mark.long
@pytest.mark.timeout(240)
def test_probe_quotes_a_server_that_refuses_unknown_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.probe.eased_world import EasedWorld

    studio = Studio(fps=16.0, first_chunk=9, chunk=9, render=EasedWorld().render,
                    refuse_unknown=True)  # fmt: skip
    image = write_image(tmp_path / "start.jpg", scene(4, 160, 120))
    served = Served(tmp_path / "uploads", studio)
    try:
        code = main([
            "probe", served.url, "--profile", "worldfoundry", "--image", str(image),
            "--seconds", "0.8", "--rest", "0.5", "--try", "q", "--all", "--json",
        ])  # fmt: skip
    finally:
        served.close()
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["mapping"] is not None
    assert any("unsupported control key 'q'" in said for said in report["server_said"])
