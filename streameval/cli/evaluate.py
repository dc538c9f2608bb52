"""What ``demo``, ``attach`` and ``replay`` share: running their jobs with the dashboard or
plain progress, then the reports, the one-line summary and the exit status.

Several inputs in one command: each is tried; the bad ones are reported and the rest still
scored.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streameval.cli.console import ProgressPrinter
from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from streameval.cli.options import existing_policy, pipeline_config
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.inputs.paths import check_output_dir, missing_dirs, remove_if_empty
from streameval.metrics.stop_rule import DEFAULT_MARGIN, OPTION
from streameval.results.ledger import RunInputs
from streameval.results.results_log import RESULTS_LOG, ResultsLog
from streameval.runs.existing import apply_existing_policy
from streameval.runs.interrupts import cancel_on_sigterm
from streameval.runs.jobs import EpisodeJob, JobsReport, StopCheck, run_jobs

if TYPE_CHECKING:
    from streameval.runs.evidence import RunEvidence
    from streameval.runs.stop_when import StopMonitor

ARGV = "typed_argv"  # the namespace attribute main() keeps the command line in (the ledger's)


def _use_dashboard(args: argparse.Namespace) -> bool:
    return not args.no_tui and sys.stdout.isatty() and sys.stdin.isatty()


def run_episodes(
    args: argparse.Namespace, build: Callable[[argparse.Namespace, JobsReport], list[EpisodeJob]]
) -> int:
    """Build the command's jobs (``build``), apply the existing-results policy, run them, and
    report. ``args.out`` is checked before a model is built or a video decoded; folders it
    needed created are taken away again if the run wrote nothing into them (bad input)."""
    created = missing_dirs(args.out)
    check_output_dir(args.out)
    try:
        return _run_episodes(args, build)
    finally:
        remove_if_empty(created)


def _run_episodes(
    args: argparse.Namespace, build: Callable[[argparse.Namespace, JobsReport], list[EpisodeJob]]
) -> int:
    report = JobsReport()
    evidence = run_evidence(args)  # a bad --claim or --repeat: before any model is built
    jobs = build(args, report)
    monitor = case_stop_monitor(args, jobs)
    if evidence.repeat > 1:
        from streameval.runs.repeats import repeat_jobs

        jobs = repeat_jobs(jobs, args.out, evidence.repeat, args.record)
    jobs, skipped, kept = apply_existing_policy(jobs, existing_policy(args))
    report.bad_input.extend(kept)
    inputs = command_inputs(args, jobs)
    for message in [*report.bad_input, *report.input_problems]:
        print(f"error: {message}", file=sys.stderr)
    for message in skipped:
        print(message, file=sys.stderr)
    config = pipeline_config(args)
    results_log = ResultsLog(args.out / RESULTS_LOG)
    if getattr(args, "ray", None) is not None:
        from streameval.cli.ray import run_ray_replay

        if getattr(args, "publish_mqtt", None):
            raise BadInputError("--publish-mqtt", "not with --ray (scores are in --out)")
        bad = len(report.bad_input) + len(report.input_problems)
        return run_ray_replay(args, jobs, config, [results_log], bad, inputs)
    extra: list[EpisodeObserver] = [*evidence.start().observers]
    publisher = None
    if args.publish_mqtt:
        from streameval.transports.mqtt.scores_publisher import MqttScoresPublisher

        publisher = MqttScoresPublisher(
            args.publish_mqtt, stop=None if monitor is None else monitor.wire_state
        )
        extra.append(publisher)
    servers = 1 + len(getattr(args, "more_urls", None) or [])
    if servers > 1 and _use_dashboard(args):
        # the dashboard follows one episode at a time; several at once run headless
        print(f"{servers} servers: running without the dashboard", file=sys.stderr)
    try:
        run_report = _run(args, jobs, config, results_log, extra, publisher, monitor, servers)
    except BaseException:
        evidence.finish([])  # the GPU sampler stops with the run, however it ends
        raise
    if monitor is not None:
        for line in monitor.finish():
            print(line, file=sys.stderr)
    return _finish(args, report, run_report, len(skipped), inputs, evidence)


def _run(
    args: argparse.Namespace,
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    results_log: ResultsLog,
    extra: list[EpisodeObserver],
    publisher: Any,
    monitor: StopMonitor | None,
    servers: int,
) -> JobsReport:
    """The jobs, in the dashboard or with plain progress."""
    if servers == 1 and _use_dashboard(args):
        from streameval.tui import run_dashboard

        return run_dashboard(
            jobs,
            config,
            [results_log, *extra],
            stop=monitor,
            closing=None if publisher is None else publisher.close,
        )
    return _run_plain(
        jobs,
        config,
        [results_log, *extra],
        args.quiet,
        publisher,
        servers=servers,
        max_sessions=getattr(args, "max_sessions", None),
        stop=None if monitor is None else monitor.check,
    )


def run_evidence(args: argparse.Namespace) -> RunEvidence:
    """The run's evidence gatherer: ``--repeat`` (checked: repeats are compared by their
    recordings) and the claim, from ``--claim`` or else the ``--profile``'s ``[claim]``."""
    from streameval.inputs.claims import OPTION as CLAIM
    from streameval.inputs.claims import parse_claim
    from streameval.runs.evidence import RunEvidence

    repeat = getattr(args, "repeat", None) or 1
    if repeat > 1 and getattr(args, "record", "off") == "off":
        raise BadInputError(
            "--repeat", "rollouts are compared by their recordings: not with --record off"
        )
    claim = None
    if getattr(args, "claim", None):
        claim = parse_claim(args.claim, CLAIM)
    elif getattr(args, "profile", None):
        from streameval.transports.profiles import load_profile

        profile = load_profile(args.profile)
        if profile.claim is not None:
            claim = parse_claim(profile.claim, f"{profile.path}: claim")
    return RunEvidence(args.out, claim, repeat)


