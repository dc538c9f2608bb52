"""Live fan-out on a real mosquitto broker: evaluator processes sharing 4 served sessions.

The model servers (the procedural world, ``serve_mqtt``) and a monitor that records every
claim run in this process, on an event loop in a thread; the evaluators are real
``streameval pool evaluate`` processes, one of which is killed (SIGKILL) mid-episode.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("aiomqtt")

from streameval.cli.main import main
from streameval.results.results_log import RESULTS_LOG, read_lines
from streameval.scale.pool import offer_sessions, read_pool
from streameval.scale.pool_messages import Claim, SessionOffer, decode
from tests.transports.conftest import Broker, free_port
from tests.transports.worlds import NAME, world

GROUP = "g"
SESSIONS = ("s0", "s1", "s2", "s3")
SECONDS_PER_KEY = 1.0  # W then R: 32 frames, 2 s a session (the kill still lands mid-episode)
T = TypeVar("T")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    conf = tmp_path / "mosquitto.conf"
    port = free_port()
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    b = Broker(port, conf)
    try:
        b.start()
    except FileNotFoundError:
        pytest.skip("mosquitto is not installed (apt-get install -y mosquitto)")
    try:
        yield b
    finally:
        b.stop()


@dataclass
class Monitor:
    """Every claim message and evaluator state seen on the pool, in arrival order."""

    claims: list[Claim] = field(default_factory=list)
    evaluators: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def latest(self) -> dict[str, Claim]:
        with self.lock:
            return {c.session: c for c in self.claims}

    def states(self, session: str) -> list[tuple[str, str, int]]:
        with self.lock:
            return [
                (c.state, c.evaluator, c.offer.attempt) for c in self.claims if c.session == session
            ]


class Background:
    """An event loop in a thread for the servers and the monitor."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.submit(cancel_all()).result(timeout=20)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


async def _serve(broker: Broker, session: str, ready: asyncio.Event) -> None:
    from streameval.transports.mqtt.serve import serve_mqtt

    w = world()
    await serve_mqtt(
        w, broker.url(session), name=NAME, fps=w.fps, width=w.width, height=w.height, ready=ready
    )


async def _start_servers(broker: Broker) -> None:
    events = [asyncio.Event() for _ in SESSIONS]
    for session, ready in zip(SESSIONS, events, strict=True):
        asyncio.get_running_loop().create_task(_serve(broker, session, ready))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), 20)


async def _monitor(broker: Broker, monitor: Monitor, subscribed: asyncio.Event) -> None:
    import aiomqtt

    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe(f"streameval/pool/{GROUP}/claims/+", qos=1)
        await client.subscribe(f"streameval/pool/{GROUP}/evaluators/+", qos=1)
        subscribed.set()
        async for msg in client.messages:
            payload = msg.payload if isinstance(msg.payload, bytes) else b""
            topic = str(msg.topic)
            with monitor.lock:
                if "/claims/" in topic and payload:
                    monitor.claims.append(Claim.from_json(decode(payload)))
                elif "/evaluators/" in topic and payload:
                    state = decode(payload)
                    assert isinstance(state, dict)
                    monitor.evaluators[topic.rsplit("/", 1)[1]] = str(state["state"])


def _wait(
    what: str,
    condition: Callable[[], bool],
    timeout: float,
    explain: Callable[[], str] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))


def _evaluator(broker: Broker, name: str, out: Path, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "streameval", "pool", "evaluate", f"mqtt://127.0.0.1:{broker.port}",
        "--group", GROUP, "--name", name, "--out", str(out), "--cuts", "scenedetect-adaptive",
    ]  # fmt: skip
    with log.open("wb") as f:
        return subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT)


def _offers() -> list[SessionOffer]:
    return [SessionOffer(s, "009_WR", ("W", "R"), SECONDS_PER_KEY) for s in SESSIONS]


