"""Several servers of one model (``runs/servers.py``): each job runs once, one per server at a
time, handed out in order as servers free up, at most ``max_sessions`` at once; and over two
loopback WorldFoundry-style servers (``tests/transports/case_servers.py``) the cases of an
``arena_inputs`` folder split between them, each server one session at a time."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from streameval.cases import load_cases
from streameval.cases.conditioning import Conditioning
from streameval.cases.model import Case
from streameval.perception import transnet_runtime
from streameval.perception.transnet_runtime import RUNTIME_ENV
from streameval.runs.jobs import EpisodeJob
from streameval.runs.servers import (
    SERVER_SLOT,
    SESSION_CPU_PER_VIDEO_S,
    TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S,
    ServerChoice,
    default_max_sessions,
    dispatch,
    run_jobs_on_servers,
    session_cpu_per_video_s,
    sessions_kept_up,
)
from streameval.transports.urls import AttachOptions, network_case_opener
from tests.cases.arena_synth import write_arena
from tests.transports.case_servers import Received, start_app, worldfoundry_case_app
from tests.transports.watchdog import watchdog
from tests.transports.worlds import CONFIG

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline


def _run(jobs: list[float], openers: list[str], max_sessions: int | None = None) -> list[tuple]:
    """Jobs that sleep their value; what ran where and when."""
    log: list[tuple[str, int, float, float, int]] = []

    async def run_one(job: int, opener: str, last: bool) -> None:
        start = time.monotonic()
        await asyncio.sleep(jobs[job])
        log.append((opener, job, start, time.monotonic(), SERVER_SLOT.get()))

    asyncio.run(dispatch(range(len(jobs)), openers, run_one, max_sessions=max_sessions))
    return log


def _overlap(log: list[tuple], opener: str) -> bool:
    spans = sorted((s, e) for o, _, s, e, _ in log if o == opener)
    return any(b[0] < a[1] - 1e-3 for a, b in itertools.pairwise(spans))


def test_each_job_once_one_per_server_handed_out_as_servers_free_up() -> None:
    log = _run([0.3, 0.05, 0.05, 0.05, 0.05], ["a", "b"])
    assert sorted(job for _, job, *_ in log) == [0, 1, 2, 3, 4]
    assert not _overlap(log, "a") and not _overlap(log, "b")
    where = {job: opener for opener, job, *_ in log}
    # job 0 holds a; b, free sooner, takes 1, 2, 3 and 4 in order
    assert where == {0: "a", 1: "b", 2: "b", 3: "b", 4: "b"}
    starts = [s for _, _, s, _, _ in sorted(log, key=lambda r: r[1])]
    assert starts == sorted(starts)  # handed out in order
    assert all(slot == "ab".index(opener) for opener, _, _, _, slot in log)


def test_max_sessions_bounds_the_servers_used() -> None:
    log = _run([0.02] * 4, ["a", "b", "c"], max_sessions=1)
    assert {opener for opener, *_ in log} == {"a"}
    assert len(log) == 4


def test_max_sessions_follow_what_the_cores_keep_up_with() -> None:
    assert sessions_kept_up(2, 0.5) == 3  # 2 cores, 3/4 of them used, half a core a session
    assert sessions_kept_up(1, 2.0) == 1  # never none
    for cuts in SESSION_CPU_PER_VIDEO_S:
        want = sessions_kept_up(8, session_cpu_per_video_s(cuts))
        assert default_max_sessions(cores=8, cuts=cuts) == want
    cheaper = default_max_sessions(cores=8, cuts="scenedetect-adaptive")
    assert cheaper >= default_max_sessions(cores=8, cuts="transnetv2")
    # no detector, or one not measured: counted as the dearest measured stack
    assert default_max_sessions(cores=8, cuts=None) == min(
        default_max_sessions(cores=8, cuts=c) for c in SESSION_CPU_PER_VIDEO_S
    )


def test_transnetv2_in_float32_is_planned_at_its_own_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where TransNetV2 cannot run its bfloat16 pass (no native bfloat16, no openvino, or a
    float32 runtime asked for), a session is planned at the float32 stack's cost."""
    monkeypatch.setenv(RUNTIME_ENV, "openvino-f32")
    assert session_cpu_per_video_s("transnetv2") == TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S
    assert default_max_sessions(cores=2, cuts="transnetv2") == 3
    monkeypatch.setenv(RUNTIME_ENV, "openvino")
    monkeypatch.setattr(transnet_runtime, "cpu_has_native_bfloat16", lambda: False)
    assert session_cpu_per_video_s("transnetv2") == TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S
    monkeypatch.setattr(transnet_runtime, "cpu_has_native_bfloat16", lambda: True)
    if importlib.util.find_spec("openvino") is not None:
        assert session_cpu_per_video_s("transnetv2") == SESSION_CPU_PER_VIDEO_S["transnetv2"]
    # the dearest planned stack stands for a detector not measured
    assert session_cpu_per_video_s("") == max(
        session_cpu_per_video_s(c) for c in SESSION_CPU_PER_VIDEO_S
    )


def test_a_failure_cancels_the_rest() -> None:
    async def run_one(job: int, opener: str, last: bool) -> None:
        if job == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(5)

    with pytest.raises(ExceptionGroup) as info:
        asyncio.run(dispatch(range(3), ["a", "b"], run_one))
    assert info.group_contains(RuntimeError, match="boom")


