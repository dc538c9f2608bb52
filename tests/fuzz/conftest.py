"""Fuzz suite settings (docs/cli.md#bad-input): a fast subset in every test run, 10,000+ cases
on demand.

``FUZZ_CASES`` is the number of generated cases for the whole suite (default 400, split
among the fuzz tests); ``make fuzz`` runs it with ``FUZZ_CASES=10000``. Every case is
counted and timed; the session ends with one line ``fuzz: N cases in T s (slowest S s)``,
and a case slower than ``CASE_LIMIT_S`` fails its test (no case may hang).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

_REPLAY_TESTS = str(Path(__file__).resolve().parent.parent / "replay")
if _REPLAY_TESTS not in sys.path:
    sys.path.insert(0, _REPLAY_TESTS)

# The case budget is split among the fuzz tests of this folder (15). The divisor is smaller
# because some spaces are exhausted early (a few hundred argument lists) and the whole-replay
# test runs a fifth of its share: the session line reports the cases actually run.
FUZZ_TESTS = 12
TOTAL_CASES = int(os.environ.get("FUZZ_CASES", "400"))
CASES_PER_TEST = max(10, math.ceil(TOTAL_CASES / FUZZ_TESTS))
# Wall seconds one case may take on a busy 2-core machine (a real case takes milliseconds).
CASE_LIMIT_S = 20.0

settings.register_profile(
    "fuzz",
    max_examples=CASES_PER_TEST,
    deadline=None,  # timing is checked by ``bounded`` against CASE_LIMIT_S, not per example
    database=None,  # nothing written into the checkout
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz")


class _Tally:
    cases = 0
    seconds = 0.0
    slowest = 0.0


@contextmanager
def bounded() -> Iterator[None]:
    """Count and time one generated case; fail it when it runs past ``CASE_LIMIT_S``."""
    start = time.perf_counter()
    yield
    took = time.perf_counter() - start
    _Tally.cases += 1
    _Tally.seconds += took
    _Tally.slowest = max(_Tally.slowest, took)
    assert took < CASE_LIMIT_S, f"a case took {took:.1f} s (bound {CASE_LIMIT_S} s)"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _Tally.cases:
        terminalreporter.write_line(
            f"fuzz: {_Tally.cases} cases in {_Tally.seconds:.1f} s "
            f"(slowest {_Tally.slowest:.3f} s, FUZZ_CASES={TOTAL_CASES})"
        )


def only_bad_input(fn: Callable[[], Any]) -> Any:
    """``fn()``'s value, or None when it raised ``BadInputError`` with a one-line message
    naming an input; any other exception fails the case."""
    from streameval.errors import BadInputError

    try:
        return fn()
    except BadInputError as exc:
        text = str(exc)
        assert "\n" not in text and text.startswith(exc.source), text
        assert "allow_pickle" not in text and "object at 0x" not in text, text
        return None


@pytest.fixture
def fuzz_profile() -> settings:
    return FUZZ


@pytest.fixture(scope="session")
def scored_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real results dir (scores.json + cache with views) to mutate: one replay, 40 frames."""
    import numpy as np

    from streameval.cli.main import main
    from tests.replay.replay_synth import make_rollout_dir, moving_texture, write_video

    root = tmp_path_factory.mktemp("fuzz-scored")
    rollout = make_rollout_dir(root / "in" / "ep", ["A"] * 20 + ["D"] * 20, size=(64, 48))
    write_video(rollout / "video.mp4", moving_texture(40, 48, 64), fps=16)  # not frozen
    poses = np.tile(np.eye(4), (40, 1, 1))
    poses[:, 0, 3] = np.linspace(0, 1, 40)
    np.save(rollout / "poses.npy", poses)
    np.save(rollout / "intrinsics.npy", np.array([[50.0, 0, 32], [0, 50, 24], [0, 0, 1]]))
    np.save(rollout / "depth_metric.npy", np.full((40, 12, 16), 3.0, np.float32))
    code = main(["replay", str(rollout), "--out", str(root / "out"), "--no-tui",
                 "--cuts", "scenedetect-content"])  # fmt: skip
    assert code == 0
    (results,) = (root / "out").glob("*/ep")  # OUT/<model>/<episode>/
    return results