# Four real-time sessions, two evaluator processes and a SIGKILL on two shared cores: under
# the full suite's load one run in four did not see every session done within 120 s (not
# reproduced alone); one rerun, and the session states in the message when it fails.
@pytest.mark.flaky(reruns=1, only_rerun=["AssertionError"])
def test_two_evaluators_share_four_sessions_and_survive_a_killed_one(
    broker: Broker, tmp_path: Path
) -> None:
    url = f"mqtt://127.0.0.1:{broker.port}"
    out = tmp_path / "out"
    bg = Background()
    monitor = Monitor()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        bg.submit(_start_servers(broker)).result(timeout=30)
        subscribed = asyncio.Event()
        bg.submit(_monitor(broker, monitor, subscribed))
        bg.submit(asyncio.wait_for(subscribed.wait(), 10)).result(timeout=15)
        for name in ("ev-a", "ev-b"):
            procs[name] = _evaluator(broker, name, out, tmp_path / f"{name}.log")
        _wait(
            "both evaluators alive",
            lambda: all(monitor.evaluators.get(n) == "alive" for n in procs),
            180,  # an upper bound: parallel test workers slow the evaluators down
        )
        bg.submit(offer_sessions(url, GROUP, _offers())).result(timeout=10)

        # kill ev-a while it evaluates a session
        def a_evaluating() -> bool:
            return any(
                c.evaluator == "ev-a" and c.state == "evaluating" for c in monitor.latest().values()
            )

        _wait(
            "ev-a evaluating a session",
            a_evaluating,
            180,  # an upper bound: parallel test workers slow the evaluators down
            lambda: (
                f"claims {[(s, monitor.states(s)) for s in SESSIONS]}; ev-a log: "
                + (tmp_path / "ev-a.log").read_text(errors="replace")[-3000:]
            ),
        )
        time.sleep(0.5)
        held = {
            s for s, c in monitor.latest().items() if c.evaluator == "ev-a" and c.state != "done"
        }
        procs["ev-a"].send_signal(signal.SIGKILL)
        procs["ev-a"].wait(timeout=10)

        _wait(
            "every session done",
            lambda: (
                len(monitor.latest()) == 4
                and all(c.state == "done" for c in monitor.latest().values())
            ),
            120,
            lambda: ", ".join(
                f"{s}: {c.state} on {c.evaluator}" for s, c in sorted(monitor.latest().items())
            ),
        )
        assert monitor.evaluators["ev-a"] == "lost"  # the broker published its will
        assert held, "ev-a held no session when it was killed"
        for session in SESSIONS:
            states = monitor.states(session)
            # evaluated exactly once to the end
            assert [s for s in states if s[0] == "done"] == [states[-1]], states
            final = monitor.latest()[session]
            assert final.complete is True and final.results_dir == str(out / session)
            if session in held:
                # taken over: marked lost (reported), offered again, finished by ev-b
                assert ("lost", "ev-a", 1) in states, states
                assert states[-1] == ("done", "ev-b", 2), states
            assert (out / session / "scores.json").is_file()
        assert "evaluator ev-a lost" in (tmp_path / "ev-b.log").read_text()
        # both members wrote into one results.jsonl: one line per session, the final run's
        lines = read_lines(out / RESULTS_LOG)
        assert sorted(line["results_dir"] for line in lines) == sorted(
            str(out / s) for s in SESSIONS
        ), lines
        assert all(line["status"] == "complete" for line in lines), lines

        view = bg.submit(read_pool(url, GROUP)).result(timeout=10)
        assert view.orphans() == []
        assert main(["pool", "status", url, "--group", GROUP]) == 0
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
        bg.close()
    for name in procs:
        print((tmp_path / f"{name}.log").read_text())


def test_with_no_evaluator_left_sessions_are_reported_then_taken_over_by_a_newcomer(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"mqtt://127.0.0.1:{broker.port}"
    out = tmp_path / "out"
    bg = Background()
    monitor = Monitor()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        bg.submit(_start_servers(broker)).result(timeout=30)
        subscribed = asyncio.Event()
        bg.submit(_monitor(broker, monitor, subscribed))
        bg.submit(asyncio.wait_for(subscribed.wait(), 10)).result(timeout=15)
        procs["ev-a"] = _evaluator(broker, "ev-a", out, tmp_path / "ev-a.log")
        _wait("ev-a alive", lambda: monitor.evaluators.get("ev-a") == "alive", 180)
        bg.submit(offer_sessions(url, GROUP, _offers()[:2])).result(timeout=10)
        _wait(
            "ev-a evaluating, the other session queued",
            lambda: sorted(c.state for c in monitor.latest().values()) == ["evaluating", "queued"],
            180,  # an upper bound: parallel test workers slow the evaluators down
            lambda: (
                f"claims {[(s, monitor.states(s)) for s in SESSIONS[:2]]}; ev-a log: "
                + (tmp_path / "ev-a.log").read_text(errors="replace")[-3000:]
            ),
        )
        procs["ev-a"].send_signal(signal.SIGKILL)
        procs["ev-a"].wait(timeout=10)
        _wait("ev-a's will", lambda: monitor.evaluators.get("ev-a") == "lost", 10)

        capsys.readouterr()
        assert main(["pool", "status", url, "--group", GROUP]) == 1
        printed = capsys.readouterr().out
        for session in SESSIONS[:2]:
            line = next(x for x in printed.splitlines() if x.startswith(session))
            assert "ev-a (lost)" in line and "UNACCOUNTED" in line, printed

        procs["ev-n"] = _evaluator(broker, "ev-n", out, tmp_path / "ev-n.log")
        _wait(
            "both sessions done by the newcomer",
            lambda: (
                len(monitor.latest()) == 2
                and all(c.state == "done" for c in monitor.latest().values())
            ),
            120,
            lambda: ", ".join(
                f"{s}: {c.state} on {c.evaluator}" for s, c in sorted(monitor.latest().items())
            ),
        )
        for session in SESSIONS[:2]:
            states = monitor.states(session)
            assert ("lost", "ev-a", 1) in states and states[-1] == ("done", "ev-n", 2), states
            assert [s for s in states if s[0] == "done"] == [states[-1]]
        assert main(["pool", "status", url, "--group", GROUP]) == 0
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
        bg.close()
