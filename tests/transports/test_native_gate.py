"""The native-frame gate of a stream-mode session (``transports/native_gate.py``): frames held
until the native rate is known, only native ones handed over, the rate from the announced fps
and the cadence, and every received frame kept for the cache and the recording."""

from __future__ import annotations

import numpy as np
from streameval.protocol.wire import Frame

from streameval.core.episode.timing import ReceivedFrames
from streameval.transports.native_gate import DECIDE_AFTER, NativeGate
from tests.metrics.test_native_frames import _noisy, _scene


def _feed(gate: NativeGate, images: list[np.ndarray], rate: float) -> list[Frame]:
    out: list[Frame] = []
    for i, image in enumerate(images):
        out += [f for f, _ in gate.push(Frame(index=i, key=None, image=image), i / rate)]
    out += [f for f, _ in gate.flush()]
    return out


def test_an_honest_stream_passes_whole_after_the_first_frames() -> None:
    rng = np.random.default_rng(0)
    images = [_noisy(f, rng) for f in _scene(60)]
    gate = NativeGate(16.0, classify=True)
    handed: list[Frame] = []
    for i, image in enumerate(images[: DECIDE_AFTER - 1]):
        handed += [f for f, _ in gate.push(Frame(index=i, key=None, image=image), i / 16)]
    assert handed == [] and not gate.decided and gate.first_held() == 0
    for i, image in enumerate(images[DECIDE_AFTER - 1 :], DECIDE_AFTER - 1):
        handed += [f for f, _ in gate.push(Frame(index=i, key=None, image=image), i / 16)]
    assert gate.decided and gate.first_held() == len(images) - 1  # the look-ahead frame
    handed += [f for f, _ in gate.flush()]
    assert [f.index for f in handed] == list(range(60))
    assert gate.native_fps == 16.0 and gate.live_counts == [60, 0, 0]


def _doubled(announced: float, rate: float) -> tuple[NativeGate, list[Frame]]:
    rng = np.random.default_rng(1)
    images = [_noisy(f, rng, 0.5) for f in _scene(40) for _ in range(2)]
    gate = NativeGate(announced, classify=True)
    return gate, _feed(gate, images, rate)


def test_a_doubling_server_runs_at_its_native_rate_whatever_it_announced() -> None:
    for announced in (32.0, 16.0):  # the padded rate, or the model's own (the profile's)
        gate, handed = _doubled(announced, 32.0)
        assert [f.index for f in handed] == list(range(0, 80, 2))
        assert gate.native_fps == 16.0, announced
        assert gate.live_counts == [40, 40, 0]


def test_what_the_gate_keeps_reads_back_as_the_cache_reads_it() -> None:
    gate, _ = _doubled(32.0, 32.0)
    times: dict[str, float | None] = {"connect": 1.0, "configure": None, "ready": 2.0}
    record = gate.record(times)
    assert record["classes"].count("r") == 40 and record["period"] == 2
    received = ReceivedFrames.from_record(record)
    assert received is not None and received.classes.size == 80 and received.period == 2
    assert np.isnan(received.session_times[1]) and received.session_times[2] == 2.0
    assert ReceivedFrames.from_record({"classes": "nx", "arrivals": [0, 1]}) is None


def test_step_mode_hands_every_frame_over_once() -> None:
    gate = NativeGate(16.0, classify=False)
    rng = np.random.default_rng(2)
    images = [_noisy(f, rng) for f in _scene(5)]
    assert [f.index for f in _feed(gate, images, 16.0)] == [0, 1, 2, 3, 4]
