"""The press repeater stops when the key changes, whatever the event loop is doing.

Python 3.11's ``asyncio.wait_for`` returns the inner result instead of raising when it is
cancelled in the loop turn its inner future completes: a repeater waiting for a chunk boundary
with ``wait_for`` then ignored the keyup's cancel, the keyup waited for it forever and the
episode never ended (a CI run: 300 s, the press-per-chunk MJPEG style). Timed, not wrapped in
a timeout: the old stop swallowed a timeout's cancel too, so only the clock shows the hang."""

from __future__ import annotations

import asyncio
import time

import pytest

from streameval.transports.profiles import load_profile
from streameval.transports.profiles.keychannel import KeyChannel


class _Sent:
    def __init__(self) -> None:
        self.payloads: list[str | bytes] = []

    async def send(self, payload: str | bytes) -> None:
        self.payloads.append(payload)


@pytest.mark.timeout(30)  # the old stop hung here for good
@pytest.mark.parametrize("turns", range(6))
def test_a_boundary_and_a_keyup_in_the_same_turn_stop_the_repeater(turns: int) -> None:
    async def scenario() -> None:
        profile = load_profile("gamecraft")
        out = _Sent()
        lost: list[str] = []
        channel = KeyChannel(profile, {}, out, fps=16.0, episode="e", on_lost=lost.append)
        await channel.key("keydown", "W")
        await asyncio.sleep(0.01)  # the repeater waits for a boundary
        channel.chunk_closed()
        for _ in range(turns):  # every interleaving of the boundary and the cancel
            await asyncio.sleep(0)
        t0 = time.perf_counter()
        await channel.key("keyup", "W")
        assert time.perf_counter() - t0 < 0.5, "keyup waited for the repeater"
        presses = len(out.payloads)
        await asyncio.sleep(0.05)
        channel.chunk_closed()
        await asyncio.sleep(0.05)
        assert len(out.payloads) == presses, "the repeater pressed after keyup"
        assert not lost
        await channel.close()

    asyncio.run(scenario())
