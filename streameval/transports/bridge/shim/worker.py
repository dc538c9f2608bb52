"""streameval's bridge worker: runs a model adapter inside the model's own Python environment.

This file is run by the model's interpreter (``attach python:M:F --python /env/bin/python``),
where streameval is not installed: it imports the standard library only (numpy where the
environment has it, for the frames and the start image; never for control). It lives alone in
its folder so that running it puts nothing else on ``sys.path``.

Control: one JSON object per line. The host writes requests to our stdin; we answer on a
private copy of the original stdout, and point file descriptor 1 at stderr before the user's
module is imported, so research code that prints (from Python or from C) cannot corrupt the
channel. Pixels: a shared-memory block that we create (we know the frame's size) and the host
owns (it unlinks it); one frame is written per ``step`` and the block is written again only
when the host asks for the next frame, i.e. after it copied this one out.

Requests (``type``): ``load`` (module or file, factory, app dir), ``reset`` (keyword
arguments; ``image`` as raw RGB bytes in the input block the host names), ``step`` (a key),
``close``. Answers: ``loaded`` (the adapter's name, fps, size, which reset keywords it
takes), ``reset_done``, ``frame`` (where the pixels are, with pose and intrinsics inline and
depth in the block after the image), ``error`` (the adapter's own words and where).

Python 3.8+ syntax: the model's interpreter may be older than streameval's.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
from multiprocessing import shared_memory
from typing import Any

PROTOCOL = "streameval.bridge.v1"


class Channel:
    """The control lines: requests on stdin, answers on a private duplicate of stdout."""

    def __init__(self) -> None:
        self.out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)  # print() and C-level writes to fd 1 now land on stderr
        sys.stdout = sys.stderr
        self.inp = sys.stdin

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.out.flush()

    def receive(self) -> dict[str, Any] | None:
        line = self.inp.readline()
        if not line:
            return None
        body = json.loads(line)
        if not isinstance(body, dict):
            raise ValueError("a request is not a JSON object")
        return body


def _untracked(block: shared_memory.SharedMemory) -> shared_memory.SharedMemory:
    """The host owns the block's lifetime: without this, this process's resource tracker would
    unlink it when the worker exits (a crash included), pulling it from under the host."""
    try:
        from multiprocessing import resource_tracker

        resource_tracker.unregister(block._name, "shared_memory")  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - tracker internals vary between versions
        pass
    return block


class FrameBlock:
    """The output block, grown (a new name) when a frame needs more room than it has."""

    def __init__(self) -> None:
        self.block: shared_memory.SharedMemory | None = None

    def write(self, parts: list[memoryview]) -> tuple[str, list[int]]:
        need = sum(p.nbytes for p in parts)
        if self.block is None or self.block.size < need:
            if self.block is not None:
                self.block.close()  # the host unlinks the old one when it sees the new name
            self.block = _untracked(shared_memory.SharedMemory(create=True, size=max(need, 1)))
        buffer = self.block.buf
        assert buffer is not None
        offsets, at = [], 0
        for part in parts:
            buffer[at : at + part.nbytes] = part
            offsets.append(at)
            at += part.nbytes
        return self.block.name, offsets


def _bytes_of(array: Any, what: str) -> tuple[memoryview, list[int], str]:
    """(C-contiguous bytes, shape, dtype string) of an array-like, without copying when it
    is contiguous already."""
    shape = getattr(array, "shape", None)
    dtype = getattr(array, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{what} is {type(array).__name__}, not an array with shape and dtype")
    try:
        view = memoryview(array)
        if not view.c_contiguous:
            raise BufferError
    except (TypeError, BufferError):
        view = memoryview(array.tobytes())  # a strided or foreign array: one copy
    return view.cast("B"), [int(n) for n in shape], str(getattr(dtype, "str", dtype))


def _listed(value: Any) -> Any:
    if value is None:
        return None
    to_list = getattr(value, "tolist", None)
    return to_list() if callable(to_list) else value


def _import(module: str, app_dir: str | None) -> Any:
    if app_dir:
        sys.path.insert(0, os.path.abspath(app_dir))
    if module.endswith(".py") or os.sep in module or "/" in module:
        path = os.path.abspath(module)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
        return loaded
    return importlib.import_module(module)


def _reset_keywords(model: Any) -> Any:
    """The names ``reset`` takes: a list, ``"*"`` for ``**kwargs``, or None without reset."""
    reset = getattr(model, "reset", None)
    if not callable(reset):
        return None
    try:
        parameters = inspect.signature(reset).parameters.values()
    except (TypeError, ValueError):
        return []
    names = []
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return "*"
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.append(p.name)
    return names


def _plain(value: Any) -> Any:
    """An attribute the host may use (name, fps, width, height), or None."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    return None


