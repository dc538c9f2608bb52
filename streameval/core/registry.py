"""One generic registry for every kind of named thing: backends, metrics, (later) profiles.

lm-evaluation-harness's ``Registry[T]`` habit: an entry is an object, or a lazy
``"module:attr"`` target imported only when chosen (so torch/transformers load only for the
backend that needs them); aliases; and an unknown name fails with the known names and a
"did you mean". The backend registries (``perception.flow``, ``.depth``, ``.embedding``,
``.cuts``, ``.qalign``, ``.reconstruction``) and the metric registry
(``metrics.registry``) are instances of this class.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from streameval.errors import UnknownBackendError, UnknownNameError, did_you_mean

T = TypeVar("T")


def load_target(target: str) -> Any:
    """Import and return ``"package.module:attr"``."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"target must be 'module:attr', got {target!r}")
    return getattr(importlib.import_module(module_name), attr)


class Registry(Generic[T]):
    """Name → entry (an object, or a lazy ``"module:attr"`` target) for one kind of thing.

    ``kind`` names it in messages ("unknown flow backend 'x'"); ``error`` is the exception an
    unknown name raises (a subclass of ``UnknownNameError``); ``lazy`` says whether string
    entries are import targets (backends) or plain values.
    """

    def __init__(
        self,
        kind: str,
        *,
        error: type[UnknownNameError] = UnknownBackendError,
        lazy: bool = True,
    ) -> None:
        self.kind = kind
        self._error = error
        self._lazy = lazy
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}
        self._lock = threading.Lock()

    def register(
        self, name: str, entry: T | str, *, aliases: tuple[str, ...] = (), replace: bool = False
    ) -> None:
        """Register ``entry`` under ``name`` (and ``aliases``). A second registration of a
        name is an error unless ``replace``: two definitions of one thing are what a
        registry prevents."""
        with self._lock:
            if not replace and (name in self._entries or name in self._aliases):
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = entry
            for alias in aliases:
                self._aliases[alias] = name

    def unregister(self, name: str) -> T | str:
        with self._lock:
            try:
                entry = self._entries.pop(name)
            except KeyError:
                raise self.unknown(name) from None
            self._aliases = {a: n for a, n in self._aliases.items() if n != name}
            return entry

    def names(self) -> list[str]:
        """Registered names in registration order."""
        with self._lock:
            return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def canonical(self, name: str) -> str:
        """``name`` itself, or the name an alias stands for."""
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise self.unknown(name)

    def unknown(self, name: str) -> UnknownNameError:
        known = sorted(self._entries) if self._lazy else list(self._entries)
        hint = did_you_mean(name, [*known, *self._aliases])
        return self._error(f"unknown {self.kind} {name!r} (known: {', '.join(known)}){hint}")

    def get(self, name: str) -> T:
        """The entry of ``name``, its lazy target imported (once) on first use."""
        key = self.canonical(name)
        entry = self._entries[key]
        if self._lazy and isinstance(entry, str):
            loaded: T = load_target(entry)
            return loaded
        return entry  # type: ignore[return-value]

    def values(self) -> list[T]:
        return [self.get(n) for n in self.names()]

    # Backend registries: entries are factories.
    def resolve(self, name: str) -> Callable[..., Any]:
        """The factory registered as ``name`` (backend registries)."""
        factory: Callable[..., Any] = self.get(name)  # type: ignore[assignment]
        return factory

    def create(self, name: str, **kwargs: Any) -> Any:
        return self.resolve(name)(**kwargs)


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:model"`` (a local weights directory or a hub id) -> (name, kwargs).

    How a heavy backend is pointed at its weights from the command line, e.g.
    ``--depth depth-anything:/models/Depth-Anything-V2-Small-hf``.
    """
    name, sep, model = spec.partition(":")
    return name, ({"model": model} if sep and model else {})


def backend_registry(kind: str) -> Registry[Callable[..., Any]]:
    """A registry of backend factories for one job (``kind``: "flow backend", ...)."""
    return Registry(kind)
