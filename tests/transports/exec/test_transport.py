"""A process on stdin (``exec:`` with a profile; docs/serve-formats.md#a-process-on-stdin): a
Matrix-Game-3-style interactive program written by the test into its folder
(``programs.py``: no streameval code, the procedural world as the model), attached with the
built-in ``matrix-game-3-interactive`` profile, and with frames on stdout.

Measured (2-core machine): clean 100 / reversed 0 direction accuracy with 2 s keys at the
profile's 24 fps (a 12-frame first chunk, then 8; ~10 s an episode with the start)."""

from __future__ import annotations

import asyncio
import json
import os
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
from streameval.errors import BadInputError
from streameval.transports.profiles import PROFILES, load_profile
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.exec.programs import exec_url, write_program
from tests.transports.worlds import CONFIG, MEMORY_OFF

MG3 = "matrix-game-3-interactive"


def _profile(tmp_path: Path, *edits: tuple[str, str], base: str = MG3) -> str:
    text = Path(PROFILES.get(base)).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "edited.toml"
    path.write_text(text)
    return str(path)


def _running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (our program's path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


async def _attach(
    tmp_path: Path,
    *args: str,
    keys: tuple[str, ...] = ("W", "S"),
    spk: float = 2.0,
    profile: str = MG3,
    observers: list[Any] | None = None,
    config: PipelineConfig = MEMORY_OFF,
) -> EpisodeOutcome:
    program = write_program(tmp_path)
    url = exec_url(program, f"--output_dir {tmp_path / 'out'}", "--num_iterations 60", *args)
    source = open_network_source(
        url, keys, episode="exec", suite="test",
        options=AttachOptions(clock=None, seconds_per_key=spk, profile=profile),
    )  # fmt: skip
    await source.connect()
    async with asyncio.timeout(120):
        return await run_episode(source, config=config, observers=observers)


def _accuracy(outcome: EpisodeOutcome) -> float:
    value = outcome.scores.metrics["direction_accuracy_trans"].normalized
    assert value is not None
    return float(value)


def _errors(outcome: EpisodeOutcome) -> str:
    return " | ".join(str(e) for e in outcome.errors)


@pytest.mark.timeout(180)
def test_mg3_style_clean_high_reversed_low_and_the_recording_replays_bit_identically(
    tmp_path: Path,
) -> None:
    rec = tmp_path / "rec"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # the full config for the episode replayed: every column must come back bit-identical
    clean = asyncio.run(_attach(tmp_path / "a", observers=[RecordingObserver(rec)], config=CONFIG))
    reversed_ = asyncio.run(_attach(tmp_path / "b", "--reverse"))
    for outcome in (clean, reversed_):
        assert outcome.complete, outcome.errors
        inter = outcome.interactivity
        assert (inter["transport"], inter["clock"], inter["alignment"]) == (
            "exec", "video", "reported",
        )  # fmt: skip
    assert _accuracy(clean) >= 80 and _accuracy(reversed_) <= 20
    inter = clean.interactivity
    assert inter["chunk_starts"][:3] == [0, 12, 20]  # the first chunk longer, as MG3's
    assert inter["chunk_frames_median"] == 8 and inter["server_generation_ms"] > 0
    assert clean.frames == 12 + 8 * (len(inter["chunk_starts"]) - 1)  # no concatenated file
    assert not _running(str(tmp_path / "a")), "the program outlived its episode"
    keys = [json.loads(line)["key"] for line in (rec / "actions.jsonl").read_text().splitlines()]
    assert keys == ["W"] * 52 + ["S"] * 48  # 24 fps: 48 frames a key, whole chunks
    replayed = asyncio.run(run_episode(ReplaySource(read_rollout_dir(rec)), config=CONFIG))
    assert {k: m.normalized for k, m in replayed.scores.metrics.items()} == {
        k: m.normalized for k, m in clean.scores.metrics.items()
    }
    for field in ("chunks", "chunk_starts", "chunk_log", "server_generation_ms"):
        assert replayed.interactivity[field] == inter[field], field


STDOUT = """
name = "stdout-png"
transport = "exec"
fps = 16
[keys]
names = { W = "w", S = "s", A = "a", D = "d", L = "j", R = "l" }
no_move = "q"
no_turn = "u"
[process]
prompts = [
    { match = "mouse action", send = "{turn}" },
    { match = "keyboard action", send = "{move}" },
]
prompt_stream = "stderr"
frames = "stdout"
"""


@pytest.mark.timeout(120)
def test_frames_on_stdout_with_the_prompts_on_stderr(tmp_path: Path) -> None:
    profile = tmp_path / "stdout.toml"
    profile.write_text(STDOUT)
    outcome = asyncio.run(_attach(tmp_path, "--frames stdout", profile=str(profile)))
    assert outcome.complete, outcome.errors
    assert outcome.frames == 68  # 16 fps: 32 frames a key in whole chunks: W 36, S 32
    assert _accuracy(outcome) >= 80
    assert not _running(str(tmp_path))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("fault", "edits", "line"),
    [
        ("exit", (), "exited with code 3 in chunk 1 (key W); its last stderr lines: "
                     "'RuntimeError: CUDA out of memory."),
        ("silent", (("frame_timeout_s = 900", "frame_timeout_s = 3"),),
         "chunk 1 (key W): no frame and no next prompt within 3 s; its last stdout lines:"),
    ],
    ids=["exits-early", "writes-no-frame"],
)  # fmt: skip
def test_a_program_that_fails_mid_episode_keeps_the_episode(
    tmp_path: Path, fault: str, edits: tuple[tuple[str, str], ...], line: str
) -> None:
    profile = _profile(tmp_path, *edits) if edits else MG3
    rec = tmp_path / "rec"
    outcome = asyncio.run(
        _attach(tmp_path, f"--fault {fault}", profile=profile, observers=[RecordingObserver(rec)])
    )
    assert not outcome.complete and outcome.frames == 12
    errors = _errors(outcome)
    assert line in errors, errors
    assert "\n" not in errors
    assert len((rec / "actions.jsonl").read_text().splitlines()) == 12
    assert not _running(str(tmp_path)), "the program outlived its episode"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "edits", "line"),
    [
        (("--fault crash",), (), "exited with code 1 before its first prompt; its last stderr "
                                 "lines: 'Traceback (most recent call last):' | \"ModuleNotFound"),
        (("--fault mute",), (("start_timeout_s = 1800", "start_timeout_s = 3"),),
         "no prompt matching 'input the mouse action' within 3 s; its last stderr lines: "
         "'loading the model ...'"),
    ],
    ids=["crashes-at-start", "never-prompts"],
)  # fmt: skip
def test_a_program_that_never_gets_going_is_bad_input(
    tmp_path: Path, args: tuple[str, ...], edits: tuple[tuple[str, str], ...], line: str
) -> None:
    profile = _profile(tmp_path, *edits) if edits else MG3
    with pytest.raises(BadInputError) as info:
        asyncio.run(_attach(tmp_path, *args, profile=profile))
    assert line in str(info.value), info.value
    assert "\n" not in str(info.value)
    assert not _running(str(tmp_path))