def test_a_server_that_cannot_start_a_job_is_retired_while_others_are_left() -> None:
    ran: list[tuple[str, int]] = []
    refused: list[tuple[str, int, bool]] = []

    async def run_one(job: int, opener: str, last: bool) -> bool:
        await asyncio.sleep(0.01)
        if opener in ("dead", "dead2"):
            refused.append((opener, job, last))
            return False
        ran.append((opener, job))
        return True

    asyncio.run(dispatch(range(5), ["ok", "dead", "dead2"], run_one))
    assert sorted(job for _, job in ran) == [0, 1, 2, 3, 4]  # each once, on the live one
    assert {o for o, _ in ran} == {"ok"} and len(refused) == 2  # one try each, then retired
    ran.clear()
    refused.clear()
    asyncio.run(dispatch(range(3), ["dead"], run_one))  # the last one: every job its turn
    assert refused == [("dead", 0, True), ("dead", 1, True), ("dead", 2, True)]


def test_server_choice_opens_on_the_task_server() -> None:
    choice = ServerChoice([lambda x: f"a:{x}", lambda x: f"b:{x}"])
    assert choice(1) == "a:1" and len(choice) == 2
    seen: list[str] = []

    async def run_one(job: int, slot: int, last: bool) -> None:
        await asyncio.sleep(0.01 * (job + 1))
        seen.append(choice(job))

    asyncio.run(dispatch(range(2), [0, 1], run_one))
    assert sorted(seen) == ["a:0", "b:1"]


@dataclass(frozen=True)
class Drive:
    keys: tuple[str, ...]
    seconds_per_key: float
    suite: str


def test_two_servers_share_the_cases_one_session_each_at_a_time(tmp_path: Path) -> None:
    cases = load_cases(write_arena(tmp_path / "arena"), sets="first_view/real", images="0-1")
    received: list[list[Received]] = [[], []]

    async def main() -> tuple[object, float, float]:
        apps = [
            await start_app(worldfoundry_case_app(tmp_path / f"up{i}", received[i]))
            for i in range(2)
        ]
        dog = asyncio.create_task(watchdog(asyncio.current_task(), 240.0))
        options = AttachOptions(clock=None, seconds_per_key=0.5, profile="worldfoundry")
        choice = ServerChoice(
            [network_case_opener(f"ws://127.0.0.1:{p}/api/realtime/ws", options) for _, p in apps]
        )

        def job(case: Case) -> EpisodeJob:
            drive = Drive(tuple(case.keys or ""), 0.5, case.suite)
            return EpisodeJob(
                case.name,
                lambda: choice(case, drive, Conditioning(case)),
                tmp_path / "out" / case.set / case.name,
                case=case,
            )

        cpu, wall = time.process_time(), time.monotonic()
        try:
            report = await run_jobs_on_servers(
                [job(c) for c in cases], 2, CONFIG, [], max_sessions=2
            )
        finally:
            dog.cancel()
            for runner, _ in apps:
                await runner.cleanup()
        return report, time.process_time() - cpu, time.monotonic() - wall

    report, cpu, wall = asyncio.run(main())
    outcomes = report.outcomes  # type: ignore[attr-defined]
    assert len(outcomes) == len(cases) == 5 and all(o.complete for o in outcomes)
    assert sorted(o.info.episode for o in outcomes) == sorted(c.name for c in cases)
    prompts = [r.prompt for server in received for r in server]
    assert sorted(map(str, prompts)) == sorted(str(c.prompt) for c in cases)  # each case once
    assert all(server for server in received)  # both servers took cases
    for server in received:  # one session at a time on each server
        spans = sorted((r.t_start, r.t_end or 0.0) for r in server)
        assert all(b[0] >= a[1] - 0.05 for a, b in itertools.pairwise(spans)), spans
    first = [r.t_start for server in received for r in server[:1]]
    assert abs(first[0] - first[1]) < 2.0  # side by side from the start
    seconds = sum(o.frames / 16 for o in outcomes)
    per_second = cpu / seconds
    print(f"5 cases on 2 servers: wall {wall:.1f} s, {seconds:.1f} s of video, "
          f"evaluator+servers CPU {cpu:.1f} s ({per_second:.2f} s per video second)")  # fmt: skip


def test_an_unreachable_server_is_retired_and_its_case_runs_on_the_other(tmp_path: Path) -> None:
    from tests.transports.conftest import free_port

    cases = load_cases(write_arena(tmp_path / "arena"), sets="first_view/real", images="1")
    received: list[Received] = []

    async def main() -> object:
        runner, port = await start_app(worldfoundry_case_app(tmp_path / "up", received))
        options = AttachOptions(clock=None, seconds_per_key=0.5, profile="worldfoundry")
        urls = [f"ws://127.0.0.1:{free_port()}/api/realtime/ws",  # nobody listens there
                f"ws://127.0.0.1:{port}/api/realtime/ws"]  # fmt: skip
        choice = ServerChoice([network_case_opener(url, options) for url in urls])

        def job(case: Case) -> EpisodeJob:
            drive = Drive(tuple(case.keys or ""), 0.5, case.suite)
            return EpisodeJob(
                case.name, lambda: choice(case, drive, Conditioning(case)), tmp_path / case.name
            )

        try:
            return await run_jobs_on_servers([job(c) for c in cases], 2, CONFIG, [])
        finally:
            await runner.cleanup()

    report = asyncio.run(main())
    assert report.bad_input == []  # type: ignore[attr-defined]
    outcomes = report.outcomes  # type: ignore[attr-defined]
    assert sorted(o.info.episode for o in outcomes) == ["001_002", "001_005"]
    assert all(o.complete for o in outcomes) and len(received) == 2
