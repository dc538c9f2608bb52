"""The Python API: ``streameval.evaluate(...)`` and ``await streameval.aevaluate(...)``.

For notebooks and scripts: the same jobs, pipeline, results layout, results.jsonl and reports
as the command line, returned as an ``Evaluation`` instead of printed. ``evaluate`` works
inside a running event loop too (Jupyter runs one): the evaluation then runs on its own loop
in a helper thread, because ``asyncio.run`` refuses to nest.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.errors import BadInputError
from streameval.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.layout import ExistingPolicy, episode_dir
from streameval.observers import EpisodeObserver, EpisodeOutcome
from streameval.pipeline import PipelineConfig
from streameval.results import MetricResult
from streameval.results_log import RESULTS_LOG, ResultsLog
from streameval.run_options import RecordMode, apply_existing_policy

if TYPE_CHECKING:
    from streameval.leaderboard import MasterTable

DEFAULT_ACTIONS = tuple(range(1, 16))  # the whole WorldMark suite


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


def _recorders(results_dir: Path, record: RecordMode) -> list[EpisodeObserver]:
    if record == "off":
        return []
    from streameval.recording import RecordingObserver

    return [RecordingObserver(results_dir / "recording", lossy=record == "lossy")]


def model_jobs(
    model: Any,
    name: str,
    out: Path,
    *,
    actions: Sequence[int] = DEFAULT_ACTIONS,
    seconds_per_key: float = 20.0,
    fps: float | None = None,
    record: RecordMode = "lossless",
    suite: str = "worldmark",
    step_timeout: float | None = None,
    origin: str | None = None,
) -> list[EpisodeJob]:
    """One job per WorldMark action for an in-process ``model`` (``step(key) -> frame``;
    optional ``reset()``, ``fps``, ``width``, ``height``: docs/evaluate-your-model.md).
    Model calls run in the model's own thread, bounded by ``step_timeout`` seconds; a model
    that hung once is not driven again (its thread may still be inside it). Bad input is
    named by ``origin`` (the URL the model came from), else by ``name``."""
    from streameval.attach import model_fps
    from streameval.driver import InProcessSource
    from streameval.inputs.numbers import check_frame_count
    from streameval.model_thread import DEFAULT_STEP_TIMEOUT_S, ModelHealth
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import WORLDMARK, worldmark_keys

    if not callable(getattr(model, "step", None)):
        raise BadInputError(origin or name, f"{type(model).__name__} has no step(key)")
    bad = [a for a in actions if a not in WORLDMARK]
    if bad:
        raise BadInputError("actions", f"worldmark action ids are 1–15, got {bad}")
    rate = model_fps(model, fps, origin or name)
    timeout = DEFAULT_STEP_TIMEOUT_S if step_timeout is None else step_timeout
    health = ModelHealth()
    jobs: list[EpisodeJob] = []
    for action in actions:
        keys = worldmark_keys(action)
        episode = f"{action:03d}_{''.join(keys)}"
        schedule = Schedule.per_key(keys, seconds_per_key, rate)
        check_frame_count(schedule.total_frames, "fps × seconds per key")

        def open_source(schedule: Schedule = schedule, episode: str = episode) -> InProcessSource:
            if health.hung is not None:  # its thread may still be inside the model
                raise BadInputError(name, f"not driven again: {health.hung}")
            return InProcessSource(
                model,
                schedule,
                episode=episode,
                model_name=name,
                suite=suite,
                width=model_size(model, "width"),
                height=model_size(model, "height"),
                step_timeout=timeout,
                reset=callable(getattr(model, "reset", None)),
                health=health,
            )

        results_dir = episode_dir(out, name, episode)
        jobs.append(EpisodeJob(episode, open_source, results_dir, _recorders(results_dir, record)))
    return jobs


def model_size(model: object, name: str) -> int | None:
    """``model.width``/``height`` when it is a plausible frame side; otherwise the first frame
    sets the size (a declared size is only a hint, the frames are checked either way)."""
    from streameval.inputs.numbers import FRAME_SIDE

    value = getattr(model, name, None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if FRAME_SIDE.low <= value <= FRAME_SIDE.high else None
    return None


async def aevaluate(
    model: Any = None,
    *,
    rollouts: Sequence[Path | str] = (),
    out: Path | str = Path("results"),
    model_name: str | None = None,
    actions: Sequence[int] = DEFAULT_ACTIONS,
    seconds_per_key: float = 20.0,
    fps: float | None = None,
    config: PipelineConfig | None = None,
    existing: ExistingPolicy = "keep",
    record: RecordMode = "lossless",
    reports: bool = True,
    observers: Sequence[EpisodeObserver] = (),
) -> Evaluation:
    """Evaluate an in-process ``model`` (an object with ``step(key)``, or a
    ``"python:MODULE:FACTORY"`` string), and/or replay ``rollouts``; results go to
    ``out/<model>/<episode>/`` as with the command line.

    ``existing``: ``"keep"`` (default: an episode already under ``out`` is not run again and
    is listed in ``bad_input``), ``"overwrite"`` or ``"resume"``. ``reports``: write
    report.html per episode and index.html (about a second per episode). Raises
    ``BadInputError`` for a model that cannot be loaded; unreadable rollouts are listed in
    ``bad_input`` and the others still scored.
    """
    out = Path(out)
    result = Evaluation(out)
    jobs: list[EpisodeJob] = []
    if isinstance(model, str):
        from streameval.attach import load_python_model

        model, default_name = load_python_model(model)
        jobs += model_jobs(
            model,
            model_name or default_name,
            out,
            actions=actions,
            seconds_per_key=seconds_per_key,
            fps=fps,
            record=record,
        )
    elif model is not None:
        name = model_name or type(model).__name__
        jobs += model_jobs(
            model,
            name,
            out,
            actions=actions,
            seconds_per_key=seconds_per_key,
            fps=fps,
            record=record,
        )
    if rollouts:
        jobs += _rollout_jobs([Path(p) for p in rollouts], out, fps, result)
    jobs, result.skipped, kept = apply_existing_policy(jobs, existing)
    result.bad_input += kept
    report: JobsReport = await run_jobs(
        jobs, config or PipelineConfig(), [*observers, ResultsLog(out / RESULTS_LOG)]
    )
    result.outcomes = report.outcomes
    result.bad_input += report.bad_input
    if reports and result.outcomes:
        from streameval.report.cli import write_reports

        dirs = [o.results_dir for o in result.outcomes if o.results_dir is not None]
        await asyncio.to_thread(write_reports, dirs, out)
    return result


def _rollout_jobs(
    paths: list[Path], out: Path, pace: float | None, result: Evaluation
) -> list[EpisodeJob]:
    from streameval.replay import ReplaySource, open_rollouts
    from streameval.replay.rollout import Rollout

    rollouts, errors = open_rollouts(paths)
    result.bad_input += [str(e) for e in errors]
    jobs = []
    for rollout in rollouts:
        if rollout.sidecars is not None:  # scored without them; the metrics say why
            result.input_problems += [str(p) for p in rollout.sidecars.problems]

        def open_source(rollout: Rollout = rollout) -> ReplaySource:
            return ReplaySource(rollout, pace=pace)

        try:
            results_dir = episode_dir(out, rollout.model, rollout.episode)
        except BadInputError as exc:  # a link inside ``out`` leads elsewhere: this one only
            result.bad_input.append(str(exc))
            continue
        jobs.append(EpisodeJob(rollout.episode, open_source, results_dir))
    return jobs


def evaluate(model: Any = None, **options: Any) -> Evaluation:
    """``aevaluate`` for code without ``await``; safe inside a running event loop (Jupyter):
    the evaluation then gets its own loop in a helper thread and this call waits for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(model, **options))
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streameval") as pool:
        return pool.submit(asyncio.run, aevaluate(model, **options)).result()
