"""TransNetV2's runtimes (``transnet_runtime.py``): OpenVINO, in float32 and in bfloat16 with
its float32 band, gives eager torch's cut decisions, frame for frame, on procedural-world clips,
a fade through black (probabilities near the threshold), the demo's episodes and H.264-decoded
video; the runtime choice, the cache folder and the fallback to eager torch.

The probabilities may differ by float rounding in float32 and by bfloat16's rounding far from
the threshold (reported); the decisions (p > 0.5) may not.
Both runtimes run in real workers (``TransNetV2Detector(runtime=...)``) on the same pushed
frames, through the same windows and pipe protocol as the pipeline's detector."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.core.cpu import CPU_FEATURES_ENV
from streameval.errors import BackendUnavailableError
from streameval.perception.transnet import (
    TRANSNET_THRESHOLD,
    TransNetV2Detector,
    transnet_weights_path,
)
from streameval.perception.transnet_int8 import nncf_available
from streameval.perception.transnet_pool import POOL
from streameval.perception.transnet_runtime import (
    CACHE_ENV,
    RUNTIME_ENV,
    expected_fast_pass,
    expects_bfloat16,
    no_bfloat16_reason,
    openvino_model_dir,
    requested_runtime,
    user_cache_dir,
)
from tests.perception.test_cuts import SPLICE, clip, spliced

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline

Frame = npt.NDArray[np.uint8]
Frames = Iterable[Frame]
DEMO_ACTIONS = ("WR", "ADA", "LRL")  # the demo's default actions 9, 14, 12


# --- runtime choice and cache folder (no model) -------------------------------------------


def test_requested_runtime_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    assert requested_runtime("auto") == "auto"
    monkeypatch.setenv(RUNTIME_ENV, "torch")
    assert requested_runtime("auto") == "torch"
    assert requested_runtime("openvino") == "openvino"  # an explicit name is never overridden
    monkeypatch.setenv(RUNTIME_ENV, "tensorrt")
    with pytest.raises(ValueError, match="STREAMEVAL_TRANSNET_RUNTIME"):
        requested_runtime("auto")
    with pytest.raises(
        ValueError, match="known: auto, openvino, openvino-int8, openvino-f32, torch"
    ):
        requested_runtime("onnx")


def test_the_cache_folder_follows_the_weights_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert user_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "streameval"
    a, b = tmp_path / "a.pth", tmp_path / "b.pth"
    a.write_bytes(b"weights")
    b.write_bytes(b"other weights")
    assert openvino_model_dir(a) == openvino_model_dir(a)
    assert openvino_model_dir(a) != openvino_model_dir(b)
    assert openvino_model_dir(a).parent == tmp_path / "xdg" / "streameval" / "transnetv2"


# --- decisions: OpenVINO against eager torch ----------------------------------------------


def needs_openvino() -> None:
    """Skip without OpenVINO, found without importing it: importing it in this process would
    start its usage telemetry (the worker imports it with the telemetry off)."""
    if importlib.util.find_spec("openvino") is None:
        pytest.skip("the openvino package is not installed")


def _detector(runtime: str) -> TransNetV2Detector:
    try:
        return TransNetV2Detector(runtime=runtime, keep_probabilities=True)
    except BackendUnavailableError as err:
        pytest.skip(str(err))


def default_openvino_runtime() -> tuple[str, str]:
    """What the ``openvino`` runtime runs as on this CPU (as streameval sees it: a baseline one
    under ``STREAMEVAL_CPU_FEATURES=baseline``): bfloat16 with the band where the CPU computes
    bfloat16 natively, else float32 throughout with the reason in the note."""
    fast = expected_fast_pass("openvino")
    if fast == "bf16":
        return "openvino", ""
    if fast == "int8":
        return "openvino-int8", no_bfloat16_reason()
    return "openvino-f32", "float32 throughout: " + no_bfloat16_reason()


def compare_runtimes(clips: dict[str, Frames]) -> dict[str, tuple[list[int], float, int]]:
    """Each clip through eager-torch, OpenVINO float32 and OpenVINO (bfloat16 with the float32
    band where this CPU computes bfloat16 natively, else float32 throughout) workers, side by
    side: per clip the cuts (asserted equal on all three), the smallest distance of a
    probability to the threshold (how close a decision came to flipping) and the windows the
    band sent to float32. Float32 probabilities are within float rounding of eager torch; the
    banded ones within bfloat16's rounding."""
    needs_openvino()
    expected = {"torch": ("torch", ""), "openvino-f32": ("openvino-f32", "")}
    expected["openvino"] = default_openvino_runtime()
    if nncf_available():  # the int8 pass with its band, asked for on any CPU
        expected["openvino-int8"] = ("openvino-int8", "")
    out: dict[str, tuple[list[int], float, int]] = {}
    for name, frames in clips.items():
        dets = {rt: _detector(rt) for rt in expected}
        for i, frame in enumerate(frames):
            for det in dets.values():
                det.push(i, frame)
        cuts = {rt: det.finish() for rt, det in dets.items()}
        for rt, det in dets.items():
            assert cuts[rt] is not None, det.failure
            assert (det.stats.runtime, det.stats.runtime_note) == expected[rt]
        assert all(cuts[rt] == cuts["torch"] for rt in dets), name
        p = {rt: np.asarray(det.probabilities) for rt, det in dets.items()}
        for rt in dets:
            assert np.array_equal(p["torch"] > TRANSNET_THRESHOLD, p[rt] > TRANSNET_THRESHOLD)
        exact_delta = float(np.abs(p["torch"] - p["openvino-f32"]).max())
        banded_delta = float(np.abs(p["torch"] - p["openvino"]).max())
        margin = float(np.abs(p["torch"] - TRANSNET_THRESHOLD).min())
        exact_windows = dets["openvino"].stats.exact_windows
        out[name] = (cuts["torch"] or [], margin, exact_windows)
        if "openvino-int8" in dets:
            int8_delta = float(np.abs(p["torch"] - p["openvino-int8"]).max())
            print(f"{name}: int8+band max |dp| {int8_delta:.2e} "
                  f"({dets['openvino-int8'].stats.exact_windows} windows in float32)")  # fmt: skip
            assert int8_delta < 0.1, name  # int8's rounding, far from the threshold only
        print(f"\n{name}: {len(p['torch'])} frames, cuts {cuts['torch']}, max |dp| float32 "
              f"{exact_delta:.2e}, bfloat16+band {banded_delta:.2e} ({exact_windows} of "
              f"{dets['openvino'].stats.windows} windows in float32), closest to the "
              f"threshold {margin:.3f}")  # fmt: skip
        assert exact_delta < 1e-5, name
        assert banded_delta < 0.02, name  # bfloat16's rounding, far from the threshold only
    return out


