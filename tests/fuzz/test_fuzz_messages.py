"""Message-stream fuzzing of the WebSocket source (docs/serve-formats.md#faults): any stream of
server messages — good and truncated JPEGs, PNG signatures over junk, chunk statistics with
nasty numbers, JSON and msgpack of any shape, text where binary is expected and the reverse —
is either used or refused as one counted line, and never raises, never hangs, never crosses
the episode's invariants (frames numbered 0, 1, 2 …, chunks inside the frames received)."""

from __future__ import annotations

import asyncio
import base64
import json
import math

import cv2
import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streameval.protocol.wire import ScoresUpdate, decode

from streameval.core.events import (
    ChunkDone,
    EpisodeEnd,
    EpisodeStart,
    ErrorEvent,
    FrameEvent,
    KeySent,
)
from streameval.transports.live_config import LiveConfig, SourceRequest
from streameval.transports.profiles import load_profile
from streameval.transports.websocket.transport import WebSocketSource
from tests.fuzz.conftest import FUZZ, bounded
from tests.fuzz.strategies import JSON_VALUES, NASTY_NUMBERS, NASTY_STRINGS

_IMAGE = np.random.default_rng(1).integers(0, 255, (24, 32, 3), dtype=np.uint8)
JPEG = bytes(cv2.imencode(".jpg", _IMAGE)[1])
PNG = bytes(cv2.imencode(".png", _IMAGE)[1])
SIZE_LIMIT = 64 * 1024


def _pack(value: object) -> bytes:
    """msgpack of a generated value; what msgpack cannot pack (huge ints, lone surrogates)
    becomes a byte that is never valid msgpack — still a message to throw at the source."""
    try:
        packed: bytes = msgpack.packb(value, use_bin_type=True)
        return packed
    except (OverflowError, UnicodeEncodeError, ValueError, TypeError):
        return b"\xc1"


NUMBER = st.one_of(NASTY_NUMBERS, st.integers(-(10**12), 10**12), st.floats())
STATS = st.fixed_dictionaries(
    {"type": st.just("chunk_done")},
    optional={
        "frames": st.one_of(NUMBER, NASTY_STRINGS, st.none()),
        "generation_ms": st.one_of(NUMBER, NASTY_STRINGS, st.none()),
        "queue_depth": NUMBER,
        "dropped_frames": NUMBER,
        "control_latency_ms": st.one_of(NUMBER, st.none()),
    },
)
BINARY = st.one_of(
    st.just(JPEG),
    st.just(PNG),
    st.integers(1, len(JPEG) - 1).map(lambda n: JPEG[:n]),
    st.integers(8, len(PNG) - 1).map(lambda n: PNG[:n]),
    st.binary(max_size=512).map(lambda b: b"\xff\xd8\xff" + b + b"\xff\xd9"),
    st.binary(max_size=512).map(lambda b: b"\x89PNG\r\n\x1a\n" + b),
    st.binary(max_size=256),
    st.just(b"\x00" * (SIZE_LIMIT + 1)),
    JSON_VALUES.map(_pack),
    STATS.map(_pack),
)
TEXT = st.one_of(
    STATS.map(lambda v: json.dumps(v, allow_nan=True)),
    st.sampled_from(['{"type": "ready"}', '{"type": "error", "message": "boom"}']),
    st.just(json.dumps({"event": "frame", "data": base64.b64encode(JPEG).decode()})),
    st.builds(lambda s: json.dumps({"event": "frame", "data": s}), NASTY_STRINGS),
    JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
    NASTY_STRINGS,
    st.text(max_size=200),
    st.just(base64.b64encode(JPEG).decode()),
    st.just("[" * 5000),
)
MESSAGES = st.lists(
    st.one_of(st.tuples(st.just("binary"), BINARY), st.tuples(st.just("text"), TEXT)),
    max_size=40,
)


