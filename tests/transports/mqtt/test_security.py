"""MQTT security over a real mosquitto: a TLS listener signed by a test CA and a password
file. A procedural world is served and attached over ``mqtts://USER:PASS@…`` and scored;
a wrong password and an untrusted certificate each end every command with one line naming
the URL (password redacted) and exit 2; the password is in no output and no results file."""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import aiomqtt
import pytest

from streameval.cli.main import main
from streameval.transports.mqtt.remote_watch import check_broker
from streameval.transports.mqtt.url import parse_mqtt_url
from tests.transports.conftest import Broker
from tests.transports.tls_broker import PASSWORD, USER, Pki, make_pki, start_tls_broker

# the procedural world at 320×216 (tests/transports/worlds.py): nothing here is about the size
WORLD = "python:tests.transports.worlds:world"
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Secure:
    broker: Broker
    pki: Pki

    def base(self, password: str = PASSWORD) -> str:
        return f"mqtts://{USER}:{password}@127.0.0.1:{self.broker.port}"

    def url(self, session: str, password: str = PASSWORD, query: str | None = None) -> str:
        return f"{self.base(password)}/{session}?{query or f'cafile={self.pki.ca}'}"


def _need_mosquitto() -> None:
    missing = [t for t in ("mosquitto", "mosquitto_passwd") if not _which(t)]
    if missing:
        if os.environ.get("STREAMEVAL_REQUIRE_BROKER"):
            pytest.fail(f"{', '.join(missing)} not installed (apt-get install -y mosquitto)")
        pytest.skip(f"{', '.join(missing)} not installed (.ci/run installs mosquitto)")


def _which(tool: str) -> bool:
    return bool(shutil.which(tool) or Path(f"/usr/sbin/{tool}").exists())


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[Secure]:
    _need_mosquitto()
    pki = make_pki(tmp_path / "pki")
    broker = start_tls_broker(tmp_path / "pki", pki)
    try:
        yield Secure(broker, pki)
    finally:
        broker.stop()


@pytest.fixture
def untrusted(tmp_path: Path) -> Iterator[Secure]:
    """A broker whose certificate is signed by a CA that no client here trusts."""
    _need_mosquitto()
    pki = make_pki(tmp_path / "pki")
    broker = start_tls_broker(tmp_path / "pki", pki, untrusted=True)
    try:
        yield Secure(broker, pki)
    finally:
        broker.stop()


def _stop(proc: subprocess.Popen[bytes]) -> bytes:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or b""


