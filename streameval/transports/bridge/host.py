"""The bridge, host side: a model in its own Python environment, driven as if in process.

``attach python:M:F --python /env/bin/python`` starts ``shim/worker.py`` (standard library
only) in that interpreter and gets back a ``BridgedModel``: ``step(key)``, ``reset(...)``
with the names the adapter's own ``reset`` takes, ``name``/``fps``/``width``/``height`` as
the adapter states them. Everything above (cases, suites, ``--repeat``, the step time-out,
the results) is the in-process road unchanged, and every bridge cost (a JSON line each way,
one copy through shared memory) falls inside the measured step.

A worker that dies (a segfault too), hangs past its time-out or breaks the protocol ends the
call with ``BridgeWorkerError`` naming its exit and its last lines on stderr: that episode
ends incomplete, and the next call starts a fresh worker (the model is loaded again), so one
bad case does not end the run. The shared-memory blocks are ours to unlink, however the
worker ended.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from multiprocessing import shared_memory
from pathlib import Path
from typing import Any

import numpy as np

from streameval.errors import BadInputError, BridgeWorkerError, one_line

WORKER = Path(__file__).resolve().parent / "shim" / "worker.py"
PROTOCOL = "streameval.bridge.v1"
TAIL_LINES = 12
"""Lines of the worker's stderr kept for the message of its death."""
HELLO_TIMEOUT_S = 30.0
"""The interpreter must start and say hello within this (a broken environment fails fast)."""
STEP_MARGIN = 0.9
"""The bridge's own step time-out, as a share of ``--step-timeout``: it fires first, stops
the worker and lets the next episode start a fresh one (the in-process watchdog would give up
on the model for good)."""

_EOF = object()