def fade_through_black(frames: list[Frame], at: int, length: int) -> list[Frame]:
    """``frames`` faded to black over ``length`` frames from ``at``, 20 black frames, and faded
    back in: TransNetV2's probabilities pass near the threshold (0.01–0.04 from it), where the
    band must send the window to float32."""
    out = list(frames[:at])
    for i in range(length):
        out.append((frames[at + i] * (1 - (i + 1) / length)).astype(np.uint8))
    out += [np.zeros_like(frames[0])] * 20
    for i in range(length):
        out.append((frames[i] * ((i + 1) / length)).astype(np.uint8))
    return out + list(frames[length:])


def h264(frames: Frames, crf: int = 18, fps: int = 16) -> list[npt.NDArray[np.uint8]]:
    """The frames through libx264 and back (``h264_roundtrip``), skipped without PyAV."""
    pytest.importorskip("av")
    from tests.replay.replay_synth import h264_roundtrip

    return h264_roundtrip(frames, crf, fps)


def episode(defect: str, keys: str, seconds_per_key: float, seed: int = 0) -> Iterator[Frame]:
    """A procedural-world episode rendered frame by frame (not kept: 0.8 MB a frame)."""
    world = ProceduralWorld(world_config_for_defect(defect, seed=seed))
    schedule = Schedule.per_key(list(keys), seconds_per_key, world.fps)
    for i in range(schedule.total_frames):
        yield world.step(schedule.key_for_frame(i)).image


def test_openvino_gives_eager_torchs_cuts() -> None:
    """A stark cut and a fade through black (probabilities near the threshold, where the
    band decides): same cuts, |Δp| at float rounding. The teleport and H.264: make test-long."""
    cut_clip = clip("clean", "L" * 20 + "W" * 20) + spliced()[SPLICE:]
    teleport = clip("hard_cut", "W" * 48, cut_every_s=2.0)  # teleport at frame 32
    fade = fade_through_black(teleport, 20, 16)
    result = compare_runtimes({"stark cut": cut_clip, "fade through black": fade})
    assert result["stark cut"][0] == [SPLICE]
    assert result["fade through black"][1] < 0.1  # a probability near the threshold ...
    if default_openvino_runtime()[0] != "openvino-f32":  # ... its window decided in float32
        assert result["fade through black"][2] >= 1
    else:  # (float32 throughout: no window to send back)
        assert result["fade through black"][2] == 0


