"""The jobs of a run specification: its model (the procedural world, an in-process model, a
server or several) on its drive (a suite or a case set), and its rollouts.

The one place a ``RunSpec``'s sources become ``EpisodeJob``s, with the builders of
``runs.builders``, ``runs.cases`` and ``runs.memory_loop``; every bad input is one
``BadInputError`` named as the caller names it (``RunSpec.name``), raised before the first
episode (a case set is read and checked before its model is built or its server reached).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streameval.errors import BadInputError
from streameval.protocol.suites import SOAK_SUITE
from streameval.runs.builders import ALL_ACTIONS, demo_jobs, model_jobs, network_jobs, rollout_jobs
from streameval.runs.jobs import EpisodeJob, JobsReport
from streameval.runs.spec import DemoWorld, InProcessModel, RunSpec, Servers

if TYPE_CHECKING:
    from streameval.cases.model import CaseSet
    from streameval.runs.cases import CaseSelection

DEMO_ACTIONS = (9, 14, 12)  # WR, ADA, LRL: a forward-turn, a strafe and a turn episode


def spec_jobs(spec: RunSpec, report: JobsReport) -> list[EpisodeJob]:
    """Every job of ``spec``: its model's, then its rollouts' (unreadable rollouts and
    unusable sidecars go to ``report``; the others are still scored)."""
    jobs: list[EpisodeJob] = []
    model = spec.model
    if isinstance(model, DemoWorld):
        jobs += _demo(spec, model)
    elif isinstance(model, InProcessModel):
        jobs += _in_process(spec, model)
    elif isinstance(model, Servers):
        jobs += _servers(spec, model)
    if spec.rollouts is not None:
        rollouts = spec.rollouts
        jobs += rollout_jobs(
            list(rollouts.paths), spec.out, report, fps=rollouts.fps, realtime=rollouts.realtime
        )
    return jobs


def _soak(spec: RunSpec) -> str:
    return f"{spec.name('suite')} soak"


def _demo(spec: RunSpec, world: DemoWorld) -> list[EpisodeJob]:
    drive = spec.drive
    if drive.cases is not None:  # the procedural world on each case, started from its image
        from streameval.runs.cases import demo_case_jobs

        cases = drive.cases
        return demo_case_jobs(
            spec.out,
            cases.load(),
            defect=world.defect,
            world_seed=world.seed,
            seed=cases.seed,
            seconds_per_key=drive.seconds_per_key,
            loops=drive.loops,
            record=spec.record,
            selection=cases.record(),
        )
    if drive.suite == SOAK_SUITE:
        raise BadInputError(_soak(spec), "needs a served model (attach URL): the demo "
                            "world is stepped in process, it plays no stream")  # fmt: skip
    return demo_jobs(
        spec.out,
        defect=world.defect,
        seed=world.seed,
        actions=DEMO_ACTIONS if drive.actions is None else drive.actions,
        seconds_per_key=drive.seconds_per_key,
        suite=drive.suite,
        loops=drive.loops,
        record=spec.record,
    )


def _check_start(spec: RunSpec, network: bool) -> None:
    """The start options (``--image``, ``--prompt``, ``--intrinsics``) where they mean
    something, and a soak where it can run."""
    given = [spec.name(n) for n in (spec.start.given() if spec.start is not None else [])]
    if spec.drive.cases is not None:
        if spec.drive.suite == SOAK_SUITE:
            raise BadInputError(_soak(spec), "is one continuous episode: not with "
                                f"{spec.name('cases')}")  # fmt: skip
        if given:
            raise BadInputError(
                given[0], f"not with {spec.name('cases')} (each case has its own start)"
            )
        return
    if network:
        return
    if given:
        raise BadInputError(
            given[0],
            f"is for network servers; give an in-process model a start with {spec.name('cases')}",
        )
    if spec.drive.suite == SOAK_SUITE:
        raise BadInputError(_soak(spec), "needs a served model (a network URL): the "
                            "real-time verdict judges a stream the model plays")  # fmt: skip


def _in_process(spec: RunSpec, source: InProcessModel) -> list[EpisodeJob]:
    """An object with ``step(key)`` or ``python:MODULE:FACTORY``; a case set is read and
    checked before the model is built."""
    from streameval.runs.python_model import load_python_model
    from streameval.runs.python_model import model_name as own_name
    from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S

    _check_start(spec, network=False)
    drive = spec.drive
    case_set = drive.cases.load() if drive.cases is not None else None
    timeout = DEFAULT_STEP_TIMEOUT_S if source.step_timeout is None else source.step_timeout
    origin = source.model if isinstance(source.model, str) else None
    if isinstance(source.model, str):
        model, loaded_name = load_python_model(source.model, source.app_dir, timeout, source.python)
    else:
        model, loaded_name = source.model, own_name(source.model)
    name = spec.model_name or loaded_name
    if drive.cases is not None and case_set is not None:
        from streameval.runs.cases import model_case_jobs

        return model_case_jobs(
            model,
            name,
            spec.out,
            case_set,
            seed=drive.cases.seed,
            seconds_per_key=drive.seconds_per_key,
            loops=drive.loops,
            fps=drive.fps,
            record=spec.record,
            step_timeout=timeout,
            origin=origin or name,
            selection=drive.cases.record(),
        )
    return model_jobs(
        model,
        name,
        spec.out,
        actions=ALL_ACTIONS if drive.actions is None else drive.actions,
        seconds_per_key=drive.seconds_per_key,
        fps=drive.fps,
        record=spec.record,
        suite=drive.suite,
        loops=drive.loops,
        step_timeout=timeout,
        origin=origin,
    )


def _servers(spec: RunSpec, servers: Servers) -> list[EpisodeJob]:
    _check_start(spec, network=True)
    if spec.drive.cases is not None:
        cases = spec.drive.cases
        return _server_cases(spec, servers, cases, cases.load())
    return _server_suite(spec, servers)


def _server_cases(
    spec: RunSpec, servers: Servers, cases: CaseSelection, case_set: CaseSet
) -> list[EpisodeJob]:
    """Every case a session on one of the servers, started from the case as the profile
    sends it; every server's profile and conditioning checked against every case before the
    first runs."""
    from streameval.runs.builders import network_model_name
    from streameval.runs.cases import OpenForCase, case_jobs
    from streameval.runs.servers import ServerChoice
    from streameval.transports.urls import check_attach_conditioning, network_case_opener

    options = servers.options
    check_attach_conditioning(servers.urls, options, case_set.cases)
    openers = [network_case_opener(url, options, spec.model_name) for url in servers.urls]
    open_for_case: OpenForCase = openers[0] if len(openers) == 1 else ServerChoice(openers)
    drive = spec.drive
    return case_jobs(
        case_set,
        spec.out,
        spec.model_name or network_model_name(servers.urls[0]),
        open_for_case,
        cases.seed,
        seconds_per_key=drive.seconds_per_key,
        loops=drive.loops,
        fps=drive.fps,
        fps_asked=drive.fps,
        record=spec.record,
        selection=cases.record(),
        server_paths=options.server_paths,
    )


def _server_suite(spec: RunSpec, servers: Servers) -> list[EpisodeJob]:
    """A suite on the server: the start (``Start``) read and checked, and a server that
    needs one refused without it, before anything connects."""
    from streameval.runs.attach_start import attach_start
    from streameval.transports.urls import check_attach_conditioning, refuse_without_start

    options = servers.options
    given = spec.start
    start = attach_start(
        None if given is None else given.image,
        None if given is None else given.prompt,
        None if given is None else given.intrinsics,
        options.server_paths,
    )
    drive = spec.drive
    jobs = network_jobs(
        servers.urls[0],
        spec.out,
        options,
        actions=ALL_ACTIONS if drive.actions is None else drive.actions,
        suite=drive.suite,
        loops=drive.loops,
        fps=drive.fps,
        model_name=spec.model_name,
        record=spec.record,
        start=start,
        soak_minutes=drive.soak_minutes,
    )
    if servers.refuse_without_start and (start is None or not start.has_image):
        refuse_without_start(servers.urls, options)  # after the profile's own checks
    if start is not None:
        check_attach_conditioning(servers.urls, options, [start.case])
    return jobs