class Worker:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.model: Any = None
        self.frames = FrameBlock()

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        module = _import(str(request["module"]), request.get("app_dir"))
        factory = getattr(module, str(request["factory"]), None)
        if factory is None or not callable(factory):
            raise LookupError(f"{request['module']!r} has no callable {request['factory']!r}")
        self.model = factory()
        if not callable(getattr(self.model, "step", None)):
            raise TypeError(f"{type(self.model).__name__} has no step(key)")
        model = self.model
        return {
            "type": "loaded",
            "class": type(model).__name__,
            "name": _plain(getattr(model, "name", None)),
            "fps": _plain(getattr(model, "fps", None)),
            "width": _plain(getattr(model, "width", None)),
            "height": _plain(getattr(model, "height", None)),
            "reset": _reset_keywords(model),
            "load_s": time.perf_counter() - started,
            "python": sys.version.split()[0],
        }

    def reset(self, request: dict[str, Any]) -> dict[str, Any]:
        arguments = dict(request.get("arguments") or {})
        image = request.get("image")
        if image is not None:
            arguments["image"] = self._image(image)
        self.model.reset(**arguments)
        return {"type": "reset_done"}

    def _image(self, spec: dict[str, Any]) -> Any:
        block = _untracked(shared_memory.SharedMemory(name=str(spec["block"])))
        try:
            buffer = block.buf
            assert buffer is not None
            raw = bytes(buffer[: int(spec["nbytes"])])
        finally:
            block.close()
        try:
            import numpy
        except ImportError:  # the adapter gets the bytes and their shape
            return {"data": raw, "shape": spec["shape"], "dtype": "uint8"}
        return numpy.frombuffer(raw, dtype=numpy.uint8).reshape(spec["shape"]).copy()

    def step(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        frame = self.model.step(str(request["key"]))
        stepped = time.perf_counter()
        image = frame if hasattr(frame, "shape") else getattr(frame, "image", frame)
        view, shape, dtype = _bytes_of(image, "the frame")
        parts = [view]
        answer: dict[str, Any] = {"type": "frame", "shape": shape, "dtype": dtype}
        depth = getattr(frame, "depth", None) if image is not frame else None
        if depth is not None:
            d_view, d_shape, d_dtype = _bytes_of(depth, "the frame's depth")
            parts.append(d_view)
            answer["depth"] = {"shape": d_shape, "dtype": d_dtype, "nbytes": d_view.nbytes}
        if image is not frame:
            answer["pose"] = _listed(getattr(frame, "pose", None))
            answer["intrinsics"] = _listed(getattr(frame, "intrinsics", None))
        name, offsets = self.frames.write(parts)
        answer.update(block=name, offsets=offsets, nbytes=view.nbytes)
        answer["step_s"] = stepped - started
        answer["copy_s"] = time.perf_counter() - stepped
        return answer

    def close(self) -> None:
        closer = getattr(self.model, "close", None)
        if callable(closer):
            closer()
        if self.frames.block is not None:
            self.frames.block.close()

    def serve(self) -> int:
        handlers = {"load": self.load, "reset": self.reset, "step": self.step}
        self.channel.send({"type": "hello", "protocol": PROTOCOL, "pid": os.getpid()})
        while True:
            try:
                request = self.channel.receive()
            except ValueError as exc:
                self.channel.send({"type": "error", "where": "protocol", "message": str(exc)})
                continue
            if request is None or request.get("type") == "close":
                try:
                    self.close()
                finally:
                    self.channel.send({"type": "closed"})
                return 0
            kind = str(request.get("type"))
            handler = handlers.get(kind)
            if handler is None:
                self.channel.send({"type": "error", "where": "protocol",
                                   "message": f"unknown request {kind!r}"})  # fmt: skip
                continue
            try:
                self.channel.send(handler(request))
            except BaseException as exc:  # the adapter's own failure, in its own words
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self.channel.send({
                    "type": "error",
                    "where": kind,
                    "message": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(limit=8),
                })  # fmt: skip


def main() -> int:
    channel = Channel()
    return Worker(channel).serve()


if __name__ == "__main__":
    sys.exit(main())