@pytest.mark.timeout(60)
def test_the_command_line_names_a_command_that_does_not_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "out"), "--actions", "1", "--seconds-per-key", "1", "--no-tui"]
    url = "exec:/nonexistent/inference_interactive_pipeline --output_dir out"
    assert main(["attach", url, "--profile", MG3, *out]) == 2
    err = capsys.readouterr().err
    assert "cannot start '/nonexistent/inference_interactive_pipeline': No such file" in err
    assert "Traceback" not in err
    program = write_program(tmp_path)
    url = exec_url(program, f"--output_dir {tmp_path / 'o'}", "--fault crash")
    assert main(["attach", url, "--profile", MG3, *out]) == 2
    err = capsys.readouterr().err
    assert "exited with code 1 before its first prompt" in err
    assert "\nTraceback" not in err and not err.startswith("Traceback")  # only its quoted one


def test_bad_commands_and_profiles_are_one_line(tmp_path: Path) -> None:
    def problem(url: str, profile: str | None = MG3) -> str:
        with pytest.raises(BadInputError) as info:
            open_network_source(url, ("W", "L"), episode="e", suite="test",
                                options=AttachOptions(clock=None, seconds_per_key=1.0,
                                                      profile=profile))  # fmt: skip
        return str(info.value)

    assert "no command after exec:" in problem("exec:")
    assert "cannot split the command" in problem("exec:python 'unclosed")
    assert "a program on stdin needs --profile" in problem("exec:python x.py", None)
    assert "profile 'yume-webapp' is for http:// URLs" in problem("exec:x", "yume-webapp")
    no_move = _profile(tmp_path, ('no_move = "q"\n', ""))
    assert "no value for {move}" in problem("exec:x", no_move)
    bad = _profile(tmp_path, ('files = "*_current_iteration_*.mp4"', 'files = "a/*.mp4"'))
    with pytest.raises(BadInputError, match=r"process\.files: a file name pattern"):
        load_profile(bad)


@pytest.mark.timeout(60)
def test_a_cancelled_episode_stops_the_program(tmp_path: Path) -> None:
    async def cancelled() -> None:
        task = asyncio.create_task(_attach(tmp_path, spk=60.0))
        while not list((tmp_path / "out").glob("*_current_iteration_1.mp4")):
            await asyncio.sleep(0.1)  # it runs: a chunk or two are written
        assert _running(str(tmp_path))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert not _running(str(tmp_path)), "the program outlived its cancelled episode"
