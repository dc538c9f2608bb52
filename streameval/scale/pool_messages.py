"""What evaluators of one pool tell each other through the broker: offers, claims, liveness.

Topics (``GROUP`` names the pool; sessions keep their own ``streameval/SESSION/…`` topics):

- ``streameval/pool/GROUP/offers``: a session to evaluate (not retained). Evaluators read it
  through the shared subscription ``$share/GROUP/streameval/pool/GROUP/offers``, so the broker
  hands each offer to exactly one of them.
- ``streameval/pool/GROUP/claims/KEY`` (retained): who holds the session and where it
  stands (``KEY``: the session; for a benchmark case, the run's model and the case,
  ``case_claim_key``, so each case runs once whichever session and evaluator take it):
  ``queued`` → ``evaluating`` → ``done`` | ``failed``; ``lost`` when its evaluator
  died and the session was offered again. The claim carries the offer, so whoever takes a
  session over knows how to drive it.
- ``streameval/pool/GROUP/evaluators/ID`` (retained): ``alive``, ``stopped``; ``lost`` is
  the evaluator's last will, published by the broker when its connection dies.

Payloads are small JSON objects (readable with ``mosquitto_sub``), bounded in size and
validated: a malformed message is reported and ignored, never acted on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, cast, get_args

from streameval.errors import PoolMessageError

POOL_ROOT = "streameval/pool"
MAX_POOL_MESSAGE_BYTES = 64 * 1024

ClaimState = Literal["queued", "evaluating", "done", "failed", "lost"]
EvaluatorState = Literal["alive", "stopped", "lost"]
OPEN_STATES: tuple[ClaimState, ...] = ("queued", "evaluating")
"""A session in one of these states is held by its evaluator: if that one is gone, it is
orphaned and must be offered again."""


def offers_topic(group: str) -> str:
    return f"{POOL_ROOT}/{group}/offers"


def shared_offers_topic(group: str) -> str:
    """MQTT v5 shared subscription: one evaluator of ``group`` receives each offer."""
    return f"$share/{group}/{offers_topic(group)}"


def claim_topic(group: str, session: str) -> str:
    return f"{POOL_ROOT}/{group}/claims/{session}"


def evaluator_topic(group: str, evaluator: str) -> str:
    return f"{POOL_ROOT}/{group}/evaluators/{evaluator}"


def check_name(kind: str, name: str) -> str:
    """Group, session and evaluator names become topic levels: no wildcards, no slashes."""
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise PoolMessageError(f"{kind} {name!r}: use letters, digits, '-', '_', '.'")
    return name


MAX_CASE_FIELD = 4096  # a case key, model name or path in an offer, at most


def case_claim_key(model: str, case: str) -> str:
    """The claim topic level of ``case`` in the case run of ``model``: readable (slashes as
    dots, other characters a topic level must not hold as ``_``) and unique (a hash of both
    names: two names cleaned alike still get two keys)."""
    text = f"{model}.{case.replace('/', '.')}"
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in text)
    digest = hashlib.sha256(f"{model}\0{case}".encode()).hexdigest()[:10]
    return f"{safe[:100]}-{digest}"


@dataclass(frozen=True, slots=True)
class CaseRef:
    """A benchmark case of a case run shared out over the pool: the case (``key``, e.g.
    ``first_view/real/000_006``), the run's ``model`` (its results folder,
    ``OUT/<model>/<set>/<case>/``) and the selection it belongs to, which every evaluator
    reads from ``source`` itself (a path on a file system they share), exactly as
    ``attach --cases`` would: the image, caption and intrinsics never travel in an offer."""

    key: str
    model: str
    source: str
    sets: str | None = None
    images: str | None = None
    actions: str | None = None
    seed: int | None = 0

    @classmethod
    def from_json(cls, doc: object) -> CaseRef:
        if not isinstance(doc, dict):
            raise PoolMessageError("offer: case is not an object")

        def text(name: str, required: bool = False) -> str | None:
            value = doc.get(name)
            if value is None and not required:
                return None
            if not isinstance(value, str) or not value or len(value) > MAX_CASE_FIELD:
                raise PoolMessageError(f"offer: case {name} must be text (≤ {MAX_CASE_FIELD})")
            return value

        seed = doc.get("seed", 0)
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise PoolMessageError(f"offer: case seed must be an integer, got {seed!r}")
        return cls(
            key=str(text("key", True)),
            model=str(text("model", True)),
            source=str(text("source", True)),
            sets=text("sets"),
            images=text("images"),
            actions=text("actions"),
            seed=seed,
        )


@dataclass(frozen=True, slots=True)
class SessionOffer:
    """A session to evaluate and how to drive it; ``attempt`` grows each time it is offered
    again after its evaluator was lost."""

    session: str
    episode: str
    keys: tuple[str, ...]
    seconds_per_key: float
    suite: str = "worldmark"
    clock: Literal["video", "wall"] = "video"
    attempt: int = 1
    reason: str | None = None
    case: CaseRef | None = None  # a benchmark case to run on the session (older peers: none)

    @property
    def claim_key(self) -> str:
        """Where this offer's claim lives: the session, or the case of a case run."""
        if self.case is None:
            return self.session
        return case_claim_key(self.case.model, self.case.key)

    def again(self, reason: str) -> SessionOffer:
        return replace(self, attempt=self.attempt + 1, reason=reason)

    def to_json(self) -> dict[str, Any]:
        doc = {**asdict(self), "keys": list(self.keys)}
        if self.case is None:
            doc.pop("case")  # an offer of before, to the letter
        return doc

    @classmethod
    def from_json(cls, doc: object) -> SessionOffer:
        if not isinstance(doc, dict):
            raise PoolMessageError("offer is not an object")
        try:
            keys = tuple(str(k) for k in doc["keys"])
            offer = cls(
                session=check_name("session", str(doc["session"])),
                episode=check_name("episode", str(doc["episode"])),
                keys=keys,
                seconds_per_key=float(doc["seconds_per_key"]),
                suite=str(doc.get("suite", "worldmark")),
                clock=doc.get("clock", "video"),
                attempt=int(doc.get("attempt", 1)),
                reason=None if doc.get("reason") is None else str(doc["reason"]),
                case=None if doc.get("case") is None else CaseRef.from_json(doc["case"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PoolMessageError(f"offer: {exc}") from None
        if offer.clock not in ("video", "wall"):
            raise PoolMessageError(f"offer: clock must be video or wall, got {offer.clock!r}")
        if not keys or any(k not in "WSADLR-" or len(k) != 1 for k in keys):
            raise PoolMessageError(f"offer: keys must be W S A D L R or -, got {list(keys)}")
        if not offer.seconds_per_key > 0 or offer.attempt < 1:
            raise PoolMessageError("offer: seconds_per_key must be > 0 and attempt ≥ 1")
        return offer


@dataclass(frozen=True, slots=True)
class Claim:
    """Where one session stands in the pool (retained on its claim topic)."""

    offer: SessionOffer
    evaluator: str
    state: ClaimState
    t: float  # wall time of this state (epoch seconds)
    results_dir: str | None = None
    complete: bool | None = None
    reason: str | None = None

    @property
    def session(self) -> str:
        return self.offer.session

    @property
    def key(self) -> str:
        """The claim's topic level (``SessionOffer.claim_key``)."""
        return self.offer.claim_key

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "offer": self.offer.to_json()}

    @classmethod
    def from_json(cls, doc: object) -> Claim:
        if not isinstance(doc, dict):
            raise PoolMessageError("claim is not an object")
        state = doc.get("state")
        if state not in get_args(ClaimState):
            raise PoolMessageError(f"claim: unknown state {state!r}")
        try:
            return cls(
                offer=SessionOffer.from_json(doc["offer"]),
                evaluator=check_name("evaluator", str(doc["evaluator"])),
                state=cast(ClaimState, state),
                t=float(doc["t"]),
                results_dir=None if doc.get("results_dir") is None else str(doc["results_dir"]),
                complete=None if doc.get("complete") is None else bool(doc["complete"]),
                reason=None if doc.get("reason") is None else str(doc["reason"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PoolMessageError(f"claim: {exc}") from None


def encode(doc: dict[str, Any]) -> bytes:
    data = json.dumps(doc, separators=(",", ":")).encode()
    if len(data) > MAX_POOL_MESSAGE_BYTES:
        raise PoolMessageError(f"message of {len(data)} bytes > {MAX_POOL_MESSAGE_BYTES}")
    return data


def decode(payload: bytes) -> object:
    if len(payload) > MAX_POOL_MESSAGE_BYTES:
        raise PoolMessageError(f"message of {len(payload)} bytes > {MAX_POOL_MESSAGE_BYTES}")
    try:
        return json.loads(payload)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PoolMessageError(f"not JSON: {exc}") from None


def evaluator_state(payload: bytes) -> EvaluatorState:
    doc = decode(payload)
    state = doc.get("state") if isinstance(doc, dict) else None
    if state not in get_args(EvaluatorState):
        raise PoolMessageError(f"evaluator state {state!r}")
    return cast(EvaluatorState, state)
