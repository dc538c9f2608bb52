"""Live fan-out: evaluator processes that share the sessions offered on one MQTT broker.

Each evaluator joins a pool (``group``): the broker's MQTT v5 shared subscription hands each
offer to exactly one member. The member claims the session at once (retained ``queued``
claim), drives and scores it with the MQTT transport and the usual pipeline
(``evaluating``), and ends the claim ``done`` (with the results folder) or ``failed``.

No session is silently lost. Every evaluator leaves a last will (``lost``) on its
liveness topic, which the broker publishes the moment its connection dies. Every member
watches liveness and claims; the first live member by name (one leader, no election round)
marks each open claim of a lost or stopped member ``lost`` and offers the session again
(``attempt`` + 1): another member takes it over, and the model server, sent a ``reset``,
starts the episode afresh. With no member left, the claims stay as they are, next to the
``lost`` evaluator, for ``streameval pool status`` to report; a member that joins later
finds them (retained) and takes them over.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from streameval.core.observers import EpisodeObserver, EpisodeOutcome
from streameval.core.source import Source
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.errors import BadInputError, PoolMessageError
from streameval.results.episode_state import clear_episode, episode_finished
from streameval.results.results_log import RESULTS_LOG, ResultsLog
from streameval.scale.pool_messages import (
    OPEN_STATES,
    POOL_ROOT,
    Claim,
    ClaimState,
    EvaluatorState,
    SessionOffer,
    check_name,
    claim_topic,
    decode,
    encode,
    evaluator_state,
    evaluator_topic,
    offers_topic,
    shared_offers_topic,
)
from streameval.transports.live_config import LiveConfig, SourceRequest


class CaseJob(Protocol):
    """A benchmark case's episode, as a member runs it (``runs.jobs.EpisodeJob``)."""

    @property
    def results_dir(self) -> Path: ...

    @property
    def observers(self) -> list[EpisodeObserver]: ...

    @property
    def open_source(self) -> Callable[[], Source]: ...


CaseJobs = Callable[[SessionOffer, str, LiveConfig], CaseJob]
"""Builds the job of a case offer (``runs.pool_cases.PoolCaseJobs``: the very jobs of
``attach --cases``), given its session's URL and live settings; may raise
``BadInputError``."""

SETTLE_S = 1.0
"""After joining, retained claims and liveness have arrived within this: then look for
sessions orphaned while nobody was there."""
RECONCILE_EVERY_S = 5.0


def broker_target(url: str) -> Any:
    """The broker of ``mqtt://[USER:PASS@]HOST:PORT`` (no session: the pool finds those)."""
    from streameval.transports.mqtt.url import parse_mqtt_url

    target = parse_mqtt_url(url, session_required=False)
    if target.session is not None:
        raise BadInputError(url, "a pool URL names the broker only: mqtt://HOST:PORT")
    return target


def _client(target: Any, **extra: Any) -> Any:
    import aiomqtt

    from streameval.transports.mqtt.url import client_kwargs

    return aiomqtt.Client(
        **client_kwargs(target),  # type: ignore[arg-type]
        protocol=aiomqtt.ProtocolVersion.V5,
        **extra,
    )


def _label(offer: SessionOffer) -> str:
    """How a member's lines name an offer: the session, or the case on its session."""
    if offer.case is None:
        return offer.session
    return f"{offer.case.key} on {offer.session}"


