"""A benchmark's case set shared out over an evaluator pool: each case once, one at a time
per served session.

``offer_cases`` is what ``streameval pool offer SESSION... --cases PATH`` runs. It reads and
checks the selection (``--sets``, ``--images``, ``--actions``) as ``attach --cases`` does, reads
every session's retained ``hello`` (a session that is not served, or whose model cannot
start from a case's image when the cases have images, is one line before any case is
offered), and then offers the cases in the seeded order, one per free session: an offer
names the session and the case (``CaseRef``), so its claim (``case_claim_key``) is the case's
whichever evaluator takes it. When a case's claim ends (``done`` or ``failed``) its session
takes the next case. The evaluators write what ``attach --cases`` writes (``cases.json``,
``manifest.jsonl``, ``OUT/<model>/<set>/<case>/``), into the ``--out`` they share.

Resume is per case, from the retained claims: a case done complete is kept, one still held
(or taken over after its evaluator was lost) is waited for on its session, an incomplete or
failed one is offered again (attempt + 1). Running the same command again after an
interruption therefore runs each remaining case once.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from streameval.errors import BadInputError, PoolMessageError, WireError
from streameval.protocol.wire import Hello
from streameval.protocol.wire import decode as decode_wire
from streameval.runs.cases import CaseSelection, case_drive, case_jobs
from streameval.runs.jobs import EpisodeJob
from streameval.scale.pool import SETTLE_S, PoolView, _client, broker_target
from streameval.scale.pool_messages import (
    OPEN_STATES,
    POOL_ROOT,
    CaseRef,
    SessionOffer,
    check_name,
    decode,
    encode,
    offers_topic,
)
from streameval.transports.live_config import SourceRequest

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.model import Case, CaseSet
    from streameval.runs.builders import RecordMode
    from streameval.runs.cases import CaseDrive
    from streameval.transports.base import LiveSource
    from streameval.transports.live_config import LiveConfig

HELLO_TIMEOUT_S = 10.0
UNCLAIMED_S = 15.0
"""An offer nobody claimed within this is offered again (the same attempt: a member that did
claim it ignores the repeat)."""


class PoolCaseJobs:
    """A pool member's case offers as ``attach --cases`` runs them (``scale.pool.CaseJobs``):
    the offer's selection read here from its path (once per selection), the same seeded
    order in ``cases.json``, the results in ``OUT/<model>/<set>/<case>/`` with the case's
    ``manifest.jsonl`` line and its recording (``record``); the offer's session, sent a
    ``reset`` with the case's image, caption and intrinsics, runs it."""

    def __init__(self, out: Path, record: RecordMode = "lossless") -> None:
        self.out = out
        self.record: RecordMode = record
        self._case_sets: dict[tuple[str | None, ...], CaseSet] = {}

    def __call__(self, offer: SessionOffer, url: str, live: LiveConfig) -> EpisodeJob:
        from dataclasses import replace

        from streameval.transports.mqtt.transport import MqttSource

        ref = offer.case
        assert ref is not None
        selection = CaseSelection(Path(ref.source), ref.sets, ref.images, ref.actions, ref.seed)
        known = (ref.source, ref.sets, ref.images, ref.actions)
        if known not in self._case_sets:
            self._case_sets[known] = selection.load()

        def open_for_case(case: Case, drive: CaseDrive, conditioning: Conditioning) -> LiveSource:
            return MqttSource(
                SourceRequest(
                    url,
                    tuple(drive.keys),
                    episode=case.name,
                    suite=drive.suite,
                    config=replace(live, seconds_per_key=drive.seconds_per_key),
                    model=ref.model,  # the run's name for it, as its results folder
                ),
                conditioning=conditioning,
            )

        jobs = case_jobs(
            self._case_sets[known],
            self.out,
            ref.model,
            open_for_case,
            ref.seed,
            seconds_per_key=offer.seconds_per_key,
            record=self.record,
            selection=selection.record(),
        )
        for job in jobs:
            if job.case is not None and job.case.key == ref.key:
                return job
        raise BadInputError(ref.source, f"case {ref.key} is not in this selection")


@dataclass
class CasePoolReport:
    """How every case of the run ended: ``complete``, ``incomplete`` and ``failed`` map a case
    to its reason (None for complete); ``kept``: finished before this run."""

    complete: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    incomplete: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    model: str = ""

    @property
    def all_complete(self) -> bool:
        return not self.incomplete and not self.failed


