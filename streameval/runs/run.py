"""The one road from a run's specification to its results: ``await arun(spec)``, or
``run(spec)`` without ``await``.

Every entry takes it — ``streameval demo``/``attach``/``replay`` and
``streameval.evaluate``/``aevaluate`` build a ``RunSpec`` (``runs.spec``) and call it:

1. the spec's checks, and ``out`` checked (folders it creates are taken away again if the
   run writes nothing into them);
2. the evidence's inputs (``repeat``, the claim or the profile's ``[claim]``), then the jobs
   (``runs.spec_jobs``), the ``stop_when`` monitor, the repeats and the existing-results
   policy;
3. the jobs run: on Ray (``ray``: one episode per task), or here, driven by a driver
   with the results log, the evidence's observers, the MQTT scores publisher and the stop
   rule, SIGTERM cancelling the run as Ctrl-C does (the episode in progress written
   incomplete, ``runs.interrupts``);
4. the stop rule's record, the evidence (``evidence.json``), the reports and the ledger.

How episodes are shown while they run is the caller's: a driver (``QuietDriver`` or a
subclass) is told what was refused before anything runs (``announce``) and runs the episodes
(``drive``); the command line's prints progress or runs the dashboard, ``QuietDriver`` (the
Python API's) shows nothing. So
nothing here needs the command line or the dashboard.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.inputs.paths import check_output_dir, missing_dirs, remove_if_empty
from streameval.results.results_log import RESULTS_LOG, ResultsLog
from streameval.runs.existing import apply_existing_policy
from streameval.runs.interrupts import SigtermCancels
from streameval.runs.jobs import EpisodeJob, JobsReport, run_jobs
from streameval.runs.spec import InProcessModel, RunSpec, Servers
from streameval.runs.spec_jobs import spec_jobs

if TYPE_CHECKING:
    from streameval.results.ledger import RunInputs
    from streameval.runs.evidence import RunEvidence
    from streameval.runs.stop_when import StopMonitor
    from streameval.scale.ray_batch import BatchReport


@dataclass
class Refused:
    """What the run found before any episode: inputs refused (``bad_input``), defects of
    inputs that still run (``input_problems``: an unusable sidecar) and episodes skipped
    by the existing-results policy (one line each)."""

    bad_input: list[str] = field(default_factory=list)
    input_problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass
class Episodes:
    """What a driver runs: the jobs, the run's backends and observers, the stop rule (asked
    before each job), how many servers share a case set (``runs.servers``) and the run's
    SIGTERM handler (a driver that stops runs its own way redirects it)."""

    jobs: list[EpisodeJob]
    config: PipelineConfig
    observers: list[EpisodeObserver]
    stop: StopMonitor | None = None
    servers: int = 1
    max_sessions: int | None = None
    sigterm: SigtermCancels | None = None


async def run_episodes(
    episodes: Episodes, shown: list[EpisodeObserver] | None = None
) -> JobsReport:
    """The jobs one after the other, or side by side over several servers, with ``shown``
    (a driver's progress display) told first."""
    observers = [*(shown or []), *episodes.observers]
    stop = None if episodes.stop is None else episodes.stop.check
    if episodes.servers > 1:
        from streameval.runs.servers import run_jobs_on_servers

        return await run_jobs_on_servers(
            episodes.jobs,
            episodes.servers,
            episodes.config,
            observers,
            max_sessions=episodes.max_sessions,
            stop=stop,
        )
    return await run_jobs(episodes.jobs, episodes.config, observers, stop)


class QuietDriver:
    """Runs the episodes and shows nothing (the Python API's). A presentation subclasses it:
    ``announce`` is told what was refused before anything runs, ``drive`` runs them."""

    def announce(self, refused: Refused) -> None:
        """Before any episode (and before a Ray batch)."""

    async def drive(self, episodes: Episodes) -> JobsReport:
        return await run_episodes(episodes)


@dataclass
class RunResult:
    """What a run did. ``report``: the episodes run (their outcomes, the bad input met while
    running, whether the user stopped the run); ``refused``: what was found before;
    ``evidence``: the ledger's hardware, repeats and claim blocks, with one line each in
    ``evidence_lines``; ``rule_lines``: what the stop rule decided; ``report_warnings``:
    what the reports could not show; ``ray``: the batch, when it ran on Ray."""

    out: Path
    report: JobsReport = field(default_factory=JobsReport)
    refused: Refused = field(default_factory=Refused)
    evidence: dict[str, Any] = field(default_factory=dict)
    evidence_lines: list[str] = field(default_factory=list)
    rule_lines: list[str] = field(default_factory=list)
    report_warnings: list[str] = field(default_factory=list)
    ray: BatchReport | None = None

    @property
    def outcomes(self) -> list[EpisodeOutcome]:
        return self.report.outcomes


async def arun(spec: RunSpec, driver: QuietDriver | None = None) -> RunResult:
    """Carry out ``spec`` (module docstring); ``driver`` shows it (default: nothing).
    Bad input found before the first episode raises ``BadInputError``; a cancelled run
    (Ctrl-C, SIGTERM, a cancelled task) finalizes the episode in progress as incomplete and
    re-raises."""
    with _out_folder(spec):
        plan = _prepare(spec, driver or QuietDriver())
        if spec.ray is not None:
            _on_ray(plan)  # Ray's driver is set up on this thread (it wants the main one)
        else:
            await _run_episodes(plan)
            await asyncio.to_thread(_conclude, plan)
        return plan.result


def run(spec: RunSpec, driver: QuietDriver | None = None) -> RunResult:
    """``arun`` for code without ``await`` (the command line's): the same steps, with only
    the episodes on an event loop — so Ctrl-C while a model loads stops at once, as before
    any loop runs. Inside a running event loop (Jupyter) the run takes a helper thread
    (``asyncio.run`` refuses to nest; SIGTERM is then the process's own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(spec, driver or QuietDriver())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streameval") as pool:
        return pool.submit(_run, spec, driver or QuietDriver()).result()


def _run(spec: RunSpec, driver: QuietDriver) -> RunResult:
    with _out_folder(spec):
        plan = _prepare(spec, driver)
        if spec.ray is not None:
            _on_ray(plan)
        else:
            asyncio.run(_run_episodes(plan))
            _conclude(plan)
        return plan.result


@contextlib.contextmanager
def _out_folder(spec: RunSpec) -> Iterator[None]:
    """The spec's checks and ``out``'s, first; folders ``out`` needed created are taken away
    again if the run wrote nothing into them (bad input)."""
    spec.check()
    created = missing_dirs(spec.out)
    check_output_dir(spec.out, spec.name("out"))
    try:
        yield
    finally:
        remove_if_empty(created)


@dataclass
class _Plan:
    """A run prepared: its jobs and what gathers around them, up to the first episode."""

    spec: RunSpec
    driver: QuietDriver
    result: RunResult
    jobs: list[EpisodeJob]
    inputs: RunInputs
    evidence: RunEvidence
    monitor: StopMonitor | None
    results_log: ResultsLog


def _prepare(spec: RunSpec, driver: QuietDriver) -> _Plan:
    """Steps 2 (module docstring): everything that needs no event loop, before the first
    episode; what was refused is announced."""
    result = RunResult(spec.out)
    evidence = run_evidence(spec)  # a bad claim: before any model is built
    before = JobsReport()
    jobs = spec_jobs(spec, before)
    monitor = stop_monitor(spec, jobs)
    if evidence.repeat > 1:
        from streameval.runs.repeats import repeat_jobs

        jobs = repeat_jobs(jobs, spec.out, evidence.repeat, spec.record)
    jobs, skipped, kept = apply_existing_policy(jobs, spec.existing)
    result.refused = Refused([*before.bad_input, *kept], before.input_problems, skipped)
    inputs = ledger_inputs(spec, jobs)
    driver.announce(result.refused)
    results_log = ResultsLog(spec.out / RESULTS_LOG)
    return _Plan(spec, driver, result, jobs, inputs, evidence, monitor, results_log)


async def _run_episodes(plan: _Plan) -> None:
    """The episodes, driven, with the run's observers; the stop rule's record after them."""
    spec, monitor, evidence = plan.spec, plan.monitor, plan.evidence
    observers: list[EpisodeObserver] = [
        *spec.observers,
        plan.results_log,
        *evidence.start().observers,
    ]
    publisher = None
    if spec.publish_mqtt:
        from streameval.transports.mqtt.scores_publisher import MqttScoresPublisher

        publisher = MqttScoresPublisher(
            spec.publish_mqtt, stop=None if monitor is None else monitor.wire_state
        )
        observers.append(publisher)
    servers = spec.model if isinstance(spec.model, Servers) else None
    episodes = Episodes(
        plan.jobs,
        spec.config,
        observers,
        monitor,
        servers=1 if servers is None else len(servers.urls),
        max_sessions=None if servers is None else servers.max_sessions,
    )
    try:
        plan.result.report = await _drive(spec, plan.driver, episodes, publisher)
    except BaseException:
        evidence.finish([])  # the GPU sampler stops with the run, however it ends
        raise
    if monitor is not None:
        plan.result.rule_lines = await asyncio.to_thread(monitor.finish)


async def _drive(
    spec: RunSpec, driver: QuietDriver, episodes: Episodes, publisher: Any
) -> JobsReport:
    """The driver runs the episodes (SIGTERM cancelling them, with ``spec.sigterm``); the
    MQTT publisher sends its last messages however they end."""
    try:
        if not spec.sigterm:
            return await driver.drive(episodes)
        with SigtermCancels() as sigterm:
            episodes.sigterm = sigterm
            return await driver.drive(episodes)
    finally:
        if publisher is not None:
            await publisher.close()


def _conclude(plan: _Plan) -> None:
    """After the episodes: the evidence, the reports, then the ledger (which hashes them)."""
    spec, result, evidence = plan.spec, plan.result, plan.evidence
    outcomes = result.outcomes
    written = [o.results_dir for o in outcomes if o.results_dir is not None]
    result.evidence_lines = evidence.finish(outcomes)
    result.evidence = dict(evidence.sections)
    if written and spec.reports:
        from streameval.report.writer import write_reports

        result.report_warnings = write_reports(written, spec.out)
    if written:
        from streameval.runs.evidence import write_run_ledger

        write_run_ledger(spec.out, plan.inputs, outcomes, evidence.sections)


def _on_ray(plan: _Plan) -> None:
    """The jobs' replay tasks on Ray (their progress on stderr); the ledger written here, on
    the driver, with where each episode ran."""
    from streameval.scale.ray_batch import RayOptions, run_replay_batch

    spec, result = plan.spec, plan.result
    assert spec.ray is not None
    options = RayOptions(address=spec.ray.address, gpus_per_episode=spec.ray.gpus_per_episode)
    tasks = [job.task for job in plan.jobs if job.task is not None]
    observers = [*spec.observers, plan.results_log]
    batch = run_replay_batch(tasks, spec.config, options, observers)
    result.ray = batch
    result.report.outcomes = [r.outcome for r in batch.reports if r.outcome is not None]
    if any(o.results_dir is not None for o in result.outcomes):
        from streameval.runs.evidence import write_run_ledger

        workers = sorted({str(r.worker) for r in batch.reports if r.worker})
        write_run_ledger(spec.out, plan.inputs, result.outcomes, {"ray": {"workers": workers}})


def run_evidence(spec: RunSpec) -> RunEvidence:
    """The run's evidence gatherer: ``repeat`` (checked with the spec) and the claim, from
    ``claim`` or else the profile's ``[claim]``."""
    from streameval.inputs.claims import parse_claim
    from streameval.runs.evidence import RunEvidence

    claim = None
    if spec.claim:
        claim = parse_claim(spec.claim, spec.name("claim"))
    elif spec.profile:
        from streameval.transports.profiles import load_profile

        profile = load_profile(spec.profile)
        if profile.claim is not None:
            claim = parse_claim(profile.claim, f"{profile.path}: claim")
    return RunEvidence(spec.out, claim, spec.repeat)


def ledger_inputs(spec: RunSpec, jobs: list[EpisodeJob]) -> RunInputs:
    """What the ledger says this run was given: the command (argv as typed, options as
    given) and the inputs its jobs name (``runs.evidence``)."""
    from streameval.runs.evidence import run_inputs

    model: Any = None
    if isinstance(spec.model, InProcessModel):
        model = spec.model.model
    elif isinstance(spec.model, Servers):
        model = spec.model.urls[0]
    command = spec.command
    return run_inputs(
        command.name,
        jobs,
        argv=None if command.argv is None else list(command.argv),
        options=command.options,
        profile=spec.profile,
        model=model,
    )


def stop_monitor(spec: RunSpec, jobs: list[EpisodeJob]) -> StopMonitor | None:
    """The ``stop_when`` monitor of a case run (None without a rule); a rule that can never
    be met, or one without cases, is bad input here, before any case."""
    from streameval.metrics.stop_rule import DEFAULT_MARGIN

    rule = spec.stop_when
    if rule is None:
        return None
    from streameval.runs.cases import CaseManifestLine
    from streameval.runs.stop_when import stop_monitor as monitor_of

    manifests = [o for job in jobs for o in job.observers if isinstance(o, CaseManifestLine)]
    if not manifests:
        raise BadInputError(spec.name("stop_when"), "no case to run")
    return monitor_of(
        rule.text,
        DEFAULT_MARGIN if rule.margin is None else rule.margin,
        manifests[0].path.parent,
        [m.case.key for m in manifests],
        sorted({m.drive.suite for m in manifests}),
        quality=bool(spec.config.quality),
    )