def _lines_until(stream: IO[bytes], marker: str, timeout_s: float) -> list[str]:
    """Lines of a child's output up to the one holding ``marker`` (or the deadline)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = stream.readline().decode()
        if not line:
            break
        lines.append(line)
        if marker in line:
            break
    return lines


def _files_text(folder: Path) -> str:
    """Every text file the run wrote (scores.json, results.jsonl, recording metadata)."""
    texts = []
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".txt", ".html", ".csv"):
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def test_served_world_is_attached_over_tls_with_a_password_and_scored(
    secure: Secure, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    url = secure.url("secure")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "streameval", "serve", WORLD, "--mqtt", url],
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    # the live scores go over TLS too, and a remote dashboard reads them back
    watcher = subprocess.Popen(
        [sys.executable, "-m", "streameval", "dashboard", "--mqtt", url, "--no-tui"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        bufsize=0,  # unbuffered pipes: select() sees every line readline has not taken
    )
    try:
        # each says so once the broker took its connection (TLS and password accepted)
        assert server.stderr is not None and watcher.stderr is not None
        served_line = server.stderr.readline().decode()
        assert served_line.startswith("serving"), served_line
        watching = watcher.stderr.readline().decode()
        assert watching.startswith("watching"), watching
        out = tmp_path / "out"
        args = ["attach", url, "--out", str(out), "--actions", "8", "--seconds-per-key", "1"]
        status = main([*args, "--no-tui", "--publish-mqtt", url, "--cuts", "scenedetect-adaptive"])
        assert status == 0
        (scores_path,) = out.glob("*/008_AD/scores.json")
        scores = json.loads(scores_path.read_text())
        assert scores["complete"] is True and scores["frames"] == 32
        assert scores["interactivity"]["transport"] == "mqtt"
        assert any(m["normalized"] is not None for m in scores["metrics"].values())
        assert watcher.stdout is not None
        watched_lines = _lines_until(watcher.stdout, "final (", timeout_s=30.0)
    finally:
        served_err = served_line + _stop(server).decode()
        watcher.send_signal(signal.SIGINT)
        rest, watch_err = watcher.communicate(timeout=10)
    watched = "".join(watched_lines).encode() + rest
    assert "final (complete, 32 frames)" in watched.decode(), watch_err.decode()
    watch_err = watching.encode() + watch_err
    ours = capfd.readouterr()
    # redacted where the URL is named, absent everywhere
    assert f"mqtts://{USER}@127.0.0.1:{secure.broker.port}/secure" in served_err
    for text in (ours.out, ours.err, served_err, watched.decode(), watch_err.decode()):
        assert PASSWORD not in text
    written = _files_text(out)
    assert "mqtts://evaluator@127.0.0.1" in written  # the source is named, without password
    assert PASSWORD not in written


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def test_wrong_password_is_one_clear_line_and_exit_2(
    secure: Secure, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "not-the-password"
    url = secure.url("secure", password=wrong)
    shown = f"mqtts://{USER}@127.0.0.1:{secure.broker.port}"
    refused = "refused the user name or password"
    out = str(tmp_path / "out")
    commands = [
        ["attach", url, "--out", out, "--actions", "8", "--seconds-per-key", "1", "--no-tui"],
        ["serve", WORLD, "--mqtt", url],
        ["dashboard", "--mqtt", url, "--no-tui"],
        ["pool", "status", f"{secure.base(wrong)}?cafile={secure.pki.ca}"],
        ["pool", "offer", f"{secure.base(wrong)}?cafile={secure.pki.ca}", "s1"],
        ["pool", "evaluate", f"{secure.base(wrong)}?cafile={secure.pki.ca}", "--out", out],
    ]
    for argv in commands:
        line = _one_line_exit_2(argv, capsys, shown, refused)
        assert wrong not in line
    # the live screen checks the broker before it opens (a terminal is needed to open it)
    with pytest.raises(aiomqtt.MqttError, match="Not authorized"):
        asyncio.run(check_broker(url))
    asyncio.run(check_broker(secure.url("secure")))


def test_untrusted_certificate_is_one_clear_line_and_exit_2(
    untrusted: Secure, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "out")
    not_trusted = "TLS certificate is not trusted"
    # trusting our CA (not the broker's), and trusting only the system's CAs
    for query in (f"cafile={untrusted.pki.ca}", None):
        url = untrusted.url("secure", query=query) if query else f"{untrusted.base()}/secure"
        attach = ["attach", url, "--out", out, "--actions", "8", "--seconds-per-key", "1"]
        _one_line_exit_2([*attach, "--no-tui"], capsys, not_trusted, "127.0.0.1")
    _one_line_exit_2(["pool", "status", f"{untrusted.base()}"], capsys, not_trusted)
    # verification is skipped only when the URL asks for it
    assert main(["pool", "status", f"{untrusted.base()}?insecure=1"]) == 0


def test_client_certificate_and_pool_session_urls_keep_the_options(secure: Secure) -> None:
    pki = secure.pki
    broker = f"{secure.base()}?cafile={pki.ca}&cert={pki.client_cert}&key={pki.client_key}"
    assert main(["pool", "status", broker]) == 0
    target = parse_mqtt_url(parse_mqtt_url(broker, session_required=False).session_url("s1"))
    assert (target.session, target.password, target.cafile) == ("s1", PASSWORD, str(pki.ca))
    assert (target.certfile, target.keyfile) == (str(pki.client_cert), str(pki.client_key))
    assert PASSWORD not in target.display


def test_url_options_are_checked_and_the_password_can_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streameval.errors import BadInputError
    from streameval.transports.mqtt.url import PASSWORD_ENV

    ca = tmp_path / "ca.pem"
    ca.write_text("not read before a connection")
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    target = parse_mqtt_url(f"mqtts://{USER}@h:8883/s?cafile={ca}")
    assert (target.username, target.password, target.cafile) == (USER, PASSWORD, str(ca))
    assert not target.insecure
    bad = {
        f"mqtts://u:{PASSWORD}@h/s?cafle={ca}": "unknown option 'cafle'",
        f"mqtt://u:{PASSWORD}@h/s?cafile={ca}": "needs TLS",
        f"mqtts://u:{PASSWORD}@h/s?cafile={tmp_path / 'none.pem'}": "no such file",
        f"mqtts://u:{PASSWORD}@h/s?key={ca}": "key= without cert=",
        f"mqtts://u:{PASSWORD}@h/s?insecure=maybe": "use 1 or 0",
    }
    for url, problem in bad.items():
        with pytest.raises(BadInputError, match=problem) as caught:
            parse_mqtt_url(url)
        assert PASSWORD not in str(caught.value)
