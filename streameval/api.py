"""The Python API: ``streameval.evaluate(...)`` and ``await streameval.aevaluate(...)``.

For notebooks and scripts: the arguments become a run specification (``runs.spec``) and take
the command line's own road (``runs.run.arun``): the same jobs, pipeline, results layout,
results.jsonl, evidence, reports and ledger, returned as an ``Evaluation`` instead of
printed. Every source the command line attaches to is accepted here: an in-process model, a
``python:MODULE:FACTORY`` string, a network URL (webrtc+http://, mjpeg+http://, mqtt://) and
recorded rollouts; both suites (worldmark actions, memory_loop trajectories). ``evaluate``
works inside a running event loop too (Jupyter runs one): the evaluation then runs on its own
loop in a helper thread, because ``asyncio.run`` refuses to nest.

Importing this module is cheap (no OpenCV, no torch): the pipeline loads when an episode runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.results.layout import ExistingPolicy
from streameval.runs.builders import (
    ALL_ACTIONS,
    DEFAULT_SECONDS_PER_KEY,
    WORLDMARK_SUITE,
    RecordMode,
)
from streameval.runs.memory_loop import LoopPlan
from streameval.runs.spec import (
    Command,
    Drive,
    InProcessModel,
    RayBatch,
    Rollouts,
    RunSpec,
    Servers,
    StopWhen,
)

if TYPE_CHECKING:
    from streameval.leaderboard import MasterTable
    from streameval.runs.cases import CaseSelection
    from streameval.runs.run import RunResult
    from streameval.transports.urls import AttachOptions

DEFAULT_ACTIONS = ALL_ACTIONS


@dataclass
class Evaluation:
    """What an evaluation produced: one outcome per episode run, and what was not run.

    ``bad_input``: inputs refused (not run), one line each, as the command line prints them;
    ``input_problems``: defects of inputs that still ran (an unusable sidecar: the metrics
    that need it are ``missing`` with the reason) — the command line exits 2 for either.
    """

    out: Path
    outcomes: list[EpisodeOutcome] = field(default_factory=list)
    bad_input: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    input_problems: list[str] = field(default_factory=list)
    # the ledger's hardware, repeats and claim blocks, and one line each (``runs.evidence``)
    evidence: dict[str, Any] = field(default_factory=dict)
    # what the stop rule decided, then the evidence's lines, as the command line prints them
    notes: list[str] = field(default_factory=list)
    stopped: bool = False  # the stop rule ended a case run before its last case, or the user
    failures: list[str] = field(default_factory=list)  # Ray tasks that failed (not bad input)

    @property
    def scores(self) -> dict[str, dict[str, MetricResult]]:
        """``{episode: {metric: MetricResult}}`` of the episodes run now."""
        return {o.info.episode: dict(o.scores.metrics) for o in self.outcomes}

    @property
    def complete(self) -> bool:
        return not self.bad_input and all(o.complete for o in self.outcomes)

    def table(self, **options: Any) -> MasterTable:
        """The master table of everything under ``out`` (every model unless ``rule`` is given;
        ``options`` as for ``streameval.leaderboard.build_table``)."""
        from streameval.leaderboard import INCLUDE_ALL, tabulate

        options.setdefault("rule", INCLUDE_ALL)
        return tabulate([self.out], **options)


async def aevaluate(
    model: Any = None,
    *,
    rollouts: Sequence[Path | str] = (),
    out: Path | str = Path("results"),
    model_name: str | None = None,
    suite: str = WORLDMARK_SUITE,
    actions: Sequence[int] = DEFAULT_ACTIONS,
    trajectories: Sequence[str] | None = None,
    loop_seconds: float = 60.0,
    seconds_per_key: float = DEFAULT_SECONDS_PER_KEY,
    fps: float | None = None,
    realtime: bool = False,
    config: PipelineConfig | None = None,
    existing: ExistingPolicy = "keep",
    record: RecordMode = "lossless",
    reports: bool = True,
    observers: Sequence[EpisodeObserver] = (),
    step_timeout: float | None = None,
    attach: AttachOptions | None = None,
    cases: Path | str | CaseSelection | None = None,
    repeat: int = 1,
    claim: str | None = None,
    stop_when: str | None = None,
    margin: float | None = None,
    publish_mqtt: str | None = None,
    ray: str | RayBatch | None = None,
    sigterm: bool = True,
) -> Evaluation:
    """Evaluate ``model`` and/or replay ``rollouts``; results go to
    ``out/<model>/<episode>/`` as with the command line.

    ``model``: an object with ``step(key) -> frame`` (docs/evaluate-your-model.md), a
    ``"python:MODULE:FACTORY"`` string, or a network URL (``webrtc+http://``,
    ``mjpeg+http://``, ``ws://``, ``mqtt://``, ...; ``attach`` holds the transport options the
    command line's ``attach`` takes: clock, key map, keys URL, profile, server paths, ...). It
    is named ``model_name``, else its own ``name`` attribute, else its class name.

    ``suite``: ``"worldmark"`` (``actions``, ``seconds_per_key``), ``"memory_loop"``
    (``trajectories``, default all six, ``loop_seconds`` each) or ``"soak"`` (a network URL:
    one continuous episode). ``fps``: the model's rate (default ``model.fps``), and the replay
    pace of ``rollouts`` (default: flat out; ``realtime`` paces each at its own rate).

    ``cases``: a benchmark's cases instead of ``actions`` — WorldMark's ``arena_inputs/``
    folder or a ``.jsonl`` manifest (a path), or a ``streameval.runs.cases.CaseSelection``
    (the path with ``sets``, ``images``, ``actions`` and the order ``seed``): each case is one
    episode, the model's ``reset`` given the case's ``image``, ``prompt`` and ``intrinsics`` by
    the names it takes, results in ``out/<model>/<set>/<case>/`` (docs/run-worldmark.md).
    With a network URL each case is one session, started the way ``attach``'s ``profile``
    sends a case (its image inline, as a path, or uploaded first); a profile that cannot
    send some case is ``BadInputError`` before anything runs, and a case the server refuses
    ends incomplete with the server's words while the others are scored. ``stop_when``: end
    a case run once the rule is met (``"width<=4"``, ``"COLUMN:width<=W"``, ``"vs=DIR"``
    with ``margin`` points; docs/methods.md#running-intervals-over-a-case-run); the cases not
    run are recorded, ``notes`` says what was decided.

    ``existing``: ``"keep"`` (default: an episode already under ``out`` is not run again and
    is listed in ``bad_input``), ``"overwrite"`` or ``"resume"``. ``reports``: write
    report.html per episode and index.html (about a second per episode). ``publish_mqtt``:
    live scores on ``mqtt://HOST:PORT/SESSION`` for ``streameval dashboard --mqtt``.
    ``ray``: replay ``rollouts`` on Ray, one episode per task (an address: ``"local"``,
    ``"auto"``, ``"HOST:PORT"``; or a ``RayBatch`` with GPUs per episode). ``sigterm``: while
    episodes run, SIGTERM cancels the evaluation as Ctrl-C does — the episode in progress is
    written incomplete (scores.json, its results.jsonl line) and ``CancelledError`` raised, as
    when the awaiting task is cancelled. ``repeat``/``claim``: as ``--repeat``/``--claim``.

    Raises ``BadInputError`` for a model that cannot be loaded and for any argument that is
    wrong; unreadable rollouts are listed in ``bad_input`` and the others still scored.
    """
    given = dict(locals())  # the arguments as given: the spec, and the run's ledger
    from streameval.runs.run import arun

    return evaluation(await arun(run_spec(given)))


def run_spec(given: dict[str, Any]) -> RunSpec:
    """The run that ``aevaluate``'s arguments (``given``, by name) ask for."""
    from streameval.runs.cases import CaseSelection

    out = Path(given["out"])
    cases = given["cases"]
    selection = None
    if cases is not None:
        selection = cases if isinstance(cases, CaseSelection) else CaseSelection(Path(cases))
    trajectories = given["trajectories"]
    drive = Drive(
        suite=given["suite"],
        actions=tuple(given["actions"]),
        loops=LoopPlan(tuple(trajectories) if trajectories else None, given["loop_seconds"]),
        seconds_per_key=given["seconds_per_key"],
        fps=given["fps"],
        cases=selection,
    )
    rollouts = given["rollouts"]
    ray = given["ray"]
    attach: AttachOptions | None = given["attach"]
    stop_when, margin = given["stop_when"], given["margin"]
    if stop_when is None and margin is not None:
        raise BadInputError("margin", "only with stop_when='vs=DIR'")
    return RunSpec(
        out=out,
        model=_model_source(given["model"], given, attach),
        rollouts=(
            Rollouts(tuple(Path(p) for p in rollouts), given["fps"], given["realtime"])
            if rollouts
            else None
        ),
        drive=drive,
        model_name=given["model_name"],
        existing=given["existing"],
        record=given["record"],
        reports=given["reports"],
        config=given["config"] or PipelineConfig(),
        observers=tuple(given["observers"]),
        publish_mqtt=given["publish_mqtt"],
        stop_when=None if stop_when is None else StopWhen(stop_when, margin),
        ray=RayBatch(ray) if isinstance(ray, str) else ray,
        sigterm=given["sigterm"],
        repeat=given["repeat"],
        claim=given["claim"],
        profile=None if attach is None else attach.profile,
        command=Command("api", None, _api_options(given)),
    )


def _model_source(
    model: Any, given: dict[str, Any], attach: AttachOptions | None
) -> InProcessModel | Servers | None:
    """What ``model`` is: a network URL (a server), else a model stepped in process."""
    if model is None:
        return None
    if isinstance(model, str):
        from streameval.transports.urls import AttachOptions, is_network_url

        if is_network_url(model):
            options = attach or AttachOptions(
                clock=None, seconds_per_key=given["seconds_per_key"], fps=given["fps"]
            )
            return Servers((model,), options)
    return InProcessModel(model, step_timeout=given["step_timeout"])


def evaluation(result: RunResult) -> Evaluation:
    """The Python API's view of a run's result."""
    found = Evaluation(result.out)
    found.outcomes = list(result.outcomes)
    found.bad_input = [*result.refused.bad_input, *result.report.bad_input]
    found.skipped = list(result.refused.skipped)
    found.input_problems = list(result.refused.input_problems)
    found.evidence = dict(result.evidence)
    found.notes = [*result.rule_lines, *result.evidence_lines]
    found.stopped = result.report.stopped
    if result.ray is not None:
        found.bad_input += result.ray.bad_input
        found.failures = list(result.ray.failures)
    return found


def _api_options(given: dict[str, Any]) -> dict[str, Any]:
    """The arguments of ``aevaluate`` as the ledger keeps them: an in-process model by its
    type, observers by their types, everything else as given (paths as text)."""
    options = dict(given)
    model = options.get("model")
    if model is not None and not isinstance(model, str):
        options["model"] = f"{type(model).__module__}.{type(model).__qualname__}"
    options["observers"] = [type(o).__qualname__ for o in options.get("observers", ())]
    from dataclasses import asdict, is_dataclass

    for key in ("config", "attach", "ray"):  # PipelineConfig, AttachOptions, RayBatch
        value = options.get(key)
        if value is not None:
            plain = is_dataclass(value) and not isinstance(value, type)
            options[key] = asdict(value) if plain else str(value)
    return options


def evaluate(
    model: Any = None,
    *,
    rollouts: Sequence[Path | str] = (),
    out: Path | str = Path("results"),
    model_name: str | None = None,
    suite: str = WORLDMARK_SUITE,
    actions: Sequence[int] = DEFAULT_ACTIONS,
    trajectories: Sequence[str] | None = None,
    loop_seconds: float = 60.0,
    seconds_per_key: float = DEFAULT_SECONDS_PER_KEY,
    fps: float | None = None,
    realtime: bool = False,
    config: PipelineConfig | None = None,
    existing: ExistingPolicy = "keep",
    record: RecordMode = "lossless",
    reports: bool = True,
    observers: Sequence[EpisodeObserver] = (),
    step_timeout: float | None = None,
    attach: AttachOptions | None = None,
    cases: Path | str | CaseSelection | None = None,
    repeat: int = 1,
    claim: str | None = None,
    stop_when: str | None = None,
    margin: float | None = None,
    publish_mqtt: str | None = None,
    ray: str | RayBatch | None = None,
    sigterm: bool = True,
) -> Evaluation:
    """``aevaluate`` for code without ``await`` (same arguments); safe inside a running event
    loop (Jupyter): the evaluation then gets its own loop in a helper thread and this call
    waits for it (SIGTERM is then left to the process)."""
    given = dict(locals())
    from streameval.runs.run import run

    return evaluation(run(run_spec(given)))
