"""The evidence a run leaves: what it was given, gathered from its jobs, and the ledger
written once its reports are (``results.ledger``), on the command line and the Python API alike.

Inputs are named by what the jobs carry (each case's image, each rollout's files), by the
profile the options name, and by the suites the episodes drove; the command line's argv and
options are kept as typed, so ``streameval compare`` can put two runs' configurations side by
side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.core.atomic import write_json_atomic
from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.inputs.claims import Claim
from streameval.results.ledger import EVIDENCE_FILE, RunInputs, build_ledger, write_ledger
from streameval.runs.hardware import GpuMonitor, ServerFigures, summary_lines
from streameval.runs.jobs import EpisodeJob


def profile_file(spec: str | None) -> Path | None:
    """The TOML file behind a ``--profile`` value (a built-in's own file, or the path)."""
    if not spec:
        return None
    if spec.endswith(".toml") or "/" in spec or "\\" in spec:
        return Path(spec)
    from streameval.transports.profiles import PROFILES

    try:
        return Path(PROFILES.get(spec))
    except Exception:  # an unknown name was refused before any job ran; nothing to hash
        return None


def model_code_file(model: Any) -> tuple[str, Path] | None:
    """``(module, file)`` of an in-process model's code: the ``MODULE`` of a
    ``python:MODULE:FACTORY`` string, or the module of a model object's class (as loaded: the
    file that ran). None for a network URL or a module with no file."""
    import sys

    if isinstance(model, str):
        if not model.startswith("python:"):
            return None
        module = model.split(":")[1] if model.count(":") >= 2 else ""
    else:
        module = type(model).__module__
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    return (module, Path(path)) if isinstance(path, str) else None


def suite_definitions(suites: Iterable[str]) -> dict[str, Any]:
    """Each suite driven, by what defines it: WorldMark's action rows, memory_loop's
    trajectories (a change of either is a change of input)."""
    from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE, TRAJECTORIES
    from streameval.protocol.suites import WORLDMARK, WORLDMARK_SUITE

    known: dict[str, Any] = {
        WORLDMARK_SUITE: {str(k): v for k, v in WORLDMARK.items()},
        MEMORY_LOOP_SUITE: {k: list(v) for k, v in TRAJECTORIES.items()},
    }
    return {name: known.get(name, name) for name in sorted(set(suites))}


def run_inputs(
    command: str,
    jobs: Sequence[EpisodeJob],
    *,
    argv: list[str] | None = None,
    options: Mapping[str, Any] | None = None,
    profile: str | None = None,
    suites: Iterable[str] = (),
    model: Any = None,
) -> RunInputs:
    """A run's inputs from its jobs: case images (their sha256 was taken when the case was
    read), rollouts' files (replay), the profile file, an in-process model's code file and
    the suites."""
    from streameval.results.ledger import plain_options

    inputs = RunInputs(command, argv, plain_options(options or {}))
    code = model_code_file(model) if model is not None else None
    if code is not None:
        inputs.files[f"model code {code[0]}"] = code[1]
    for job in jobs:
        case = job.case
        if case is not None:
            label = f"case image {case.key}"
            if case.image_path is not None:
                inputs.files[label] = Path(case.image_path)
            if case.image_sha256 is not None:
                inputs.digests[label] = case.image_sha256
        task = job.task
        if task is not None:
            rollout = Path(task.rollout)
            files = (
                sorted(p for p in rollout.rglob("*") if p.is_file())
                if rollout.is_dir()
                else [rollout]
            )
            for path in files:
                inputs.files[f"rollout {path}"] = path
    profile_path = profile_file(profile)
    if profile_path is not None:
        inputs.files["profile"] = profile_path
    inputs.suites = suite_definitions(suites)
    return inputs


def write_run_ledger(
    out: Path,
    inputs: RunInputs,
    outcomes: Sequence[EpisodeOutcome],
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``out/ledger.json`` for a run that produced ``outcomes`` (after its reports:
    they are outputs too). The suites of the episodes run are added to the inputs."""
    if not inputs.suites:
        inputs.suites = suite_definitions(o.info.suite for o in outcomes)
    episodes = [o.results_dir for o in outcomes if o.results_dir is not None]
    return write_ledger(out, build_ledger(out, inputs, episodes, extra))


@dataclass
class RunEvidence:
    """What a run gathers beside its scores, from before its first job to after its last:
    the GPUs (NVML) and a server's own figures while it runs, then the claim's verdict and
    the repeats' identity. ``start`` before the jobs, ``observers`` to the jobs, ``finish``
    after them (before the reports: its lines go with the run's summary)."""

    out: Path
    claim: Claim | None = None
    repeat: int = 1
    nvml: Any = None  # a pynvml stand-in (the tests); None: the real one where installed
    monitor: GpuMonitor | None = None
    server: ServerFigures = field(default_factory=ServerFigures)
    sections: dict[str, Any] = field(default_factory=dict)

    def start(self) -> RunEvidence:
        self.monitor = GpuMonitor(nvml=self.nvml).start()
        return self

    @property
    def observers(self) -> list[EpisodeObserver]:
        return [self.server]

    def finish(self, outcomes: Sequence[EpisodeOutcome]) -> list[str]:
        """Stop measuring; the ledger's sections (``hardware``, ``claim``, ``repeats``) and
        the lines the run's summary prints for them."""
        gpu = self.monitor.stop() if self.monitor is not None else {"measured": False}
        hardware = {"gpu": gpu, "server": self.server.summary()}
        self.sections["hardware"] = hardware
        lines = summary_lines(hardware) if gpu.get("measured") or self.server.values else []
        if self.repeat > 1:
            from streameval.runs.repeats import identities, repeats_block

            found = identities(self.out, outcomes, self.repeat)
            self.sections["repeats"] = repeats_block(found, self.repeat)
            lines += [f"same-seed identity: {i.line()}" for i in found]
        if self.claim is not None:
            from streameval.results.claims import claim_verdict, measured_from_run, verdict_line
            from streameval.runs.repeats import is_repeat

            firsts = [
                o.results_dir
                for o in outcomes
                if o.results_dir is not None and not is_repeat(self.out, o.results_dir)
            ]
            block = claim_verdict(self.claim, measured_from_run(firsts, hardware))
            self.sections["claim"] = block
            lines.append(verdict_line(block))
        if outcomes:  # the reports show it; a run that ran nothing writes nothing
            write_json_atomic(self.out / EVIDENCE_FILE, self.sections)
        return lines