@dataclass
class PoolView:
    """What a member (or ``pool status``) knows: every claim and every evaluator's state."""

    claims: dict[str, Claim] = field(default_factory=dict)
    evaluators: dict[str, EvaluatorState] = field(default_factory=dict)

    def update(self, group: str, topic: str, payload: bytes) -> str | None:
        """Apply a claim or liveness message; returns what kind it was (or None)."""
        claims_prefix = f"{POOL_ROOT}/{group}/claims/"
        evaluators_prefix = f"{POOL_ROOT}/{group}/evaluators/"
        if topic.startswith(claims_prefix):
            key = topic.removeprefix(claims_prefix)
            if not payload:
                self.claims.pop(key, None)
            else:
                self.claims[key] = Claim.from_json(decode(payload))
            return "claim"
        if topic.startswith(evaluators_prefix):
            name = topic.removeprefix(evaluators_prefix)
            if not payload:
                self.evaluators.pop(name, None)
            else:
                self.evaluators[name] = evaluator_state(payload)
            return "evaluator"
        return None

    def orphans(self) -> list[Claim]:
        """Open claims whose evaluator is lost or stopped: nobody is evaluating them."""
        gone = {e for e, s in self.evaluators.items() if s != "alive"}
        return [c for c in self.claims.values() if c.state in OPEN_STATES and c.evaluator in gone]

    def leader(self) -> str | None:
        alive = sorted(e for e, s in self.evaluators.items() if s == "alive")
        return alive[0] if alive else None