def _signal_name(code: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(-code).name
    return f"signal {-code}"


class _Worker:
    """One worker process: its control pipes, its stderr tail, its output block."""

    def __init__(self, python: Path, cwd: Path | None, echo: Callable[[str], None] | None):
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)  # ours would put streameval's numpy before the model's
        try:
            self.process = subprocess.Popen(
                [str(python), "-u", str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(cwd) if cwd is not None else None,
                env=env,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as exc:
            raise BadInputError(
                f"--python {python}", f"cannot start it: {exc.strerror or exc}"
            ) from None
        self.answers: queue.Queue[Any] = queue.Queue()
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.echo = echo
        self.block: shared_memory.SharedMemory | None = None
        threading.Thread(target=self._read_answers, daemon=True, name="bridge-out").start()
        self._stderr = threading.Thread(target=self._read_stderr, daemon=True, name="bridge-err")
        self._stderr.start()

    def _read_answers(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.answers.put(json.loads(line))
            except ValueError:
                self.answers.put({"type": "garbled", "line": line[:200]})
        self.answers.put(_EOF)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            text = line.rstrip()
            self.tail.append(text)
            echo = self.echo
            if echo is not None and text:
                echo(text)

    def death(self) -> str:
        """How the worker ended, with its last words."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(2.0)
        if self.process.returncode is not None:
            self._stderr.join(1.0)  # its last lines are still in the pipe
        code = self.process.returncode
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"died ({_signal_name(code)})"
        else:
            how = f"exited with status {code}"
        words = " | ".join(line for line in list(self.tail)[-4:] if line.strip())
        said = f"; its last words: {one_line(words)}" if words else ""
        return f"the model's worker {how}{said}"

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait for its answer (``BridgeWorkerError`` on death/timeout)."""
        if self.process.poll() is not None:
            raise BridgeWorkerError(self.death())
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise BridgeWorkerError(self.death()) from None
        return self.answer(str(message.get("type")), timeout)

    def answer(self, what: str, timeout: float) -> dict[str, Any]:
        try:
            got = self.answers.get(timeout=timeout)
        except queue.Empty:
            self.stop(grace=0.0)  # hung: it will not answer a close
            raise BridgeWorkerError(
                f"no answer to {what} within {timeout:g} s: the worker was stopped" + self._words()
            ) from None
        if got is _EOF:
            raise BridgeWorkerError(self.death())
        if not isinstance(got, dict) or got.get("type") == "garbled":
            self.stop()
            raise BridgeWorkerError(f"the worker broke the protocol: {got!r}"[:300])
        return got

    def _words(self) -> str:
        words = " | ".join(line for line in list(self.tail)[-3:] if line.strip())
        return f" (its last words: {one_line(words)})" if words else ""

    def frame_block(self, name: str) -> shared_memory.SharedMemory:
        """The worker's output block ``name``; a new name retires (unlinks) the old one."""
        if self.block is not None and self.block.name.lstrip("/") == name.lstrip("/"):
            return self.block
        self._drop_block()
        self.block = shared_memory.SharedMemory(name=name)
        return self.block

    def _drop_block(self) -> None:
        if self.block is not None:
            with contextlib.suppress(OSError):
                self.block.close()
            with contextlib.suppress(OSError, FileNotFoundError):
                self.block.unlink()
            self.block = None

    def stop(self, grace: float = 3.0) -> None:
        """Ask it to close, then terminate, then kill (at once with no ``grace``: a hung
        worker); unlink the blocks it made."""
        if self.process.poll() is None and grace <= 0:
            self.process.kill()
            self.process.wait()
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self.process.stdin is not None
                self.process.stdin.write('{"type":"close"}\n')
                self.process.stdin.flush()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(grace)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self._drop_block()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


def _stop(worker: _Worker | None) -> None:
    if worker is not None:
        worker.stop(grace=1.0)


class BridgedModel:
    """An adapter in another interpreter, with the in-process contract (module docstring)."""

    def __init__(
        self,
        python: Path,
        module: str,
        factory: str,
        *,
        url: str,
        app_dir: Path | None = None,
        load_timeout: float = 300.0,
        step_timeout: float = 300.0,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.python, self.module, self.factory, self.url = python, module, factory, url
        self.app_dir = app_dir
        self.load_timeout, self.step_timeout = load_timeout, step_timeout
        self.echo = echo
        self._worker: _Worker | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.loaded: dict[str, Any] = {}
        self.loads = 0
        self.bridge_s = 0.0  # host-side time around the adapter's own step (JSON + copy)
        self.steps = 0
        self._start()
        self.name: str = str(self.loaded.get("name") or self.loaded.get("class") or factory)
        for attr in ("fps", "width", "height"):
            value = self.loaded.get(attr)
            if value is not None:
                setattr(self, attr, value)
        keywords = self.loaded.get("reset")
        if keywords is not None:
            self.reset = self._reset_with(keywords)

    def __repr__(self) -> str:
        return f"{self.name} (bridged: {self.python})"

    # -------------------------------------------------------------- the worker's life

    def _start(self) -> None:
        """Start a worker and load the adapter in it (again, after a death)."""
        echo = self.echo
        worker = _Worker(self.python, self.app_dir, echo)
        self._worker = worker
        self._finalizer = weakref.finalize(self, _stop, worker)
        hello = worker.answer("start-up", HELLO_TIMEOUT_S)
        if hello.get("type") != "hello" or hello.get("protocol") != PROTOCOL:
            worker.stop()
            raise BridgeWorkerError(f"the worker said {hello!r} instead of hello"[:300])
        request = {"type": "load", "module": self.module, "factory": self.factory}
        if self.app_dir is not None:
            request["app_dir"] = str(self.app_dir)
        loaded = worker.request(request, self.load_timeout)
        worker.echo = None  # the load's progress is shown; the steps' chatter is only kept
        if loaded.get("type") == "error":
            worker.stop()
            raise BadInputError(self.url, f"in {self.python}: {one_line(loaded['message'])}")
        self.loaded = loaded
        self.loads += 1

    def _running(self) -> _Worker:
        worker = self._worker
        if worker is None or worker.process.poll() is not None:
            if worker is not None:
                worker.stop()
            try:
                self._start()
            except BadInputError as exc:  # it loaded before: now it is the model's failure
                raise BridgeWorkerError(f"restarting the worker failed: {exc}") from None
            worker = self._worker
        assert worker is not None
        return worker

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._worker = None

    # -------------------------------------------------------------- the adapter contract

    def _call(self, request: dict[str, Any], what: str) -> dict[str, Any]:
        worker = self._running()
        answer = worker.request(request, max(0.5, self.step_timeout * STEP_MARGIN))
        if answer.get("type") == "error":
            raise RuntimeError(f"{answer.get('message')} (in {what}, bridged)")
        return answer

    def step(self, key: str) -> Any:
        started = time.perf_counter()
        answer = self._call({"type": "step", "key": key}, f"step({key!r})")
        if answer.get("type") != "frame":
            raise BridgeWorkerError(f"the worker answered step with {answer.get('type')!r}")
        assert self._worker is not None
        frame = _read_frame(self._worker, answer)
        self.steps += 1
        self.bridge_s += time.perf_counter() - started - float(answer.get("step_s") or 0.0)
        return frame

    def _reset_with(self, keywords: Any) -> Callable[..., None]:
        import inspect

        def reset(**arguments: Any) -> None:
            block = None
            request: dict[str, Any] = {"type": "reset"}
            image = arguments.pop("image", None)
            try:
                if image is not None:
                    pixels = np.ascontiguousarray(image, dtype=np.uint8)
                    block = shared_memory.SharedMemory(create=True, size=max(1, pixels.nbytes))
                    np.ndarray(pixels.shape, np.uint8, buffer=block.buf)[...] = pixels
                    request["image"] = {
                        "block": block.name, "shape": list(pixels.shape), "nbytes": pixels.nbytes,
                    }  # fmt: skip
                request["arguments"] = {k: _jsonable(v) for k, v in arguments.items()}
                self._call(request, "reset()")
            finally:
                if block is not None:
                    block.close()
                    with contextlib.suppress(FileNotFoundError):
                        block.unlink()

        if keywords != "*":
            names = [str(n) for n in keywords]
            reset.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in names]
            )
        return reset


class BridgedFrame:
    """A frame with geometry, as an in-process adapter may return one."""

    def __init__(self, image: Any, pose: Any, depth: Any, intrinsics: Any) -> None:
        self.image, self.pose, self.depth, self.intrinsics = image, pose, depth, intrinsics


def _jsonable(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _read_frame(worker: _Worker, answer: dict[str, Any]) -> Any:
    """The frame's pixels copied out of the worker's block (the worker writes it again only
    when asked for the next frame), with its pose, intrinsics and depth when it sent them."""
    try:
        shape = tuple(int(n) for n in answer["shape"])
        dtype = np.dtype(str(answer["dtype"]))
        block = worker.frame_block(str(answer["block"]))
        offsets = [int(o) for o in answer["offsets"]]
        image = np.ndarray(shape, dtype, buffer=block.buf, offset=offsets[0]).copy()
        depth = None
        if answer.get("depth"):
            spec = answer["depth"]
            d_shape = tuple(int(n) for n in spec["shape"])
            d_type = np.dtype(str(spec["dtype"]))
            depth = np.ndarray(d_shape, d_type, buffer=block.buf, offset=offsets[1]).copy()
    except (KeyError, TypeError, ValueError, IndexError, FileNotFoundError) as exc:
        why = one_line(str(exc))
        raise BridgeWorkerError(f"the worker's frame cannot be read: {why}") from None
    pose, intrinsics = answer.get("pose"), answer.get("intrinsics")
    if depth is None and pose is None and intrinsics is None:
        return image
    return BridgedFrame(
        image,
        None if pose is None else np.asarray(pose, dtype=np.float64),
        depth,
        None if intrinsics is None else np.asarray(intrinsics, dtype=np.float64),
    )


def echo_to_stderr(prefix: str) -> Callable[[str], None]:
    """Show a loading worker's lines (weights, progress) as they come."""

    def echo(line: str) -> None:
        print(f"{prefix}{line}", file=sys.stderr, flush=True)

    return echo
