"""Faults over a real broker: each keeps the episode (and its recording), marks it
incomplete when it cannot go on, says why in one line, and counts what it dropped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import msgpack
import pytest
from streameval.protocol.wire import Bye, encode

from streameval.cli.main import main
from streameval.core.observers import EpisodeObserver, EpisodeOutcome, FrameEvent
from streameval.core.tasks import cancel_and_wait
from streameval.engine.pipeline import run_episode
from streameval.engine.recording import RecordingObserver
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.mqtt.transport import MqttSource
from tests.transports.conftest import Broker
from tests.transports.scripted import Script, good, scripted_server
from tests.transports.watchdog import watchdog
from tests.transports.worlds import CONFIG

TOTAL = 32  # one key held 2 s at 16 fps


async def _episode(
    broker: Broker, script: Script, out: Path, timeout_s: float = 10.0, **kw: int
) -> EpisodeOutcome:
    """One episode against the scripted server. Bounded everywhere: a server that dies before
    it is ready raises here, a hang prints every task's stack (watchdog), and the server's
    teardown waits at most 10 s (an MQTT client cancelled mid-exchange need not end at once)."""
    ready = asyncio.Event()
    server = asyncio.create_task(scripted_server(broker.port, "f", script, ready))
    dog = asyncio.create_task(watchdog(asyncio.current_task()))
    try:
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({server, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            waiting.cancel()
            server.result()  # the server's own error (it ended before it was ready)
            raise RuntimeError("scripted server ended before it was ready")
        source = MqttSource(
            SourceRequest(
                broker.url("f"),
                ("A",),
                episode="fault",
                suite="test",
                config=LiveConfig(clock="video", seconds_per_key=2.0, no_frame_timeout_s=timeout_s),
            ),
            **kw,
        )
        await source.connect()
        return await run_episode(
            source, config=CONFIG, results_dir=out, observers=[RecordingObserver(out / "rec")]
        )
    finally:
        dog.cancel()
        await cancel_and_wait([server], 10.0)


class _FrameWatch(EpisodeObserver):
    """Calls ``then`` once, when the ``n``-th frame has been scored."""

    def __init__(self, n: int, then: Callable[[], object]) -> None:
        self.n, self.then, self.seen = n, then, 0

    def on_frame(self, event: FrameEvent) -> None:
        self.seen += 1
        if self.seen == self.n:
            self.then()


def _recorded_frames(out: Path) -> int:
    return len((out / "rec" / "actions.jsonl").read_text().splitlines())


def _scores(out: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads((out / "scores.json").read_text())
    return doc


def test_server_unreachable_is_bad_input_naming_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "mqtt://127.0.0.1:9/nobody"
    assert main(["attach", url, "--out", str(tmp_path), "--actions", "1", "--no-tui"]) == 2
    err = capsys.readouterr().err
    assert f"error: {url}: cannot connect to the broker" in err
    assert "Traceback" not in err


def test_disconnect_mid_episode_keeps_what_came(broker: Broker, tmp_path: Path) -> None:
    def script(i: int, key: str) -> list[bytes]:
        return [good(i, key)] if i < 10 else [encode(Bye("crashed"))] if i == 10 else []

    outcome = asyncio.run(_episode(broker, script, tmp_path, timeout_s=5.0))
    assert not outcome.complete
    assert outcome.frames == 10 and _recorded_frames(tmp_path) == 10
    doc = _scores(tmp_path)
    assert doc["complete"] is False
    assert any("server left: crashed" in str(e) for e in outcome.errors)


def test_stalled_server_ends_the_episode_after_the_timeout(broker: Broker, tmp_path: Path) -> None:
    outcome = asyncio.run(
        _episode(broker, lambda i, k: [good(i, k)] if i < 12 else [], tmp_path, timeout_s=1.0)
    )
    assert not outcome.complete
    assert outcome.frames == 12 and _recorded_frames(tmp_path) == 12
    assert any("stalled: no frame for 1 s" in str(e) for e in outcome.errors)
    assert json.loads((tmp_path / "rec" / "meta.json").read_text())["complete"] is False


def test_duplicates_out_of_order_and_gaps_are_dropped_and_counted(
    broker: Broker, tmp_path: Path
) -> None:
    def script(i: int, key: str) -> list[bytes]:
        if i == 5:
            return [good(5, key), good(5, key)]  # duplicate
        if i == 8:
            return []  # never sent: a gap (frame 9 comes first)
        if i == 9:
            return [good(9, key), good(8, key)]  # 8 after 9: out of order
        return [good(i, key)]

    outcome = asyncio.run(_episode(broker, script, tmp_path))
    inter = outcome.interactivity
    assert outcome.complete, outcome.errors
    assert (inter["frames_duplicate"], inter["frames_out_of_order"], inter["frames_missing"]) == (
        1,
        1,
        1,
    )
    assert outcome.frames == TOTAL - 1
    assert any("frame 5 duplicate" in str(e) for e in outcome.errors)
    assert any("frame 8 out of order" in str(e) for e in outcome.errors)


def test_malformed_truncated_oversized_and_undecodable_messages(
    broker: Broker, tmp_path: Path
) -> None:
    jpeg_garbage = msgpack.packb(
        {"t": "frame", "i": 99, "key": "A", "w": 96, "h": 64, "enc": "jpeg", "img": b"\xff\xd8xx"}
    )

    def script(i: int, key: str) -> list[bytes]:
        junk = {
            3: [b"\x00not msgpack at all"],
            4: [good(i, key)[:100]],  # truncated
            6: [b"\x01" * 300_000],  # over the limit below
            7: [jpeg_garbage],
            9: [
                msgpack.packb(
                    {"t": "frame", "i": 9, "key": "A", "w": 96, "h": 64, "enc": "raw", "img": b"12"}
                )
            ],
        }.get(i, [])
        return [*junk, good(i, key)]

    outcome = asyncio.run(_episode(broker, script, tmp_path, max_message_bytes=200_000))
    assert outcome.complete, outcome.errors
    assert outcome.frames == TOTAL
    assert outcome.interactivity["malformed"] == 5
    errors = " | ".join(str(e) for e in outcome.errors)
    assert "not a msgpack message" in errors
    assert "over the 200000-byte limit" in errors
    assert "jpeg frame of 4 bytes does not decode" in errors
    assert "raw frame of 2 bytes" in errors
    assert len(outcome.errors) == 5  # one line each; frames intact


def test_frame_size_change_ends_the_episode_keeping_earlier_frames(
    broker: Broker, tmp_path: Path
) -> None:
    def script(i: int, key: str) -> list[bytes]:
        return [good(i, key)] if i < 15 else [good(i, key, width=64, height=48)]

    outcome = asyncio.run(_episode(broker, script, tmp_path))
    assert not outcome.complete
    assert outcome.frames == 15 and _recorded_frames(tmp_path) == 15
    assert any(
        "frame size changed from 96x64 to 64x48 at server frame 15" in str(e)
        for e in outcome.errors
    )
    assert _scores(tmp_path)["complete"] is False


def test_broker_restart_reconnects_and_reports_the_gap(broker: Broker, tmp_path: Path) -> None:
    from streameval.transports.mqtt.serve import serve_mqtt
    from tests.transports.load_servers import Panner

    async def run() -> EpisodeOutcome:
        ready = asyncio.Event()
        url = broker.url("restart")
        server = asyncio.create_task(
            serve_mqtt(Panner(), url, name="panner", fps=16.0, width=640, height=432, ready=ready)
        )
        await ready.wait()

        # the broker goes away once frames flow (not at a fixed time: on a busy machine the
        # episode may start later than 1 s after the server, and then it would see no gap)
        loop = asyncio.get_running_loop()
        flowing = asyncio.Event()
        watch = _FrameWatch(16, lambda: loop.call_soon_threadsafe(flowing.set))

        async def restart() -> None:
            await asyncio.wait_for(flowing.wait(), 60.0)
            await asyncio.to_thread(broker.stop)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(broker.start)

        restarter = asyncio.create_task(restart())
        try:
            source = MqttSource(
                SourceRequest(
                    url,
                    ("A", "D"),
                    episode="restart",
                    suite="test",
                    config=LiveConfig(clock="video", seconds_per_key=4.0, no_frame_timeout_s=40.0),
                )
            )
            await source.connect()
            return await run_episode(
                source, config=CONFIG, observers=[RecordingObserver(tmp_path / "rec"), watch]
            )
        finally:
            await restarter
            server.cancel()
            await asyncio.gather(server, return_exceptions=True)

    outcome = asyncio.run(run())
    inter = outcome.interactivity
    assert outcome.complete, outcome.errors
    assert inter["reconnects"] >= 1
    # every frame is either received (and recorded; perception may drop some when the
    # machine is busy, counted apart) or counted as missing: nothing vanishes silently
    assert inter["frames_received"] + inter["frames_missing"] == 128
    assert _recorded_frames(tmp_path) == inter["frames_received"]
    assert outcome.frames <= inter["frames_received"]
