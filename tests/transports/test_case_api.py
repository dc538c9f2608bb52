"""``streameval.evaluate(cases=..., attach=AttachOptions(profile=...))`` against a server:
the same case run as ``attach URL --cases`` — every case one session started from its image
(the WorldFoundry-style test server records what it read), a case the server refuses ends
incomplete with the server's words and the rest are scored, and a profile that cannot send
the cases' images is one ``BadInputError`` before anything runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from streameval.api import aevaluate, evaluate
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.runs.cases import CaseSelection
from streameval.transports.urls import AttachOptions
from tests.cases.arena_synth import write_arena
from tests.transports.case_servers import Received, start_app, worldfoundry_case_app
from tests.transports.watchdog import watchdog

pytestmark = pytest.mark.xdist_group("case-servers")

REFUSED = "Scene 1 of third_view/style"


def test_evaluate_runs_cases_on_a_server(tmp_path: Path) -> None:
    arena = write_arena(tmp_path / "arena_inputs")
    selection = CaseSelection(arena, sets="third_view/style", seed=None)
    received: list[Received] = []
    options = AttachOptions(clock=None, seconds_per_key=0.5, profile="worldfoundry",
                            no_frame_timeout_s=8.0)  # fmt: skip

    async def main() -> object:
        app = worldfoundry_case_app(tmp_path / "uploads", received, refuse=REFUSED)
        runner, port = await start_app(app)
        dog = asyncio.create_task(watchdog(asyncio.current_task(), 240.0))
        try:
            return await aevaluate(
                f"ws://127.0.0.1:{port}/api/realtime/ws",
                cases=selection,
                out=tmp_path / "out",
                model_name="wf",
                seconds_per_key=0.5,
                reports=False,
                record="off",
                attach=options,
                config=PipelineConfig(cuts="scenedetect-content"),
            )
        finally:
            dog.cancel()
            await runner.cleanup()

    result = asyncio.run(main())
    outcomes = result.outcomes  # type: ignore[attr-defined]
    cases = selection.load().cases
    assert len(outcomes) == len(received) == len(cases) > 1
    for outcome in outcomes:
        assert outcome.case is not None
        reasons = " | ".join(e.message for e in outcome.errors)
        if outcome.case["image"] == "001":  # its caption is the one the server refuses
            assert not outcome.complete
            assert "the server refused the session: ValueError: prompt refused" in reasons
        else:
            assert outcome.complete, reasons
            assert outcome.conditioning is not None and outcome.conditioning["honoured"] is True
    assert {r.image_sha256 for r in received if r.image_sha256} == {
        c.image_sha256 for c in cases if REFUSED not in str(c.prompt)
    }
    recorded = json.loads((tmp_path / "out" / "wf" / "cases.json").read_text())
    assert recorded["cases"] == len(cases)


def test_evaluate_refuses_cases_a_profile_cannot_send(tmp_path: Path) -> None:
    arena = write_arena(tmp_path / "arena_inputs")
    keycode = AttachOptions(clock=None, seconds_per_key=0.5, profile="keycode")
    with pytest.raises(BadInputError, match="profile 'keycode' sends no image"):
        evaluate("webrtc+http://127.0.0.1:1/offer", cases=arena, out=tmp_path, attach=keycode)
    lossless = AttachOptions(clock=None, seconds_per_key=0.5, lossless=True)
    with pytest.raises(BadInputError, match=r"our protocol .* does not carry"):
        evaluate("webrtc+http://127.0.0.1:1/offer", cases=arena, out=tmp_path, attach=lossless)
    assert not (tmp_path / "m").exists()
