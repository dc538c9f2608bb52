"""A run, specified: what to run, where to write, which backends and observers, what evidence
to gather, and what the ledger says the run was given.

One frozen value that ``runs.run.arun`` carries out. Every entry builds one: each command
line command that evaluates episodes (``demo``, ``attach``, ``replay``) from its parsed
options, and ``streameval.evaluate``/``aevaluate`` from their arguments. Nothing here knows
argparse: a command's options become fields, and a field a command has no option for keeps
its default. ``RunSpec.check`` makes every check that needs no model, server or file, so a
bad value is one ``BadInputError`` line before anything runs; the checks that need them
(a model that cannot be loaded, an unreadable case set) are made when the jobs are built,
still before the first episode.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.core.observers import EpisodeObserver
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.results.layout import ExistingPolicy
from streameval.runs.builders import (
    DEFAULT_SECONDS_PER_KEY,
    RECORD_MODES,
    WORLDMARK_SUITE,
    RecordMode,
)
from streameval.runs.memory_loop import LoopPlan

if TYPE_CHECKING:
    from streameval.runs.cases import CaseSelection
    from streameval.transports.urls import AttachOptions

MAX_REPEAT = 100
EXISTING_POLICIES: tuple[ExistingPolicy, ...] = ("keep", "overwrite", "resume")


@dataclass(frozen=True)
class DemoWorld:
    """The procedural world, with ``defect`` injected, stepped in process (``demo``)."""

    defect: str = "clean"
    seed: int = 0


@dataclass(frozen=True)
class InProcessModel:
    """A model stepped in this process: an object with ``step(key) -> frame``, or a
    ``python:MODULE:FACTORY`` string whose module is looked for in ``app_dir`` first. Its
    calls are bounded by ``step_timeout`` seconds (None: the default, 300). ``python``: the
    interpreter of the model's own environment, where a ``python:`` string's adapter runs
    through the bridge (``transports/bridge``; None: in this process)."""

    model: Any
    app_dir: Path | None = Path(".")
    step_timeout: float | None = None
    python: Path | None = None


@dataclass(frozen=True)
class Servers:
    """A model behind one or more network URLs: one transport, one set of ``options``
    (clock, key map, profile, server paths, ...). Several URLs run a case set side by side,
    at most ``max_sessions`` sessions at once (None: one per core)."""

    urls: tuple[str, ...]
    options: AttachOptions
    max_sessions: int | None = None
    # a profile whose server needs a start image, and no start given: refused before anything
    # connects (``attach``'s rule); the Python API, which has no start to give, leaves that
    # to the server
    refuse_without_start: bool = False


@dataclass(frozen=True)
class Start:
    """Without cases: the start every episode of a server is given (``attach --image``):
    the image, its caption and its intrinsics text (``fx,fy,cx,cy``)."""

    image: Path | None = None
    prompt: str | None = None
    intrinsics: str | None = None

    def given(self) -> list[str]:
        """The parts given, by field name."""
        return [n for n in ("image", "prompt", "intrinsics") if getattr(self, n) is not None]


@dataclass(frozen=True)
class Rollouts:
    """Recorded rollouts to score (``replay``): paced at ``fps``, or each at its own rate
    with ``realtime``, flat out otherwise."""

    paths: tuple[Path, ...]
    fps: float | None = None
    realtime: bool = False


@dataclass(frozen=True)
class Drive:
    """How the models are driven: the suite and its plan (WorldMark ``actions`` held
    ``seconds_per_key`` each, memory_loop ``loops``, one soak of ``soak_minutes``), the rate
    asked of the model, or a benchmark's ``cases`` instead. ``actions`` None: the source's
    default (the demo's three, else all fifteen)."""

    suite: str = WORLDMARK_SUITE
    actions: tuple[int, ...] | None = None
    loops: LoopPlan = field(default_factory=LoopPlan)
    seconds_per_key: float = DEFAULT_SECONDS_PER_KEY
    fps: float | None = None
    soak_minutes: float = 5.0
    cases: CaseSelection | None = None


@dataclass(frozen=True)
class StopWhen:
    """A case run's stop rule (``runs.stop_when``): its text and the ``vs=DIR`` margin
    (None: the default, 1 point)."""

    text: str
    margin: float | None = None


@dataclass(frozen=True)
class RayBatch:
    """Replay on Ray, one episode per task (``scale.ray_batch``): ``address`` as
    ``RayOptions`` takes it (``local``, ``auto``, ``HOST:PORT``, ``ray://…``; None: start
    one here), ``gpus_per_episode`` reserved per task."""

    address: str | None = "local"
    gpus_per_episode: float = 0.0


@dataclass(frozen=True)
class Command:
    """What the run's ledger says it was given: the command (``demo``, ``attach``, ...,
    ``api``), its argv as typed (the command line only) and its options as given."""

    name: str = "api"
    argv: tuple[str, ...] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSpec:
    """One run (module docstring). ``model``: what is driven live, if anything;
    ``rollouts``: recordings replayed, if any (both may be given). ``flags``: inputs are
    named as command line options in messages (``--repeat``), else by field (``repeat``)."""

    out: Path
    model: DemoWorld | InProcessModel | Servers | None = None
    rollouts: Rollouts | None = None
    drive: Drive = field(default_factory=Drive)
    start: Start | None = None
    model_name: str | None = None
    # where to write
    existing: ExistingPolicy = "keep"
    record: RecordMode = "lossless"
    reports: bool = True
    # which backends
    config: PipelineConfig = field(default_factory=PipelineConfig)
    # which observers
    observers: tuple[EpisodeObserver, ...] = ()
    publish_mqtt: str | None = None
    stop_when: StopWhen | None = None
    ray: RayBatch | None = None
    sigterm: bool = True  # SIGTERM cancels the run as Ctrl-C does (``runs.interrupts``)
    # evidence
    repeat: int = 1
    claim: str | None = None
    profile: str | None = None  # whose ``[claim]`` stands when no claim is given
    command: Command = field(default_factory=Command)
    flags: bool = False

    def name(self, parameter: str) -> str:
        """How the caller names ``parameter``: ``--seconds-per-key`` or ``seconds_per_key``."""
        return f"--{parameter.replace('_', '-')}" if self.flags else parameter

    def check(self) -> None:
        """Every check that needs nothing but the values (module docstring)."""
        if self.existing not in EXISTING_POLICIES:
            raise BadInputError(
                self.name("existing"),
                f"one of {', '.join(EXISTING_POLICIES)}, got {self.existing!r}",
            )
        if self.record not in RECORD_MODES:
            raise BadInputError(
                self.name("record"), f"one of {', '.join(RECORD_MODES)}, got {self.record!r}"
            )
        repeat = self.repeat
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
            raise BadInputError(
                self.name("repeat"), f"a whole number in 1..{MAX_REPEAT}, got {repeat!r}"
            )
        if repeat > 1 and self.record == "off":
            raise BadInputError(
                self.name("repeat"),
                f"rollouts are compared by their recordings: not with {self.name('record')} off",
            )
        if self.model is None and self.drive.cases is not None:
            raise BadInputError(self.name("cases"), "give the model to run the cases with")
        if self.ray is not None:
            self._check_ray(self.ray)
        if self.publish_mqtt:
            from streameval.transports.mqtt.url import parse_mqtt_url

            parse_mqtt_url(self.publish_mqtt)  # a bad URL: now, not after the model loads
        if self.stop_when is not None:
            self._check_stop_when(self.stop_when)
        if isinstance(self.model, Servers):
            self._check_servers(self.model)

    def _check_stop_when(self, rule: StopWhen) -> None:
        """The rule's form and that it has cases to watch (its columns and a ``vs=`` run are
        checked against the cases once they are read, ``runs.run.stop_monitor``)."""
        from streameval.metrics.stop_rule import DEFAULT_MARGIN, parse_stop_when

        if self.drive.cases is None:
            raise BadInputError(self.name("stop_when"), f"only with {self.name('cases')} (the "
                                "rule is checked case by case)")  # fmt: skip
        parse_stop_when(rule.text, DEFAULT_MARGIN if rule.margin is None else rule.margin)

    def _check_ray(self, ray: RayBatch) -> None:
        gpus = ray.gpus_per_episode
        if not isinstance(gpus, int | float) or not math.isfinite(gpus) or gpus < 0:
            raise BadInputError(self.name("gpus_per_episode"), f"must be ≥ 0, got {gpus:g}")
        if self.publish_mqtt:
            raise BadInputError(self.name("publish_mqtt"), f"not with {self.name('ray')} "
                                f"(scores are in {self.name('out')})")  # fmt: skip
        if self.model is not None:
            raise BadInputError(
                self.name("ray"), "replays recorded rollouts: give rollouts, not a model"
            )

    def _check_servers(self, servers: Servers) -> None:
        urls = servers.urls
        if not urls:
            raise BadInputError(self.name("model"), "no server URL")
        if len(urls) > 1:
            if self.drive.cases is None:
                raise BadInputError(
                    urls[1], f"several URLs need {self.name('cases')} (one case per server)"
                )
            schemes = {url.split("://", 1)[0].split(":", 1)[0] for url in urls}
            if len(schemes) > 1:
                raise BadInputError(
                    urls[1], f"several URLs must share one transport, got {schemes}"
                )
        if servers.max_sessions is not None and servers.max_sessions < 1:
            raise BadInputError(
                self.name("max_sessions"), f"must be >= 1, got {servers.max_sessions}"
            )
