"""A benchmark's case set through ``streameval pool`` on a real mosquitto broker.

Two served procedural worlds (``serve_mqtt``) and two pool evaluators run in this process, on
one event loop in a thread; ``offer_cases`` (what ``pool offer --cases`` runs) shares the
cases of an ``arena_inputs``-layout folder made here out over them. Every case runs once and
starts from its image (the case record and the first-frame similarity in scores.json); a run
interrupted half-way and started again keeps the finished cases and runs the rest; a served
model that cannot take an image is refused in one line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiomqtt")

from streameval.cases import HONOURED_SIMILARITY
from streameval.cli.main import main
from streameval.errors import BadInputError
from streameval.results.layout import path_component
from streameval.runs.cases import CASES_FILE, MANIFEST_FILE, CaseSelection
from streameval.runs.pool_cases import PoolCaseJobs, offer_cases
from streameval.scale.pool import PoolEvaluator, offer_sessions, read_pool
from streameval.scale.pool_messages import CaseRef, SessionOffer
from tests.cases.arena_synth import write_arena
from tests.scale.test_pool import Background, broker  # noqa: F401  (the broker fixture)
from tests.transports.conftest import Broker
from tests.transports.worlds import CONFIG, NAME, NoImageWorld, world

GROUP = "cases"
SESSIONS = ["s0", "s1"]
SECONDS_PER_KEY = 0.5
SELECTION = {"sets": "first_view/real", "images": "0-1", "actions": "1,2,5,6"}
CASES = ["first_view/real/000_001", "first_view/real/000_006",
         "first_view/real/001_002", "first_view/real/001_005"]  # fmt: skip
MODEL_DIR = path_component(NAME)


@pytest.fixture
def bg() -> Iterator[Background]:
    b = Background()
    try:
        yield b
    finally:
        b.close()


def _selection(arena: Path) -> CaseSelection:
    return CaseSelection(arena, seed=3, **SELECTION)


async def _serve(at: Broker, sessions: list[str], factory: Any = world) -> None:
    from streameval.transports.mqtt.serve import serve_mqtt

    events = [asyncio.Event() for _ in sessions]
    for session, ready in zip(sessions, events, strict=True):
        model = factory()
        w = world()
        asyncio.get_running_loop().create_task(
            serve_mqtt(
                model,
                at.url(session),
                name=NAME,
                fps=w.fps,
                width=w.width,
                height=w.height,
                ready=ready,
            )
        )
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), 20)


def _evaluators(url: str, out: Path, names: list[str]) -> tuple[list[PoolEvaluator], Any]:
    members = [
        PoolEvaluator(
            url,
            out,
            name=n,
            group=GROUP,
            config=CONFIG,
            no_frame_timeout_s=8.0,
            case_jobs=PoolCaseJobs(out),
        )
        for n in names
    ]
    return members, asyncio.Event()


async def _join(members: list[PoolEvaluator], stop: asyncio.Event) -> list[asyncio.Task[None]]:
    tasks = [asyncio.create_task(m.run(stop)) for m in members]
    for _ in range(200):  # every member subscribed before the first offer
        if all(m.view.evaluators.get(m.name) == "alive" for m in members):
            break
        await asyncio.sleep(0.05)
    return tasks


async def _leave(tasks: list[asyncio.Task[None]], stop: asyncio.Event) -> None:
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)


def _scores(out: Path, key: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / MODEL_DIR / key / "scores.json").read_text())
    return doc


def test_two_evaluators_run_every_case_once_from_its_image(
    broker: Broker,  # noqa: F811
    bg: Background,
    tmp_path: Path,
) -> None:
    url = f"mqtt://127.0.0.1:{broker.port}"
    arena, out = write_arena(tmp_path / "arena_inputs"), tmp_path / "out"

    async def scenario() -> Any:
        await _serve(broker, SESSIONS)
        members, stop = _evaluators(url, out, ["ev-a", "ev-b"])
        tasks = await _join(members, stop)
        try:
            report = await offer_cases(
                url, GROUP, SESSIONS, _selection(arena), seconds_per_key=SECONDS_PER_KEY
            )
        finally:
            await _leave(tasks, stop)
        return report, await read_pool(url, GROUP)

    report, view = bg.submit(scenario()).result(timeout=300)
    assert sorted(report.complete) == CASES and report.all_complete, report
    claims = {c.offer.case.key: c for c in view.claims.values() if c.offer.case}
    assert sorted(claims) == CASES
    assert {c.evaluator for c in claims.values()} == {"ev-a", "ev-b"}  # shared out
    assert {c.session for c in claims.values()} == set(SESSIONS)
    for key, claim in claims.items():  # run once each, to the end
        assert (claim.state, claim.complete, claim.offer.attempt) == ("done", True, 1), claim
        doc = _scores(out, key)
        image, action = key.rsplit("/", 1)[1].split("_")
        assert doc["case"]["set"] == "first_view/real"
        assert (doc["case"]["image"], doc["case"]["action"]) == (image, int(action))
        assert doc["conditioning"]["sent"] is True and doc["conditioning"]["honoured"] is True
        assert doc["conditioning"]["first_frame_similarity"] >= HONOURED_SIMILARITY, key
    # cases.json and manifest.jsonl as attach --cases writes them
    record = json.loads((out / MODEL_DIR / CASES_FILE).read_text())
    assert record["cases"] == 4 and record["selection"] == SELECTION
    assert record["model"] == NAME
    lines = [json.loads(x) for x in (out / MODEL_DIR / MANIFEST_FILE).read_text().splitlines()]
    assert sorted(line["case"] for line in lines) == CASES
    assert all(line["status"] == "complete" for line in lines)
    assert main(["table", str(out)]) == 0
    assert main(["pool", "status", url, "--group", GROUP]) == 0

    # attach --cases over the same protocol writes the same run: cases.json (but its time),
    # the case folders and the manifest's cases
    alone = tmp_path / "attach"
    argv = ["attach", f"{url}/s0", "--cases", str(arena), "--case-seed", "3",
            "--sets", SELECTION["sets"], "--images", SELECTION["images"],
            "--actions", SELECTION["actions"], "--seconds-per-key", str(SECONDS_PER_KEY),
            "--model-name", NAME, "--out", str(alone), "--cuts", "scenedetect-adaptive",
            "--no-tui", "--no-report"]  # fmt: skip
    assert main(argv) == 0
    attached = json.loads((alone / MODEL_DIR / CASES_FILE).read_text())
    pooled = dict(record)
    for doc in (attached, pooled):
        doc.pop("written_at")
    assert attached == pooled
    for key in CASES:
        assert _scores(alone, key)["case"] == _scores(out, key)["case"]
    again = (alone / MODEL_DIR / MANIFEST_FILE).read_text().splitlines()
    assert sorted(json.loads(x)["case"] for x in again) == CASES


def _finished_on_disk(out: Path, key: str) -> bool:
    path = out / MODEL_DIR / key / "scores.json"
    return path.is_file() and json.loads(path.read_text()).get("complete") is True


# Seen once in a full `make test` at load ~5: the evaluators did not stop within 30 s of the
# interruption (TimeoutError in `_leave`; passed alone 4 of 4). One rerun of the scenario.
# Seen in a CI run at 0.5 s keys: all four cases finished before the evaluators stopped (the
# second pair was already running when two were done): the cases of this scenario are longer.
LONGER_KEY = 1.5


@pytest.mark.flaky(reruns=1)
def test_an_interrupted_pool_run_resumes_keeping_the_finished_cases(
    broker: Broker,  # noqa: F811
    bg: Background,
    tmp_path: Path,
) -> None:
    url = f"mqtt://127.0.0.1:{broker.port}"
    arena, out = write_arena(tmp_path / "arena_inputs"), tmp_path / "out"

    async def interrupted() -> list[str]:
        await _serve(broker, SESSIONS)
        members, stop = _evaluators(url, out, ["ev-a", "ev-b"])
        tasks = await _join(members, stop)
        run = asyncio.create_task(
            offer_cases(url, GROUP, SESSIONS, _selection(arena), seconds_per_key=LONGER_KEY)
        )

        def done() -> list[str]:
            claims = members[0].view.claims.values()
            return [c.offer.case.key for c in claims if c.state == "done" and c.offer.case]

        for _ in range(2400):
            if len(done()) >= 2 or run.done():
                break
            await asyncio.sleep(0.05)
        run.cancel()  # the dispatcher and both evaluators stop: a case may be mid-way
        await asyncio.gather(run, return_exceptions=True)
        await _leave(tasks, stop)
        return done()

    seen_done = bg.submit(interrupted()).result(timeout=300)
    # what a resume keeps is what is finished on disk: a case that ended between the last look
    # at the claims and the cancellation is finished too
    finished = [key for key in CASES if _finished_on_disk(out, key)]
    assert set(seen_done) <= set(finished) and 2 <= len(finished) < 4, (seen_done, finished)
    stamps = {key: (out / MODEL_DIR / key / "scores.json").stat().st_mtime_ns for key in finished}

    async def resumed() -> Any:
        # one member restarted under its name, one new: a case left open by either is
        # released (by itself, or by the leader) and run again
        members, stop = _evaluators(url, out, ["ev-a", "ev-c"])
        tasks = await _join(members, stop)
        try:
            return await offer_cases(
                url, GROUP, SESSIONS, _selection(arena), seconds_per_key=LONGER_KEY
            )
        finally:
            await _leave(tasks, stop)

    report = bg.submit(resumed()).result(timeout=300)
    # every case finished when the run was interrupted is kept (a case an evaluator was still
    # ending then may be finished and kept too): none is run twice, none lost
    assert set(finished) <= set(report.kept), report
    assert sorted(report.kept + report.complete) == CASES and report.all_complete, report
    for key in finished:  # kept, not run again
        assert (out / MODEL_DIR / key / "scores.json").stat().st_mtime_ns == stamps[key]
    for key in CASES:
        assert _scores(out, key)["complete"] is True
    lines = (out / MODEL_DIR / MANIFEST_FILE).read_text().splitlines()
    assert sorted(json.loads(x)["case"] for x in lines) == CASES  # one line a case


def test_a_served_model_that_cannot_take_an_image_is_refused_in_one_line(
    broker: Broker,  # noqa: F811
    bg: Background,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"mqtt://127.0.0.1:{broker.port}"
    arena, out = write_arena(tmp_path / "arena_inputs"), tmp_path / "out"
    bg.submit(_serve(broker, ["old"], NoImageWorld)).result(timeout=30)

    # pool offer --cases: one line naming the session, exit 2, nothing offered
    with pytest.raises(BadInputError, match="cannot start from a case's image"):
        bg.submit(
            offer_cases(url, GROUP, ["old"], _selection(arena), seconds_per_key=SECONDS_PER_KEY)
        ).result(timeout=60)
    argv = ["pool", "offer", url, "old", "--group", GROUP, "--cases", str(arena),
            "--sets", "first_view/real", "--seconds-per-key", "0.5"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/old" in err[0] and "cannot start from a case's image" in err[0]

    # an evaluator offered such a case directly refuses that session: the claim says why
    async def direct() -> Any:
        members, stop = _evaluators(url, out, ["ev-a"])
        tasks = await _join(members, stop)
        ref = CaseRef(CASES[0], NAME, str(arena), seed=3, **SELECTION)
        offer = SessionOffer("old", "000_001", ("W",), SECONDS_PER_KEY, case=ref)
        await offer_sessions(url, GROUP, [offer])
        try:
            for _ in range(1200):  # a loaded CI machine: the view's claims come late
                claim = members[0].view.claims.get(offer.claim_key)
                if claim is not None and claim.state in ("done", "failed"):
                    return claim
                await asyncio.sleep(0.05)
            return None
        finally:
            await _leave(tasks, stop)

    claim = bg.submit(direct()).result(timeout=120)
    assert claim is not None and claim.state == "failed", claim
    assert "cannot start from a case's image" in str(claim.reason)
    assert not (out / MODEL_DIR / CASES[0] / "scores.json").exists()