def command_inputs(args: argparse.Namespace, jobs: list[EpisodeJob]) -> RunInputs:
    """What the ledger says this command was given: its argv as typed, its options, and the
    inputs its jobs name (``runs.evidence``)."""
    from streameval.runs.evidence import run_inputs

    options = {k: v for k, v in vars(args).items() if k != ARGV}
    return run_inputs(
        str(getattr(args, "command", "")),
        jobs,
        argv=getattr(args, ARGV, None),
        options=options,
        profile=getattr(args, "profile", None),
        model=getattr(args, "url", None),
    )


def case_stop_monitor(args: argparse.Namespace, jobs: list[EpisodeJob]) -> StopMonitor | None:
    """The ``--stop-when`` monitor of a case run (None without the option); a rule that can
    never be met, or the option without ``--cases``, is bad input here, before any case."""
    text = getattr(args, "stop_when", None)
    margin = getattr(args, "margin", None)
    if text is None:
        if margin is not None:
            raise BadInputError("--margin", f"only with {OPTION} vs=DIR")
        return None
    if getattr(args, "cases", None) is None:
        raise BadInputError(OPTION, "only with --cases (the rule is checked case by case)")
    from streameval.runs.cases import CaseManifestLine
    from streameval.runs.stop_when import stop_monitor

    manifests = [o for job in jobs for o in job.observers if isinstance(o, CaseManifestLine)]
    if not manifests:
        raise BadInputError(OPTION, "no case to run")
    return stop_monitor(
        text,
        DEFAULT_MARGIN if margin is None else margin,
        manifests[0].path.parent,
        [m.case.key for m in manifests],
        sorted({m.drive.suite for m in manifests}),
        quality=bool(getattr(args, "quality", None)),
    )


def _run_plain(
    jobs: list[EpisodeJob],
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    quiet: bool,
    publisher: Any = None,
    *,
    servers: int = 1,
    max_sessions: int | None = None,
    stop: StopCheck | None = None,
) -> JobsReport:
    """Without the dashboard: progress bars in a terminal, plain lines otherwise (-q: none).
    With several servers, their cases run side by side (``runs.servers``)."""

    async def run_all(shown: list[EpisodeObserver]) -> JobsReport:
        try:
            if servers > 1:
                from streameval.runs.servers import run_jobs_on_servers

                return await run_jobs_on_servers(
                    jobs,
                    servers,
                    config,
                    [*shown, *observers],
                    max_sessions=max_sessions,
                    stop=stop,
                )
            return await run_jobs(jobs, config, [*shown, *observers], stop)
        finally:
            if publisher is not None:
                await publisher.close()

    if quiet:
        return asyncio.run(cancel_on_sigterm(run_all([])))
    if not sys.stdout.isatty():
        return asyncio.run(cancel_on_sigterm(run_all([ProgressPrinter()])))
    from streameval.cli.console import ProgressBars

    with ProgressBars(len(jobs)) as bars:
        return asyncio.run(cancel_on_sigterm(run_all([bars])))


