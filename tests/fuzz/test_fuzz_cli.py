"""Property-based fuzzing of the command line and the in-process ``attach`` path
(docs/cli.md#bad-input).

Every case runs ``streameval.cli.main.main`` in this process, or drives ``InProcessSource`` with a
model that returns generated objects. Properties: exit status 0, 1 or 2 (argparse: 0 or 2);
no traceback; bad input is one line per problem; nothing is written outside the case's
folder; an accepted replay wrote a complete scores.json inside ``--out``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streameval.protocol.schedule import Schedule

from streameval.cli.main import main
from streameval.core.events import EndOfStream, EpisodeEnd, FrameEvent, SourceError
from streameval.inputs.arrays import depth_problem, intrinsics_problem, pose_problem
from streameval.inputs.frames import frame_problem
from streameval.transports.inprocess.driver import InProcessSource
from tests.fuzz.conftest import CASES_PER_TEST, FUZZ, bounded
from tests.fuzz.strategies import ARRAYS, NASTY_STRINGS, SCALARS, dumps, mangled_text
from tests.fuzz.test_fuzz_readers import META_FIELDS
from tests.replay.replay_synth import make_rollout_dir, moving_texture, write_video

ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage errors (2), --help/--version (0)
            code = exc.code if isinstance(exc.code, int) else 2
            assert code in (0, 2), argv
    text = err.getvalue()
    assert "Traceback" not in text, text
    assert code in (0, 1, 2), (argv, code)
    return code, out.getvalue(), text


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        yield Path(tmp)


VALUES = st.one_of(
    st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e309", "1e-9", "16", "1e9", "", "-", "--",
                     "1-15", "99-100000000000000000000", "3,,4", "0x10", "½"]),
    NASTY_STRINGS.filter(lambda s: "\x00" not in s and "\ud800" not in s),
    st.text(max_size=12).filter(lambda s: "\x00" not in s),
)  # fmt: skip
FLAGS = st.sampled_from(
    [
        "--fps",
        "--seconds-per-key",
        "--step-timeout",
        "--actions",
        "--out",
        "--sort",
        "--min-episodes",
        "--exclude",
        "--realtime",
        "--markdown",
        "--flow",
        "--cuts",
        "--embedding",
        "--depth",
        "--suite",
        "--no-tui",
    ]
)
URLS = st.sampled_from(["python:tests.inputs.models:factory_raises", "python:", "python:x:y",
                        "ftp://x", "python:tests.inputs.models:factory_exits"])  # fmt: skip


@FUZZ
@given(
    command=st.sampled_from(["table", "rescore", "replay", "attach"]),
    tokens=st.lists(st.one_of(FLAGS, VALUES), max_size=8),
    url=URLS,
    where=st.sampled_from(["empty", "missing", "file", "bad-meta"]),
)
def test_fuzz_cli_arguments(
    sandbox: Path, command: str, tokens: list[str], url: str, where: str
) -> None:
    with tempfile.TemporaryDirectory(dir=sandbox) as tmp:
        case = Path(tmp)
        target = case / "input"
        if where == "empty":
            target.mkdir()
        elif where == "file":
            target.write_text("not a results dir")
        elif where == "bad-meta":
            target.mkdir()
            (target / "meta.json").write_text('{"format": "streameval.rollout/1", "fps": 0}')
        args = [command, url] if command == "attach" else [command, str(target)]
        if command in ("replay", "attach"):
            args += ["--out", str(case / "out"), "--no-tui"]
        # relative --out values land in the case folder, never in the checkout
        before_root = set(os.listdir(ROOT))
        before_sandbox = set(os.listdir(sandbox))
        cwd = os.getcwd()
        os.chdir(case)
        try:
            with bounded():
                code, _, err = run_cli([*args, *tokens])
        finally:
            os.chdir(cwd)
        assert set(os.listdir(ROOT)) == before_root
        assert set(os.listdir(sandbox)) == before_sandbox
        # every input here is bad (or the model cannot start): only help/version exit 0
        if not any(_asks_for_help(t) for t in tokens):
            assert code != 0, (args, tokens, err)


def _asks_for_help(token: str) -> bool:
    """``-h``, ``--help``, ``--version`` or an abbreviation argparse expands to one of them."""
    if token.startswith("-h") or token == "-":
        return token.startswith("-h")
    return len(token) > 2 and ("--help".startswith(token) or "--version".startswith(token))


@pytest.fixture(scope="module")
def small_rollout() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        rollout = make_rollout_dir(Path(tmp) / "ep", ["A"] * 12 + ["D"] * 12, size=(64, 48))
        write_video(rollout / "video.mp4", moving_texture(24, 48, 64), fps=16)
        yield rollout


# A whole replay runs per accepted case: fewer examples, still every one counted.
@settings(FUZZ, max_examples=max(10, CASES_PER_TEST // 5))
@given(meta=META_FIELDS, data=st.data())
def test_fuzz_cli_replay_meta(
    sandbox: Path, small_rollout: Path, meta: dict[str, Any], data: st.DataObject
) -> None:
    doc: dict[str, Any] = {"format": "streameval.rollout/1", "fps": 16, "model": "m", "suite": "s"}
    doc.update(meta)
    text = data.draw(mangled_text(dumps(doc)))
    with tempfile.TemporaryDirectory(dir=sandbox) as tmp:
        case = Path(tmp)
        rollout = shutil.copytree(small_rollout, case / "in" / "ep")
        (rollout / "meta.json").write_text(text, errors="surrogatepass")
        out = case / "out"
        with bounded():
            code, _, err = run_cli(["replay", str(rollout), "--out", str(out), "--no-tui",
                                    "--cuts", "scenedetect-content"])  # fmt: skip
        errors = [line for line in err.splitlines() if line.startswith("error: ")]
        written = [p for p in case.rglob("scores.json")]
        assert all(p.resolve().is_relative_to(out.resolve()) for p in written)
        if code == 0:
            assert errors == [] and len(written) == 1
            scores = json.loads(written[0].read_text())
            assert scores["complete"] is True and 1 <= scores["fps"] <= 1000
        elif written:  # read, and marked: the recording says it stopped early
            assert code == 2 and json.loads(written[0].read_text())["complete"] is False
        else:  # refused: one line naming a file of the rollout
            assert code == 2 and len(errors) == 1 and str(rollout) in errors[0], err


FRAMES = st.one_of(
    st.just("good"),
    st.none(),
    SCALARS,
    ARRAYS,
    st.builds(lambda s: np.zeros(s, np.uint8), st.sampled_from(
        [(48, 64, 3), (48, 56, 3), (8, 8, 3), (48, 64), (48, 64, 4), (0, 0, 3), (1, 20000, 3)])),
)  # fmt: skip
GEOMETRY = st.one_of(st.none(), ARRAYS, SCALARS, st.just(np.eye(4)), st.just(np.eye(3)))


class _Frame:
    def __init__(self, image: Any, pose: Any, intrinsics: Any, depth: Any) -> None:
        self.image, self.pose, self.intrinsics, self.depth = image, pose, intrinsics, depth


class _Scripted:
    """A model that returns the generated frames in order."""

    def __init__(self, frames: list[Any]) -> None:
        self.frames = frames
        self.i = 0

    def step(self, key: str) -> Any:
        frame = self.frames[min(self.i, len(self.frames) - 1)]
        self.i += 1
        if isinstance(frame, str) and frame == "good":
            return np.zeros((48, 64, 3), np.uint8)
        return frame


async def _drain(source: InProcessSource) -> list[Any]:
    events: list[Any] = []
    try:
        while True:
            events.append(await source.recv())
    except EndOfStream:
        return events
    finally:
        await source.close()


@FUZZ
@given(
    frames=st.lists(
        st.one_of(
            FRAMES,
            st.builds(_Frame, FRAMES, GEOMETRY, GEOMETRY, GEOMETRY),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_fuzz_in_process_frames(frames: list[Any]) -> None:
    schedule = Schedule.per_key(("A",), 0.25, 16)  # 4 frames
    source = InProcessSource(
        _Scripted(frames), schedule, episode="e", model_name="fuzzed", suite="s"
    )
    with bounded():
        events = asyncio.run(_drain(source))
    size = None
    for event in events:
        if isinstance(event, FrameEvent):
            assert frame_problem(event.image, size) is None
            size = event.image.shape[:2]
            assert event.pose is None or pose_problem(event.pose) is None
            assert event.intrinsics is None or intrinsics_problem(event.intrinsics) is None
            assert event.depth is None or depth_problem(event.depth) is None
        if isinstance(event, SourceError):
            assert event.fatal and "\n" not in event.message
            assert event.message.startswith("python:fuzzed: ")
    end = events[-1]
    assert isinstance(end, EpisodeEnd)
    assert end.complete == (not any(isinstance(e, SourceError) for e in events))