# `make test-long`: `make test` keeps a stark cut and a fade through black above; here the
# hard_cut defect's teleport and both clips after H.264
@pytest.mark.long
def test_openvino_gives_eager_torchs_cuts_on_a_teleport_and_after_h264() -> None:
    cut_clip = clip("clean", "L" * 20 + "W" * 20) + spliced()[SPLICE:]
    teleport = clip("hard_cut", "W" * 48, cut_every_s=2.0)  # teleport at frame 32
    result = compare_runtimes({"teleport": teleport, "both after H.264": h264(cut_clip + teleport)})
    assert result["teleport"][0] == [32]
    assert result["both after H.264"][0] == [SPLICE, len(cut_clip), len(cut_clip) + 32]


def test_a_baseline_cpu_never_asks_for_bfloat16(
    fresh_pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``STREAMEVAL_CPU_FEATURES=baseline`` (a CPU without AVX-512 and bfloat16, an AMD
    EPYC say) the default runtime never asks OpenVINO for bfloat16: the int8 pass with its
    band where nncf is installed, else float32 throughout, said so, with eager torch's cuts.
    The worker reads the variable when it starts (a fresh pool)."""
    monkeypatch.setenv(CPU_FEATURES_ENV, "baseline")
    assert not expects_bfloat16("openvino")
    assert default_openvino_runtime()[0] == (
        "openvino-int8" if nncf_available() else "openvino-f32"
    )
    cut_clip = clip("clean", "L" * 20 + "W" * 20) + spliced()[SPLICE:]
    result = compare_runtimes({"stark cut": cut_clip})
    assert result["stark cut"][0] == [SPLICE]


@pytest.mark.long
@pytest.mark.parametrize("defect", ["hard_cut", "clean", "forget"])
def test_openvino_gives_eager_torchs_cuts_on_the_demo_episodes(defect: str) -> None:
    """The demo's three actions (WR, ADA, LRL) at 5 s a key, as rendered and after H.264."""
    clips: dict[str, Frames] = {}
    for keys in DEMO_ACTIONS:
        clips[f"{defect} {keys}"] = episode(defect, keys, 5.0)
    clips[f"{defect} ADA after H.264"] = h264(episode(defect, "ADA", 5.0))
    result = compare_runtimes(clips)
    if defect == "hard_cut":  # a teleport every 5 s
        assert result["hard_cut ADA"][0] == [80, 160]


# --- the export's cache and the fallback --------------------------------------------------


@pytest.fixture
def fresh_pool() -> Iterator[None]:
    """No pooled worker from before (a worker reads the CPU features once, when it starts)."""
    POOL.shutdown()
    yield
    POOL.shutdown()


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder for the workers this test starts (and no pooled worker that
    loaded its model from another)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    POOL.shutdown()
    yield tmp_path
    POOL.shutdown()


@pytest.mark.long
def test_the_export_is_cached_and_reused(own_cache: Path) -> None:
    needs_openvino()
    frames = clip("hard_cut", "W" * 48, cut_every_s=2.0)
    first = _detector("openvino")
    weights = first.weights
    for i, frame in enumerate(frames):
        first.push(i, frame)
    assert first.finish() == [32], first.failure
    folder = openvino_model_dir(weights, own_cache)
    assert sorted(p.name for p in folder.iterdir()) == [
        "key.json",
        "transnetv2.bin",
        "transnetv2.xml",
    ]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temporary left
    POOL.shutdown()
    second = _detector("openvino")
    for i, frame in enumerate(frames):
        second.push(i, frame)
    assert second.finish() == [32], second.failure
    assert second.stats.load_seconds < first.stats.load_seconds  # no export the second time
    assert second.probabilities == first.probabilities


def test_a_failed_export_falls_back_to_eager_torch(own_cache: Path) -> None:
    """``auto`` runs eager torch, and says why, where OpenVINO cannot; ``openvino`` fails."""
    needs_openvino()
    folder = openvino_model_dir(transnet_weights_path(), own_cache)
    folder.parent.mkdir(parents=True)
    marker = folder.with_name(folder.name + "-export-failed.txt")
    marker.write_text("RuntimeError: planted\n")
    frames = clip("hard_cut", "W" * 48, cut_every_s=2.0)
    auto, strict = _detector("auto"), _detector("openvino")
    for i, frame in enumerate(frames):
        auto.push(i, frame)
        strict.push(i, frame)
    assert auto.finish() == [32], auto.failure
    assert auto.stats.runtime == "torch" and "planted" in auto.stats.runtime_note
    assert strict.finish() is None
    assert strict.failure is not None and "planted" in strict.failure