def _source(profile_name: str) -> WebSocketSource:
    profile = load_profile(profile_name)
    if profile_name == "worldfoundry":
        from dataclasses import replace

        profile = replace(profile, frames=replace(profile.frames, max_message_bytes=SIZE_LIMIT))
    source = WebSocketSource(
        SourceRequest(
            "ws://127.0.0.1:9/fuzz",
            ("W",),
            episode="fuzz",
            suite="test",
            config=LiveConfig(seconds_per_key=1.0),
        ),
        profile=profile,
        key_names=profile.key_names(),
    )
    return source


async def _drive(source: WebSocketSource, messages: list[tuple[str, object]]) -> list[object]:
    """The source as after ``connect``: episode started, a key sent; then the messages."""
    from streameval.protocol.schedule import Schedule

    from streameval.core.events import EpisodeInfo

    source.info = EpisodeInfo("fuzz", "m", "test", 16.0, Schedule.per_key(("W",), 1.0, 16.0), "x")
    source.info.extra["interactivity"] = {}
    from streameval.transports.chunk_log import ChunkLog

    source.chunks = ChunkLog(16.0, from_server=source.chunks_from_server)
    source.log.key_down("W", 0.0)
    for kind, data in messages:
        source.handle(kind, data)  # type: ignore[arg-type]
    source.lost("end of the fuzzed stream")
    events = []
    while not source._events.empty():
        events.append(source._events.get_nowait())
    return events


@pytest.mark.parametrize("profile_name", ["worldfoundry", "camera-pose", "base64"])
@FUZZ
@given(messages=MESSAGES)
def test_any_message_stream_is_used_or_refused(
    profile_name: str, messages: list[tuple[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    name = profile_name
    if name == "base64":  # frames as base64 in a JSON field: the declarative path
        path = tmp_path_factory.getbasetemp() / "base64.toml"
        if not path.exists():
            path.write_text(BASE64_PROFILE)
        name = str(path)
    with bounded():
        source = _source(name)
        events = asyncio.run(_drive(source, messages))
    frames = [e for e in events if isinstance(e, FrameEvent)]
    assert [f.index for f in frames] == list(range(len(frames)))
    assert all(f.image.ndim == 3 and f.image.dtype == np.uint8 for f in frames)
    for chunk in (e for e in events if isinstance(e, ChunkDone)):
        assert chunk.start >= 0 and chunk.start + chunk.frames <= len(frames)
        assert all(np.isfinite(v) for v in chunk.stats.values())
    for event in events:
        assert isinstance(event, FrameEvent | ChunkDone | ErrorEvent | EpisodeEnd | KeySent)
        assert not isinstance(event, EpisodeStart)
        if isinstance(event, ErrorEvent):
            assert "\n" not in event.message and "Traceback" not in event.message
    assert isinstance(events[-1], EpisodeEnd) and not events[-1].complete


BASE64_PROFILE = """
name = "fuzz-base64"
transport = "ws"
[frames]
encoding = "base64"
field = "data"
max_message_bytes = 65536
[keys]
semantics = "hold"
[stats]
match = { type = "chunk_done" }
fields = { generation_ms = "generation_ms" }
[templates.keydown]
cmd = "move"
dir = "{key}"
on = true
"""


CASE_MAPS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {
            "set": st.one_of(NASTY_STRINGS, JSON_VALUES),
            "name": st.one_of(NASTY_STRINGS, JSON_VALUES),
        },
        optional={
            "sets": st.one_of(JSON_VALUES, st.dictionaries(NASTY_STRINGS, NUMBER, max_size=8)),
            "keys": st.one_of(JSON_VALUES, NUMBER),
        },
    ),
)


def _scores_with(**extra: object) -> ScoresUpdate | None:
    """A live-scores message with ``extra`` fields, packed and read back under the decoder's
    bounds; None when msgpack cannot pack it (no message to read). Whatever ``extra`` holds,
    the message must be read as a ``ScoresUpdate``."""
    body = {"t": "scores", "episode": "e", "frame": 0, "fps": 0.0, "dropped": 0, "metrics": {}}
    packed = _pack({**body, **extra})
    if packed == b"\xc1":
        return None
    with bounded():
        update = decode(packed)
    assert isinstance(update, ScoresUpdate)
    return update


@FUZZ
@given(case=CASE_MAPS)
def test_any_case_map_of_a_scores_message_is_read_or_ignored(case: object) -> None:
    """The ``case`` of a live-scores message is extra information for the watcher's case-set
    view: whatever it holds, the message is read and its case is a well-formed one or none."""
    update = _scores_with(case=case)
    if update is None:
        return  # msgpack could not pack it: no message to read
    if update.case is not None:
        assert update.case.set and update.case.name
        assert all(isinstance(n, int) and n >= 0 for n in update.case.sets.values())
        assert update.case.max_keys is None or update.case.max_keys >= 1


@FUZZ
@given(seg=st.one_of(JSON_VALUES, st.lists(NUMBER, max_size=16)))
def test_any_scored_segments_of_a_result_are_read_or_ignored(seg: object) -> None:
    """A result's ``seg`` (its scored segment values, for the watcher's bands) is read as
    finite numbers or none; the message is read whatever it holds."""
    result = {"raw": 1.0, "n": 50.0, "status": "official", "reason": None, "d": {}, "seg": seg}
    update = _scores_with(results={"m": result})
    if update is None:
        return  # msgpack could not pack it: no message to read
    scored = update.results["m"].scored
    assert scored is None or all(isinstance(v, float) and math.isfinite(v) for v in scored)


STOP_MAPS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {
            "rule": st.one_of(NASTY_STRINGS, JSON_VALUES),
            "cols": st.one_of(
                JSON_VALUES,
                st.dictionaries(NASTY_STRINGS, st.one_of(NASTY_STRINGS, NUMBER), max_size=8),
            ),
            "met": st.one_of(st.booleans(), JSON_VALUES),
        },
        optional={"after": st.one_of(JSON_VALUES, NUMBER)},
    ),
)