def _finish(
    args: argparse.Namespace,
    report: JobsReport,
    run: JobsReport,
    skipped: int,
    inputs: RunInputs,
    evidence: RunEvidence,
) -> int:
    """Report what went wrong, write the ledger, a one-line summary with the results path, and
    the exit code."""
    from streameval.engine.keys_contradicted import summary_lines as contradiction_lines
    from streameval.engine.keys_ignored import MESSAGE as KEYS_IGNORED
    from streameval.report.writer import write_reports

    written = [o.results_dir for o in run.outcomes if o.results_dir is not None]
    evidence_lines = evidence.finish(run.outcomes)
    reports = not getattr(args, "no_report", False)
    if written and reports:
        for warning in write_reports(written, args.out):
            print(f"warning: {warning}", file=sys.stderr)
    if written:
        from streameval.runs.evidence import write_run_ledger

        write_run_ledger(args.out, inputs, run.outcomes, evidence.sections)
    for line in evidence_lines:
        print(line, file=sys.stderr)
    for message in run.bad_input:
        print(f"error: {message}", file=sys.stderr)
    for outcome in run.outcomes:
        if outcome.interactivity.get("keys_ignored"):
            print(
                f"warning: {outcome.info.episode}: {KEYS_IGNORED} (no key moved the frames on "
                "its flow channel; scored as measured)",
                file=sys.stderr,
            )
    for outcome in run.outcomes:
        for line in contradiction_lines(
            outcome.info.episode, outcome.interactivity.get("keys_contradicted") or ()
        ):
            print(f"warning: {line}", file=sys.stderr)
    for outcome in run.outcomes:
        if outcome.conditioning is not None and outcome.conditioning.get("honoured") is False:
            print(f"warning: {case_line(outcome)}", file=sys.stderr)
    incomplete = [o for o in run.outcomes if not o.complete]
    if not run.stopped:
        for outcome in incomplete:
            messages = [e.message for e in outcome.errors]
            for message in messages or [f"{outcome.info.episode}: episode incomplete"]:
                print(f"error: {message}", file=sys.stderr)
    complete = len(run.outcomes) - len(incomplete)
    failed = len(report.bad_input) + len(run.bad_input)
    parts = [f"{complete} complete", f"{len(incomplete)} incomplete"]
    parts += [f"{skipped} skipped"] if skipped else []
    parts += [f"{failed} not run (bad input)"] if failed else []
    if report.input_problems:
        parts += [f"{len(report.input_problems)} unusable sidecar(s) left out"]
    look = (
        f"open {args.out / 'index.html'}, or: streameval table {args.out} --include-all"
        if reports
        else f"streameval table {args.out} --include-all; reports: streameval report {args.out}"
    )
    print(f"{', '.join(parts)}; results in {args.out}/ ({look})", file=sys.stderr)
    if run.stopped:
        return EXIT_INTERRUPTED
    if report.bad_input or report.input_problems or run.bad_input or incomplete:
        return EXIT_BAD_INPUT
    return EXIT_OK


def case_line(outcome: EpisodeOutcome) -> str:
    """The summary line of a case whose first frames did not start from its image."""
    from streameval.cases.episode import NOT_HONOURED

    case = outcome.case or {}
    conditioning = outcome.conditioning or {}
    name = f"{case.get('set')}/{outcome.info.episode}" if case.get("set") else outcome.info.episode
    similarity = conditioning.get("first_frame_similarity")
    shown = f"{similarity:.2f}" if isinstance(similarity, float) else "n/a"
    return f"{name}: {NOT_HONOURED} (first-frame similarity {shown}; scored as measured)"