def _episode_name(name: str) -> str:
    """An offer's episode field (a topic-safe name; the case's own name lives in its ref)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:200] or "case"


async def offer_cases(
    broker_url: str,
    group: str,
    sessions: list[str],
    selection: CaseSelection,
    *,
    seconds_per_key: float,
    clock: Literal["video", "wall"] = "video",
    model_name: str | None = None,
    hello_timeout_s: float = HELLO_TIMEOUT_S,
    say: Callable[[str], None] | None = None,
) -> CasePoolReport:
    """Run the case set of ``selection`` over ``sessions`` through the pool ``group`` (see the
    module docstring); returns when every case is accounted for. Bad input (a case set,
    an unserved session, a model that cannot take the cases' images, sessions serving
    different models without ``model_name``) is one ``BadInputError`` before any offer."""
    from streameval.cases.select import case_order

    tell = say or (lambda text: print(text, file=sys.stderr, flush=True))
    target = broker_target(broker_url)
    group = check_name("group", group)
    try:
        sessions = [check_name("session", s) for s in sessions]
    except PoolMessageError as exc:
        raise BadInputError("pool offer", str(exc)) from None
    case_set = selection.load()
    ordered, _ = case_order(case_set.cases, selection.seed)
    drives = {case.key: case_drive(case, seconds_per_key) for case in ordered}
    images = sum(case.image_path is not None for case in ordered)
    view = PoolView()
    hellos: dict[str, Hello] = {}
    refused: dict[str, str] = {}  # session → why its status message was not a hello
    changed = asyncio.Event()
    status = {target.topic("status", s): s for s in sessions}

    async with _client(target) as client:
        await client.subscribe(f"{POOL_ROOT}/{group}/evaluators/+", qos=1)
        await client.subscribe(f"{POOL_ROOT}/{group}/claims/+", qos=1)
        for topic in status:
            await client.subscribe(topic, qos=1)

        async def read() -> None:
            async for msg in client.messages:
                payload = msg.payload if isinstance(msg.payload, bytes | bytearray) else b""
                topic = str(msg.topic)
                if topic in status:
                    try:
                        message = decode_wire(bytes(payload)) if payload else None
                    except WireError as exc:  # named if the session never says hello
                        refused[status[topic]] = str(exc)
                        message = None
                    if isinstance(message, Hello):
                        hellos[status[topic]] = message
                else:
                    with contextlib.suppress(PoolMessageError):
                        view.update(group, topic, bytes(payload))
                changed.set()

        reader = asyncio.create_task(read())
        try:
            model = await _check_sessions(
                broker_url,
                sessions,
                hellos,
                images,
                len(ordered),
                model_name,
                hello_timeout_s,
                refused,
            )
            await asyncio.sleep(SETTLE_S)  # the retained claims of a former run arrive
            run = _CaseRun(model, sessions, view, tell)
            for case in ordered:
                drive = drives[case.key]
                offer = SessionOffer(
                    session=sessions[0],
                    episode=_episode_name(case.name),
                    keys=tuple(drive.keys),
                    seconds_per_key=drive.seconds_per_key,
                    suite=drive.suite,
                    clock=clock,
                    case=CaseRef(
                        case.key,
                        model,
                        str(case_set.source),
                        selection.sets,
                        selection.images,
                        selection.actions,
                        selection.seed,
                    ),
                )
                try:  # what a member will read back: refused here, not silently ignored there
                    SessionOffer.from_json(decode(encode(offer.to_json())))
                except PoolMessageError as exc:
                    raise BadInputError(case.origin or case.key, str(exc)) from None
                run.add(offer)
            await run.drive(client, group, changed)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
    return run.report


async def _check_sessions(
    broker_url: str,
    sessions: list[str],
    hellos: dict[str, Hello],
    images: int,
    cases: int,
    model_name: str | None,
    timeout_s: float,
    refused: dict[str, str] | None = None,
) -> str:
    """Every session served, able to start from the cases' images; the run's model name."""
    from streameval.transports.mqtt.transport import takes_no_image

    deadline = time.monotonic() + timeout_s
    heard = refused or {}
    while time.monotonic() < deadline and any(s not in hellos and s not in heard for s in sessions):
        await asyncio.sleep(0.05)
    base = broker_url.rstrip("/")
    for session in sessions:
        hello = hellos.get(session)
        if hello is None and refused and session in refused:
            raise BadInputError(
                f"{base}/{session}",
                f"session {session!r}: the server's hello is refused: {refused[session]}",
            )
        if hello is None:
            raise BadInputError(
                f"{base}/{session}",
                f"no model server on session {session!r} (no hello within {timeout_s:g} s)",
            )
        if images and "image" not in hello.start:
            line = takes_no_image(f"{base}/{session}", hello)
            raise BadInputError(f"{base}/{session}", f"{images} of the {cases} cases: {line}")
    models = {hellos[s].model for s in sessions}
    if model_name:
        return model_name
    if len(models) > 1:
        raise BadInputError(
            "--model-name",
            f"the sessions serve {len(models)} models ({', '.join(sorted(models))}): one case "
            "run is one model; name it with --model-name",
        )
    return models.pop()


@dataclass
class _Pending:
    offer: SessionOffer  # the case's latest offer (its session and attempt)
    sent_at: float = 0.0  # monotonic time it was last published; 0: not yet


class _CaseRun:
    """The dispatcher's state: cases waiting, cases on a session, how each ended."""

    def __init__(
        self, model: str, sessions: list[str], view: PoolView, tell: Callable[[str], None]
    ) -> None:
        self.sessions = sessions
        self.view = view
        self.tell = tell
        self.report = CasePoolReport(model=model)
        self.waiting: list[SessionOffer] = []
        self.running: dict[str, _Pending] = {}  # claim key -> the case's offer on its session

    def add(self, offer: SessionOffer) -> None:
        """A case of the run, sorted by its retained claim: kept, running, or to run."""
        assert offer.case is not None
        held = self.view.claims.get(offer.claim_key)
        if held is None:
            self.waiting.append(offer)
        elif held.state == "done" and held.complete:
            self.report.kept.append(offer.case.key)
        elif held.state in OPEN_STATES or held.state == "lost":
            # still running, or being taken over: wait for it (its session is busy)
            self.running[offer.claim_key] = _Pending(held.offer, time.monotonic())
        else:  # incomplete or failed before: run again
            self.waiting.append(_after(offer, held.offer.attempt))

    def _free(self) -> list[str]:
        taken = {p.offer.session for p in self.running.values()}
        return [s for s in self.sessions if s not in taken]

    async def drive(self, client: Any, group: str, changed: asyncio.Event) -> None:
        if self.report.kept:
            self.tell(f"{len(self.report.kept)} case(s) finished before, kept")
        total = len(self.waiting) + len(self.running)
        self.tell(f"{total} case(s) to run on {len(self.sessions)} session(s)")
        waiting_for_member = False
        while self.waiting or self.running:
            self._collect()
            alive = any(state == "alive" for state in self.view.evaluators.values())
            if not alive and not waiting_for_member:
                # an offer with no member subscribed is dropped by the broker: hold them
                self.tell(f"waiting for an evaluator to join pool {group!r}")
            waiting_for_member = not alive
            if alive:
                for session in self._free():
                    if not self.waiting:
                        break
                    offer = _on(self.waiting.pop(0), session)
                    self.running[offer.claim_key] = _Pending(offer)
                now = time.monotonic()
                for pending in self.running.values():
                    self._revive(pending, now)
                    if self._claimed(pending.offer):
                        continue
                    if pending.sent_at and now - pending.sent_at < UNCLAIMED_S:
                        continue
                    pending.sent_at = now
                    await client.publish(
                        offers_topic(group), encode(pending.offer.to_json()), qos=1
                    )
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), 1.0)

    def _revive(self, pending: _Pending, now: float) -> None:
        """A case left ``lost`` (its evaluator died and the takeover offer found nobody):
        offered again on its session, one attempt later."""
        held = self.view.claims.get(pending.offer.claim_key)
        if held is None or held.state != "lost" or held.offer.attempt < pending.offer.attempt:
            return
        if pending.sent_at and now - pending.sent_at < UNCLAIMED_S:
            return
        pending.offer = held.offer.again("offered again: its evaluator was lost")
        pending.sent_at = 0.0

    def _claimed(self, offer: SessionOffer) -> bool:
        held = self.view.claims.get(offer.claim_key)
        return held is not None and held.offer.attempt >= offer.attempt

    def _collect(self) -> None:
        """Cases whose claim ended: the outcome recorded, their session free."""
        for claim_key, pending in list(self.running.items()):
            held = self.view.claims.get(claim_key)
            if held is None or held.offer.attempt < pending.offer.attempt:
                continue
            if held.state not in ("done", "failed"):
                continue
            assert held.offer.case is not None
            key, where = held.offer.case.key, f"{held.evaluator} on {held.session}"
            del self.running[claim_key]
            if held.state == "done" and held.complete:
                self.report.complete.append(key)
                self.tell(f"{key}: complete ({where})")
            elif held.state == "done":
                self.report.incomplete[key] = held.reason or "incomplete"
                self.tell(f"{key}: INCOMPLETE: {held.reason} ({where})")
            else:
                self.report.failed[key] = held.reason or "failed"
                self.tell(f"{key}: FAILED: {held.reason} ({where})")


def _on(offer: SessionOffer, session: str) -> SessionOffer:
    from dataclasses import replace

    return replace(offer, session=session)


def _after(offer: SessionOffer, attempt: int) -> SessionOffer:
    """The offer of a case run before (incomplete, failed, lost): one attempt later."""
    from dataclasses import replace

    return replace(offer, attempt=attempt + 1, reason="run again")