@FUZZ
@given(stop=STOP_MAPS)
def test_any_stop_map_of_a_scores_message_is_read_or_ignored(stop: object) -> None:
    """The ``stop`` of a live-scores message (a case run's ``--stop-when`` state, for the
    watcher's case-set view): whatever it holds, the message is read and its stop state is a
    well-formed one or none."""
    update = _scores_with(stop=stop)
    if update is None:
        return  # msgpack could not pack it: no message to read
    if update.stop is not None:
        assert update.stop.rule and isinstance(update.stop.met, bool)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in update.stop.states.items())
        assert update.stop.after is None or update.stop.after >= 0


START_MAPS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {},
        optional={
            "img": st.one_of(st.binary(max_size=64), NASTY_STRINGS, JSON_VALUES),
            "mime": st.one_of(NASTY_STRINGS, JSON_VALUES),
            "prompt": st.one_of(NASTY_STRINGS, JSON_VALUES),
            "K": st.one_of(st.lists(st.one_of(NUMBER, NASTY_STRINGS), max_size=6), JSON_VALUES),
            "case": st.one_of(NASTY_STRINGS, JSON_VALUES),
        },
    ),
)


@FUZZ
@given(start=START_MAPS, takes=st.one_of(JSON_VALUES, st.lists(NASTY_STRINGS, max_size=5)))
def test_any_case_start_of_a_reset_or_hello_is_read_or_refused(
    start: object, takes: object
) -> None:
    """A ``reset``'s case start and a ``hello``'s ``start`` list, whatever they hold: the
    message is read (with a well-formed start, or none) or refused as one ``WireError``."""
    from streameval.protocol.wire import Hello, Reset

    from streameval.errors import WireError

    for body in (
        {"t": "reset", "episode": "e", "start": start},
        {"t": "hello", "model": "m", "fps": 16, "w": 8, "h": 8, "start": takes},
    ):
        packed = _pack(body)
        if packed == b"\xc1":
            continue
        with bounded():
            try:
                message = decode(packed)
            except WireError as exc:
                assert "\n" not in str(exc)
                continue
        if isinstance(message, Reset) and message.start is not None:
            s = message.start
            assert s.image is None or (isinstance(s.image, bytes) and s.image)
            assert s.intrinsics is None or len(s.intrinsics) == 4
        if isinstance(message, Hello):
            assert set(message.start) <= {"image", "prompt", "intrinsics"}
