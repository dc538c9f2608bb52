"""The Python API: ``streameval.evaluate(...)`` and ``await streameval.aevaluate(...)``.

For notebooks and scripts: the same jobs (``streameval.runs.builders``), pipeline, results
layout, results.jsonl and reports as the command line, returned as an ``Evaluation`` instead of
printed. Every source the command line attaches to is accepted here: an in-process model, a
``python:MODULE:FACTORY`` string, a network URL (webrtc+http://, mjpeg+http://, mqtt://) and
recorded rollouts; both suites (worldmark actions, memory_loop trajectories). ``evaluate``
works inside a running event loop too (Jupyter runs one): the evaluation then runs on its own
loop in a helper thread, because ``asyncio.run`` refuses to nest.

Importing this module is cheap (no OpenCV, no torch): the pipeline loads when an episode runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.results.layout import ExistingPolicy
from streameval.results.results_log import RESULTS_LOG, ResultsLog
from streameval.runs.builders import (
    ALL_ACTIONS,
    DEFAULT_SECONDS_PER_KEY,
    WORLDMARK_SUITE,
    RecordMode,
    model_jobs,
    network_jobs,
    rollout_jobs,
)
from streameval.runs.existing import apply_existing_policy
from streameval.runs.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.runs.memory_loop import LoopPlan

if TYPE_CHECKING:
    from streameval.cases.model import CaseSet
    from streameval.leaderboard import MasterTable
    from streameval.runs.cases import CaseSelection
    from streameval.runs.evidence import RunEvidence
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
    notes: list[str] = field(default_factory=list)

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
) -> Evaluation:
    """Evaluate ``model`` and/or replay ``rollouts``; results go to
    ``out/<model>/<episode>/`` as with the command line.

    ``model``: an object with ``step(key) -> frame`` (docs/evaluate-your-model.md), a
    ``"python:MODULE:FACTORY"`` string, or a network URL (``webrtc+http://``,
    ``mjpeg+http://``, ``ws://``, ``mqtt://``, ...; ``attach`` holds the transport options the
    command line's ``attach`` takes: clock, key map, keys URL, profile, server paths, ...). It
    is named ``model_name``, else its own ``name`` attribute, else its class name.

    ``suite``: ``"worldmark"`` (``actions``, ``seconds_per_key``) or ``"memory_loop"``
    (``trajectories``, default all six, ``loop_seconds`` each). ``fps``: the model's rate
    (default ``model.fps``), and the replay pace of ``rollouts`` (default: flat out;
    ``realtime`` paces each at its own rate).

    ``cases``: a benchmark's cases instead of ``actions`` — WorldMark's ``arena_inputs/``
    folder or a ``.jsonl`` manifest (a path), or a ``streameval.runs.cases.CaseSelection``
    (the path with ``sets``, ``images``, ``actions`` and the order ``seed``): each case is one
    episode, the model's ``reset`` given the case's ``image``, ``prompt`` and ``intrinsics`` by
    the names it takes, results in ``out/<model>/<set>/<case>/`` (docs/run-worldmark.md).
    With a network URL each case is one session, started the way ``attach``'s ``profile``
    sends a case (its image inline, as a path, or uploaded first); a profile that cannot
    send some case is ``BadInputError`` before anything runs, and a case the server refuses
    ends incomplete with the server's words while the others are scored.

    ``existing``: ``"keep"`` (default: an episode already under ``out`` is not run again and
    is listed in ``bad_input``), ``"overwrite"`` or ``"resume"``. ``reports``: write
    report.html per episode and index.html (about a second per episode). Raises
    ``BadInputError`` for a model that cannot be loaded; unreadable rollouts are listed in
    ``bad_input`` and the others still scored.
    """
    locals_at_start = dict(locals())  # the arguments as given, for the run's ledger
    out = Path(out)
    result = Evaluation(out)
    evidence = _evidence(out, repeat, claim, record, attach)
    loops = LoopPlan(tuple(trajectories) if trajectories else None, loop_seconds)
    jobs: list[EpisodeJob] = []
    if cases is not None:
        jobs += _case_jobs(
            model,
            cases,
            out,
            model_name=model_name,
            loops=loops,
            seconds_per_key=seconds_per_key,
            fps=fps,
            record=record,
            step_timeout=step_timeout,
            attach=attach,
        )
    elif isinstance(model, str):
        jobs += _string_jobs(
            model,
            out,
            model_name=model_name,
            suite=suite,
            actions=actions,
            loops=loops,
            seconds_per_key=seconds_per_key,
            fps=fps,
            record=record,
            step_timeout=step_timeout,
            attach=attach,
        )
    elif model is not None:
        from streameval.runs.python_model import model_name as own_name

        jobs += model_jobs(
            model,
            model_name or own_name(model),
            out,
            actions=actions,
            seconds_per_key=seconds_per_key,
            fps=fps,
            record=record,
            suite=suite,
            loops=loops,
            step_timeout=step_timeout,
        )
    if rollouts:
        found = JobsReport()
        jobs += rollout_jobs([Path(p) for p in rollouts], out, found, fps=fps, realtime=realtime)
        result.bad_input += found.bad_input
        result.input_problems += found.input_problems
    if evidence.repeat > 1:
        from streameval.runs.repeats import repeat_jobs

        jobs = repeat_jobs(jobs, out, evidence.repeat, record)
    jobs, result.skipped, kept = apply_existing_policy(jobs, existing)
    result.bad_input += kept
    evidence.start()
    try:
        report: JobsReport = await run_jobs(
            jobs,
            config or PipelineConfig(),
            [*observers, ResultsLog(out / RESULTS_LOG), *evidence.observers],
        )
    except BaseException:
        evidence.finish([])  # the GPU sampler stops with the run, however it ends
        raise
    result.outcomes = report.outcomes
    result.bad_input += report.bad_input
    result.notes = await asyncio.to_thread(evidence.finish, result.outcomes)
    result.evidence = dict(evidence.sections)
    dirs = [o.results_dir for o in result.outcomes if o.results_dir is not None]
    if reports and dirs:
        from streameval.report.writer import write_reports

        await asyncio.to_thread(write_reports, dirs, out)
    if dirs:
        from streameval.runs.evidence import run_inputs, write_run_ledger

        inputs = run_inputs(
            "api",
            jobs,
            options=_api_options(locals_at_start),
            profile=None if attach is None else attach.profile,
            model=model,
        )
        await asyncio.to_thread(write_run_ledger, out, inputs, result.outcomes, evidence.sections)
    return result


def _evidence(
    out: Path, repeat: int, claim: str | None, record: RecordMode, attach: AttachOptions | None
) -> RunEvidence:
    """``repeat`` and ``claim`` checked as the command line checks ``--repeat``/``--claim``
    (a profile's ``[claim]`` when no claim is given), before any model is built."""
    from streameval.errors import BadInputError
    from streameval.inputs.claims import parse_claim
    from streameval.runs.evidence import RunEvidence

    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 100:
        raise BadInputError("repeat", f"a whole number in 1..100, got {repeat!r}")
    if repeat > 1 and record == "off":
        raise BadInputError(
            "repeat", "rollouts are compared by their recordings: not with record='off'"
        )
    parsed = None
    if claim is not None:
        parsed = parse_claim(claim, "claim")
    elif attach is not None and attach.profile:
        from streameval.transports.profiles import load_profile

        profile = load_profile(attach.profile)
        if profile.claim is not None:
            parsed = parse_claim(profile.claim, f"{profile.path}: claim")
    return RunEvidence(out, parsed, repeat)


def _api_options(given: dict[str, Any]) -> dict[str, Any]:
    """The arguments of ``aevaluate`` as the ledger keeps them: an in-process model by its
    type, observers by their types, everything else as given (paths as text)."""
    options = dict(given)
    model = options.get("model")
    if model is not None and not isinstance(model, str):
        options["model"] = f"{type(model).__module__}.{type(model).__qualname__}"
    options["observers"] = [type(o).__qualname__ for o in options.get("observers", ())]
    from dataclasses import asdict, is_dataclass

    for key in ("config", "attach"):  # PipelineConfig, AttachOptions: dataclasses
        value = options.get(key)
        if value is not None:
            plain = is_dataclass(value) and not isinstance(value, type)
            options[key] = asdict(value) if plain else str(value)
    return options


def _case_jobs(
    model: Any,
    cases: Path | str | CaseSelection,
    out: Path,
    *,
    model_name: str | None,
    loops: LoopPlan,
    seconds_per_key: float,
    fps: float | None,
    record: RecordMode,
    step_timeout: float | None,
    attach: AttachOptions | None,
) -> list[EpisodeJob]:
    """A case set for an in-process model (an object or ``python:MODULE:FACTORY``) or a
    server (a network URL); the cases are read and checked before the model is built or the
    server is reached."""
    from streameval.errors import BadInputError
    from streameval.runs.cases import CaseSelection, model_case_jobs
    from streameval.runs.python_model import load_python_model
    from streameval.runs.python_model import model_name as own_name
    from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S

    selection = cases if isinstance(cases, CaseSelection) else CaseSelection(Path(cases))
    case_set = selection.load()
    if model is None:
        raise BadInputError("cases", "give the model to run the cases with")
    origin = model if isinstance(model, str) else None
    timeout = DEFAULT_STEP_TIMEOUT_S if step_timeout is None else step_timeout
    if isinstance(model, str):
        from streameval.transports.urls import is_network_url

        if is_network_url(model):
            return _network_case_jobs(
                model,
                selection,
                case_set,
                out,
                model_name=model_name,
                loops=loops,
                seconds_per_key=seconds_per_key,
                fps=fps,
                record=record,
                attach=attach,
            )
        model, loaded_name = load_python_model(model, timeout=timeout)
    else:
        loaded_name = own_name(model)
    name = model_name or loaded_name
    return model_case_jobs(
        model,
        name,
        out,
        case_set,
        seed=selection.seed,
        seconds_per_key=seconds_per_key,
        loops=loops,
        fps=fps,
        record=record,
        step_timeout=timeout,
        origin=origin or name,
        selection=selection.record(),
    )


def _network_case_jobs(
    url: str,
    selection: CaseSelection,
    case_set: CaseSet,
    out: Path,
    *,
    model_name: str | None,
    loops: LoopPlan,
    seconds_per_key: float,
    fps: float | None,
    record: RecordMode,
    attach: AttachOptions | None,
) -> list[EpisodeJob]:
    """Every case a session on the server at ``url``, started as its profile (``attach``'s
    ``profile``) sends a case: checked against every case before the first runs, as
    ``attach URL --cases``."""
    from streameval.runs.builders import network_model_name
    from streameval.runs.cases import case_jobs
    from streameval.transports.urls import (
        AttachOptions,
        check_attach_conditioning,
        network_case_opener,
    )

    options = attach or AttachOptions(clock=None, seconds_per_key=seconds_per_key, fps=fps)
    check_attach_conditioning([url], options, case_set.cases)
    return case_jobs(
        case_set,
        out,
        model_name or network_model_name(url),
        network_case_opener(url, options),
        selection.seed,
        seconds_per_key=seconds_per_key,
        loops=loops,
        fps=fps,
        fps_asked=fps,
        record=record,
        selection=selection.record(),
        server_paths=options.server_paths,
    )


def _string_jobs(
    url: str,
    out: Path,
    *,
    model_name: str | None,
    suite: str,
    actions: Sequence[int],
    loops: LoopPlan,
    seconds_per_key: float,
    fps: float | None,
    record: RecordMode,
    step_timeout: float | None,
    attach: AttachOptions | None,
) -> list[EpisodeJob]:
    """A model named by a string: ``python:MODULE:FACTORY`` or a network URL."""
    from streameval.transports.urls import AttachOptions, is_network_url

    if is_network_url(url):
        options = attach or AttachOptions(clock=None, seconds_per_key=seconds_per_key, fps=fps)
        return network_jobs(
            url,
            out,
            options,
            actions=actions,
            suite=suite,
            loops=loops,
            fps=fps,
            model_name=model_name,
            record=record,
        )
    from streameval.runs.python_model import load_python_model

    loaded, name = (
        load_python_model(url)
        if step_timeout is None
        else load_python_model(url, timeout=step_timeout)
    )
    return model_jobs(
        loaded,
        model_name or name,
        out,
        actions=actions,
        seconds_per_key=seconds_per_key,
        fps=fps,
        record=record,
        suite=suite,
        loops=loops,
        step_timeout=step_timeout,
        origin=url,
    )


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
) -> Evaluation:
    """``aevaluate`` for code without ``await`` (same arguments); safe inside a running event
    loop (Jupyter): the evaluation then gets its own loop in a helper thread and this call
    waits for it."""
    run = aevaluate(
        model,
        rollouts=rollouts,
        out=out,
        model_name=model_name,
        suite=suite,
        actions=actions,
        trajectories=trajectories,
        loop_seconds=loop_seconds,
        seconds_per_key=seconds_per_key,
        fps=fps,
        realtime=realtime,
        config=config,
        existing=existing,
        record=record,
        reports=reports,
        observers=observers,
        step_timeout=step_timeout,
        attach=attach,
        cases=cases,
        repeat=repeat,
        claim=claim,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streameval") as pool:
        return pool.submit(asyncio.run, run).result()
