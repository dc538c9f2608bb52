"""Pool messages and the pool's bookkeeping, without a broker."""

from __future__ import annotations

import json

import pytest

from streameval.errors import PoolMessageError
from streameval.scale.pool import PoolView
from streameval.scale.pool_messages import (
    CaseRef,
    Claim,
    SessionOffer,
    case_claim_key,
    check_name,
    claim_topic,
    decode,
    encode,
    evaluator_topic,
    shared_offers_topic,
)

OFFER = SessionOffer("s1", "009_WR", ("W", "R"), 2.0)


def test_offer_and_claim_round_trip_through_json() -> None:
    assert SessionOffer.from_json(decode(encode(OFFER.to_json()))) == OFFER
    claim = Claim(OFFER.again("evaluator ev-a lost"), "ev-b", "done", 12.5, "/o/s1", True)
    back = Claim.from_json(decode(encode(claim.to_json())))
    assert back == claim and back.offer.attempt == 2 and back.session == "s1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"session": "a/#"}, "session 'a/#'"),
        ({"keys": ["W", "Q"]}, "keys must be"),
        ({"keys": []}, "keys must be"),
        ({"seconds_per_key": 0}, "seconds_per_key"),
        ({"clock": "lunar"}, "clock must be"),
        ({"attempt": 0}, "attempt"),
    ],
)
def test_bad_offers_are_refused_with_the_reason(change: dict[str, object], message: str) -> None:
    with pytest.raises(PoolMessageError, match="offer") as err:
        SessionOffer.from_json({**OFFER.to_json(), **change})
    assert message in str(err.value)


def test_oversized_and_non_json_payloads_are_refused() -> None:
    with pytest.raises(PoolMessageError, match="bytes"):
        decode(b"[" + b"1," * 40000 + b"1]")
    with pytest.raises(PoolMessageError, match="not JSON"):
        decode(b"\xff\xfe")


def test_topics_keep_sessions_apart_and_offers_shared() -> None:
    assert shared_offers_topic("g") == "$share/g/streameval/pool/g/offers"
    assert claim_topic("g", "s1") == "streameval/pool/g/claims/s1"
    assert evaluator_topic("g", "ev-a") == "streameval/pool/g/evaluators/ev-a"


def _claim(session: str, evaluator: str, state: str) -> bytes:
    offer = SessionOffer(session, "009_WR", ("W", "R"), 2.0)
    return json.dumps(Claim(offer, evaluator, state, 0.0).to_json()).encode()  # type: ignore[arg-type]


def test_orphans_are_open_claims_of_gone_evaluators_and_the_leader_is_the_first_alive() -> None:
    view = PoolView()
    for name, state in (("ev-b", "alive"), ("ev-a", "lost"), ("ev-c", "stopped"), ("ev-0", "lost")):
        view.update("g", evaluator_topic("g", name), json.dumps({"state": state}).encode())
    rows = [
        ("s0", "ev-a", "evaluating"),  # orphan
        ("s1", "ev-a", "queued"),  # orphan
        ("s2", "ev-a", "done"),  # finished before ev-a died: accounted
        ("s3", "ev-c", "queued"),  # stopped evaluator: orphan
        ("s4", "ev-b", "evaluating"),  # alive
        ("s5", "ev-a", "lost"),  # already offered again
    ]
    for session, evaluator, state in rows:
        view.update("g", claim_topic("g", session), _claim(session, evaluator, state))
    assert sorted(c.session for c in view.orphans()) == ["s0", "s1", "s3"]
    assert view.leader() == "ev-b"
    view.update("g", claim_topic("g", "s0"), b"")  # a cleared retained claim
    assert "s0" not in view.claims
    assert view.update("g", "streameval/s0/frames", b"x") is None


def test_pool_commands_name_the_broker_they_cannot_reach(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from streameval.cli.main import main
    from tests.transports.conftest import free_port

    url = f"mqtt://127.0.0.1:{free_port()}"
    for argv in (["pool", "status", url], ["pool", "offer", url, "s1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {url}: cannot reach the broker")
    assert main(["pool", "status", f"{url}/s1"]) == 2
    assert "names the broker only" in capsys.readouterr().err


CASE = CaseRef("first_view/real/000_006", "procedural-world[clean]", "/data/arena", "first_view",
               "0-4", "6", 3)  # fmt: skip


def test_a_case_offer_round_trips_and_its_claim_is_the_case_s() -> None:
    offer = SessionOffer("gpu0", "000_006", ("W", "S"), 0.5, case=CASE)
    back = SessionOffer.from_json(decode(encode(offer.to_json())))
    assert back == offer and back.case == CASE
    # the claim is keyed by the run's model and the case, whichever session runs it
    on_other = SessionOffer("gpu1", "000_006", ("W", "S"), 0.5, case=CASE)
    assert offer.claim_key == on_other.claim_key != OFFER.claim_key == "s1"
    assert check_name("claim", offer.claim_key) == offer.claim_key  # a topic level
    assert offer.claim_key.startswith("procedural-world_clean_.first_view.real.000_006-")
    # names cleaned alike still get two keys
    assert case_claim_key("m", "a/b") != case_claim_key("m", "a.b")
    assert "case" not in OFFER.to_json()  # an offer without a case, as before


@pytest.mark.parametrize(
    "case",
    ["x", {"key": "k", "model": "m"}, {"key": "", "model": "m", "source": "s"},
     {"key": "k", "model": "m", "source": "s", "seed": "3"},
     {"key": "k" * 5000, "model": "m", "source": "s"}],
)  # fmt: skip
def test_a_malformed_case_in_an_offer_is_one_line(case: object) -> None:
    doc = {**OFFER.to_json(), "case": case}
    with pytest.raises(PoolMessageError, match="offer"):
        SessionOffer.from_json(doc)