class PoolEvaluator:
    """One member of an evaluator pool; ``run`` until cancelled (or ``stop`` is set)."""

    def __init__(
        self,
        broker_url: str,
        out: Path,
        *,
        name: str,
        group: str = "evaluators",
        config: PipelineConfig | None = None,
        concurrency: int = 1,
        no_frame_timeout_s: float = 10.0,
        case_jobs: CaseJobs | None = None,
    ) -> None:
        self.broker_url = broker_url
        self.target = broker_target(broker_url)
        self.out = out
        self.name = check_name("evaluator", name)
        self.group = check_name("group", group)
        self.config = config or PipelineConfig()
        self.concurrency = max(1, concurrency)
        self.no_frame_timeout_s = no_frame_timeout_s
        self.case_jobs = case_jobs  # None: this member runs no case set's offers
        self.view = PoolView()
        self._client: Any = None
        self._queue: asyncio.Queue[SessionOffer] = asyncio.Queue()
        self._held: set[str] = set()  # claim keys this process holds open

    def _say(self, text: str) -> None:
        print(f"[{self.name}] {text}", file=sys.stderr, flush=True)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        import aiomqtt

        me = evaluator_topic(self.group, self.name)
        will = aiomqtt.Will(me, encode({"state": "lost"}), qos=1, retain=True)
        try:
            async with _client(self.target, identifier=f"streameval-{self.name}", will=will) as c:
                self._client = c
                await self._join(c, me)
                tasks = [asyncio.create_task(self._work()) for _ in range(self.concurrency)]
                tasks.append(asyncio.create_task(self._reconcile_periodically()))
                reader = asyncio.create_task(self._read(c))
                waiter = asyncio.create_task(stop.wait()) if stop else None
                try:
                    await asyncio.wait(
                        [reader, *([waiter] if waiter else [])],
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    for task in [reader, *tasks, *([waiter] if waiter else [])]:
                        task.cancel()
                    await asyncio.gather(reader, *tasks, return_exceptions=True)
                    with contextlib.suppress(Exception):
                        # queued and running sessions are orphaned now: the leader re-offers
                        await c.publish(me, encode({"state": "stopped"}), qos=1, retain=True)
                lost = reader.exception() if reader.done() and not reader.cancelled() else None
                if lost is not None:
                    raise lost  # the broker went away: say so (exit 2), not a silent exit 0
        except aiomqtt.MqttError as exc:
            from streameval.transports.mqtt.url import connect_problem

            raise BadInputError(self.broker_url, connect_problem(exc, "broker")) from None

    async def _join(self, client: Any, me: str) -> None:
        # liveness and claims first: retained ones arrive before any offer, so a duplicate
        # offer is recognised as such
        await client.subscribe(f"{POOL_ROOT}/{self.group}/evaluators/+", qos=1)
        await client.subscribe(f"{POOL_ROOT}/{self.group}/claims/+", qos=1)
        # then offers, and only then "alive": an offer published to a shared subscription
        # with no member yet is dropped by the broker, so whoever waits for "alive" before
        # offering must find the subscription in place
        await client.subscribe(shared_offers_topic(self.group), qos=1)
        self.view.evaluators[self.name] = "alive"
        await client.publish(me, encode({"state": "alive"}), qos=1, retain=True)
        self._say(f"joined pool {self.group!r} on {self.target.display}")

    async def _read(self, client: Any) -> None:
        async for msg in client.messages:
            payload = msg.payload if isinstance(msg.payload, bytes | bytearray) else b""
            topic = str(msg.topic)
            try:
                if topic == offers_topic(self.group):
                    await self._on_offer(SessionOffer.from_json(decode(bytes(payload))))
                elif self.view.update(self.group, topic, bytes(payload)) == "evaluator":
                    await self._reconcile()
            except PoolMessageError as exc:
                self._say(f"ignored a malformed message on {topic}: {exc}")

    async def _on_offer(self, offer: SessionOffer) -> None:
        held = self.view.claims.get(offer.claim_key)
        # a later attempt of a session (or case) nobody holds any more: taken; the same
        # attempt again (a duplicate delivery), or one still held: ignored
        if held is not None and not (
            held.state not in OPEN_STATES and offer.attempt > held.offer.attempt
        ):
            self._say(
                f"{_label(offer)}: offer (attempt {offer.attempt}) ignored, already "
                f"{held.state} by {held.evaluator} (attempt {held.offer.attempt})"
            )
            return
        self._held.add(offer.claim_key)
        await self._claim(offer, "queued")
        await self._queue.put(offer)

    async def _claim(self, offer: SessionOffer, state: ClaimState, **extra: Any) -> None:
        claim = Claim(offer, self.name, state, time.time(), **extra)
        await self._publish_claim(claim)

    async def _publish_claim(self, claim: Claim) -> None:
        self.view.claims[claim.key] = claim  # at once: the echo comes later
        topic = claim_topic(self.group, claim.key)
        await self._client.publish(topic, encode(claim.to_json()), qos=1, retain=True)

    async def _reconcile(self) -> None:
        """The leader offers again every session a lost or stopped member held."""
        if self.view.leader() != self.name:
            return
        for claim in self.view.orphans():
            reason = f"evaluator {claim.evaluator} {self.view.evaluators[claim.evaluator]}"
            await self._offer_again(claim, reason)

    async def _release_former_claims(self) -> None:
        """Claims left open under this member's name by a former process of the same name
        (restarted with ``--name``): nobody evaluates them, and the leader cannot tell, as
        the name is alive again. Marked lost and offered again, as the leader would."""
        for claim in list(self.view.claims.values()):
            if claim.evaluator != self.name or claim.state not in OPEN_STATES:
                continue
            if claim.key in self._held:
                continue
            await self._offer_again(claim, f"evaluator {self.name} restarted")

    async def _offer_again(self, claim: Claim, reason: str) -> None:
        """``claim`` marked lost for ``reason`` and its session offered again."""
        await self._publish_claim(
            Claim(claim.offer, claim.evaluator, "lost", time.time(), reason=reason)
        )
        again = claim.offer.again(reason)
        await self._client.publish(offers_topic(self.group), encode(again.to_json()), qos=1)
        self._say(f"{_label(claim.offer)}: {reason} while {claim.state}; offered again")

    async def _reconcile_periodically(self) -> None:
        await asyncio.sleep(SETTLE_S)
        await self._release_former_claims()
        while True:
            await self._reconcile()
            await asyncio.sleep(RECONCILE_EVERY_S)

    async def _work(self) -> None:
        while True:
            offer = await self._queue.get()
            label = _label(offer)
            try:
                job = self._case_job(offer)
            except Exception as exc:  # a case this member cannot read: that case fails
                why = str(exc) if isinstance(exc, BadInputError) else repr(exc)
                await self._claim(offer, "failed", reason=why)
                self._held.discard(offer.claim_key)
                self._say(f"{label}: failed: {why}")
                continue
            results_dir = job.results_dir if job is not None else self.out / offer.session
            if job is not None and episode_finished(results_dir):
                # finished by a former run (the broker forgot its claim): kept, not run twice
                await self._claim(
                    offer, "done", results_dir=str(results_dir), complete=True, reason="kept"
                )
                self._held.discard(offer.claim_key)
                self._say(f"{label}: finished before, kept")
                continue
            await self._claim(offer, "evaluating", results_dir=str(results_dir))
            self._say(f"{label}: evaluating (attempt {offer.attempt})")
            try:
                outcome = await self._evaluate(offer, results_dir, job)
            except asyncio.CancelledError:
                raise  # stopping: the claim stays open and the leader offers it again
            except Exception as exc:
                # one failed session never stops the member, and is never left "evaluating"
                why = str(exc) if isinstance(exc, BadInputError) else repr(exc)
                await self._claim(offer, "failed", results_dir=str(results_dir), reason=why)
                self._held.discard(offer.claim_key)
                self._say(f"{label}: failed: {why}")
                continue
            errors = "; ".join(e.message for e in outcome.errors)
            reason = None if outcome.complete else errors or "incomplete"
            await self._claim(
                offer,
                "done",
                results_dir=str(results_dir),
                complete=outcome.complete,
                reason=reason,
            )
            self._held.discard(offer.claim_key)
            state = "complete" if outcome.complete else f"INCOMPLETE ({reason})"
            self._say(f"{label}: done, {outcome.frames} frames, {state}")

    def _case_job(self, offer: SessionOffer) -> CaseJob | None:
        if offer.case is None:
            return None
        if self.case_jobs is None:
            raise BadInputError(offer.case.key, "this evaluator runs no case sets")
        url = self.target.session_url(offer.session)
        return self.case_jobs(offer, url, self._live(offer, offer.seconds_per_key))

    def _live(self, offer: SessionOffer, seconds_per_key: float) -> LiveConfig:
        return LiveConfig(
            clock=offer.clock,
            seconds_per_key=seconds_per_key,
            no_frame_timeout_s=self.no_frame_timeout_s,
        )

    async def _evaluate(
        self, offer: SessionOffer, results_dir: Path, job: CaseJob | None = None
    ) -> EpisodeOutcome:
        from streameval.transports.mqtt.transport import MqttSource

        if job is not None:
            source: Any = job.open_source()
            observers = list(job.observers)
        else:
            source = MqttSource(
                SourceRequest(
                    self.target.session_url(offer.session),
                    offer.keys,
                    episode=offer.episode,
                    suite=offer.suite,
                    config=self._live(offer, offer.seconds_per_key),
                )
            )
            observers = []
        try:
            await source.connect()
        except BaseException:
            with contextlib.suppress(Exception):
                await source.close()
            raise
        clear_episode(results_dir)  # a session taken over starts from nothing
        # results.jsonl is shared with the other members writing into the same --out
        log = ResultsLog(self.out / RESULTS_LOG)
        return await run_episode(
            source, config=self.config, results_dir=results_dir, observers=[log, *observers]
        )


async def offer_sessions(broker_url: str, group: str, offers: list[SessionOffer]) -> None:
    """Publish ``offers`` to the pool (each reaches exactly one member)."""
    target = broker_target(broker_url)
    topic = offers_topic(check_name("group", group))
    async with _client(target) as client:
        for offer in offers:
            await client.publish(topic, encode(offer.to_json()), qos=1)


async def read_pool(broker_url: str, group: str, wait_s: float = 1.0) -> PoolView:
    """Every retained claim and liveness of ``group``, as a newcomer would see them."""
    target = broker_target(broker_url)
    view = PoolView()
    async with _client(target) as client:
        await client.subscribe(f"{POOL_ROOT}/{group}/evaluators/+", qos=1)
        await client.subscribe(f"{POOL_ROOT}/{group}/claims/+", qos=1)

        async def collect() -> None:
            async for msg in client.messages:
                payload = msg.payload if isinstance(msg.payload, bytes | bytearray) else b""
                with contextlib.suppress(PoolMessageError):
                    view.update(group, str(msg.topic), bytes(payload))

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(collect(), wait_s)
    return view
