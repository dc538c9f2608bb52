"""What ``demo``, ``attach`` and ``replay`` share: their options as a run specification
(``runs.spec``), the run (``runs.run.run``, the one road the Python API takes too) shown with
the dashboard or plain progress, then the one-line summary and the exit status.

Several inputs in one command: each is tried; the bad ones are reported and the rest still
scored.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from streameval.cli.console import ProgressPrinter
from streameval.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from streameval.cli.options import existing_policy, pipeline_config
from streameval.core.observers import EpisodeOutcome
from streameval.errors import BadInputError
from streameval.metrics.stop_rule import OPTION
from streameval.runs.builders import RecordMode
from streameval.runs.jobs import JobsReport
from streameval.runs.run import Episodes, QuietDriver, Refused, RunResult, run, run_episodes
from streameval.runs.spec import (
    Command,
    DemoWorld,
    Drive,
    InProcessModel,
    RayBatch,
    Rollouts,
    RunSpec,
    Servers,
    Start,
    StopWhen,
)

ARGV = "typed_argv"  # the namespace attribute main() keeps the command line in (the ledger's)


def use_dashboard(args: argparse.Namespace) -> bool:
    return not args.no_tui and sys.stdout.isatty() and sys.stdin.isatty()


def command_record(args: argparse.Namespace) -> Command:
    """What the ledger says this command was given: its argv as typed and its options."""
    options = {k: v for k, v in vars(args).items() if k != ARGV}
    argv = vars(args).get(ARGV)  # set by main(); a test may call a command's run directly
    return Command(str(args.command), None if argv is None else tuple(argv), options)


def spec_of(
    args: argparse.Namespace,
    *,
    model: DemoWorld | InProcessModel | Servers | None = None,
    rollouts: Rollouts | None = None,
    drive: Drive | None = None,
    start: Start | None = None,
    model_name: str | None = None,
    record: RecordMode = "off",
    repeat: int = 1,
    claim: str | None = None,
    profile: str | None = None,
    stop_when: StopWhen | None = None,
    ray: RayBatch | None = None,
) -> RunSpec:
    """A command's run: the options every evaluating command has (output policy, backends,
    live publishing, reports) from ``args``, the rest as the command gives them."""
    return RunSpec(
        out=args.out,
        model=model,
        rollouts=rollouts,
        drive=drive or Drive(),
        start=start,
        model_name=model_name,
        existing=existing_policy(args),
        record=record,
        reports=not args.no_report,
        config=pipeline_config(args),
        publish_mqtt=args.publish_mqtt,
        stop_when=stop_when,
        ray=ray,
        repeat=repeat,
        claim=claim,
        profile=profile,
        command=command_record(args),
        flags=True,
    )


def stop_rule(args: argparse.Namespace) -> StopWhen | None:
    """``--stop-when RULE [--margin POINTS]`` (``--margin`` alone is bad input)."""
    if args.stop_when is None:
        if args.margin is not None:
            raise BadInputError("--margin", f"only with {OPTION} vs=DIR")
        return None
    return StopWhen(args.stop_when, args.margin)


@dataclass
class ConsoleDriver(QuietDriver):
    """The command line's view of a run: refusals as ``error:`` lines before anything runs,
    then the dashboard (a terminal, one server) or progress bars (a terminal), plain
    progress lines (a pipe) or nothing (``-q``)."""

    quiet: bool = False
    dashboard: bool = False

    def announce(self, refused: Refused) -> None:
        for message in [*refused.bad_input, *refused.input_problems]:
            print(f"error: {message}", file=sys.stderr)
        for message in refused.skipped:
            print(message, file=sys.stderr)

    async def drive(self, episodes: Episodes) -> JobsReport:
        if episodes.servers > 1 and self.dashboard:
            # the dashboard follows one episode at a time; several at once run headless
            print(f"{episodes.servers} servers: running without the dashboard", file=sys.stderr)
        elif self.dashboard:
            from streameval.tui import arun_dashboard

            return await arun_dashboard(
                episodes.jobs,
                episodes.config,
                episodes.observers,
                stop=episodes.stop,
                sigterm=episodes.sigterm,
            )
        if self.quiet:
            return await run_episodes(episodes)
        if not sys.stdout.isatty():
            return await run_episodes(episodes, [ProgressPrinter()])
        from streameval.cli.console import ProgressBars

        with ProgressBars(len(episodes.jobs)) as bars:
            return await run_episodes(episodes, [bars])


def run_spec(args: argparse.Namespace, spec: RunSpec) -> int:
    """Run ``spec`` on the one road, shown as ``args`` ask (``-q``, ``--no-tui``), and say
    how it went: the lines, the one-line summary with the results path, the exit status."""
    driver = ConsoleDriver(quiet=args.quiet, dashboard=use_dashboard(args))
    result = run(spec, driver)
    if result.ray is not None:
        return _ray_summary(spec, result)
    return _finish(spec, result)


def _ray_summary(spec: RunSpec, result: RunResult) -> int:
    """A Ray batch's summary and exit status, with the local run's rules (failures: 1)."""
    batch = result.ray
    assert batch is not None
    done = sum(1 for r in batch.reports if r.outcome is not None and r.outcome.complete)
    print(
        f"{done} complete, {len(batch.incomplete)} incomplete, {len(batch.skipped)} skipped, "
        f"{len(batch.failures) + len(batch.bad_input)} failed; results in {spec.out}/",
        file=sys.stderr,
    )
    from streameval.cli.ray import batch_exit_status

    refused = result.refused
    return batch_exit_status(batch, len(refused.bad_input) + len(refused.input_problems))


def _finish(spec: RunSpec, result: RunResult) -> int:
    """Report what went wrong, a one-line summary with the results path, and the exit code."""
    from streameval.engine.keys_contradicted import summary_lines as contradiction_lines
    from streameval.engine.keys_ignored import MESSAGE as KEYS_IGNORED

    run, refused, out = result.report, result.refused, spec.out
    for line in result.rule_lines:
        print(line, file=sys.stderr)
    for warning in result.report_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in result.evidence_lines:
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
    failed = len(refused.bad_input) + len(run.bad_input)
    parts = [f"{complete} complete", f"{len(incomplete)} incomplete"]
    parts += [f"{len(refused.skipped)} skipped"] if refused.skipped else []
    parts += [f"{failed} not run (bad input)"] if failed else []
    if refused.input_problems:
        parts += [f"{len(refused.input_problems)} unusable sidecar(s) left out"]
    look = (
        f"open {out / 'index.html'}, or: streameval table {out} --include-all"
        if spec.reports
        else f"streameval table {out} --include-all; reports: streameval report {out}"
    )
    print(f"{', '.join(parts)}; results in {out}/ ({look})", file=sys.stderr)
    if run.stopped:
        return EXIT_INTERRUPTED
    if refused.bad_input or refused.input_problems or run.bad_input or incomplete:
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
