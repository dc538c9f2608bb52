"""Wire messages: round trips, validation and limits (msgpack, never pickle)."""

from __future__ import annotations

import pickle
import re
from dataclasses import replace

import msgpack
import numpy as np
import pytest
from streameval.protocol.public_keys import BROWSER_KEYS, parse_key_map, public_key_message
from streameval.protocol.stop_state import WireStop
from streameval.protocol.wire import (
    Bye,
    CaseStart,
    Frame,
    Hello,
    KeyDown,
    Reset,
    ScoresUpdate,
    Step,
    WireMetric,
    decode,
    encode,
)

from streameval.errors import WireError


def _image(h: int = 24, w: int = 32) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (h, w, 3), dtype=np.uint8)


def test_frame_round_trip_raw_and_png_is_exact_with_geometry() -> None:
    pose = np.arange(16, dtype=np.float64).reshape(4, 4)
    k = np.eye(3) * 2.0
    depth = np.full((6, 8), np.inf, dtype=np.float32)
    depth[0, 0] = 1.5
    frame = Frame(3, "L", _image(), t_server=12.5, pose=pose, intrinsics=k, depth=depth)
    for enc in ("raw", "png"):
        back = decode(encode(frame, encoding=enc))  # type: ignore[arg-type]
        assert isinstance(back, Frame)
        assert (back.index, back.key, back.t_server) == (3, "L", 12.5)
        assert np.array_equal(back.image, frame.image)
        assert back.pose is not None and np.array_equal(back.pose, pose)
        assert back.intrinsics is not None and np.array_equal(back.intrinsics, k)
        assert back.depth is not None and np.array_equal(back.depth, depth)


def test_jpeg_frame_is_close_not_exact() -> None:
    image = np.full((24, 32, 3), 120, dtype=np.uint8)
    back = decode(encode(Frame(0, None, image), encoding="jpeg"))
    assert isinstance(back, Frame) and back.key is None
    assert np.abs(back.image.astype(int) - 120).max() <= 2


def test_control_messages_round_trip() -> None:
    for message in (Step(7, "W"), KeyDown("-"), Hello("m", 16.0, 640, 432)):
        assert decode(encode(message)) == message
    update = ScoresUpdate("e", "m", 5, "A", 15.5, 1, {"local_memory": 98.0, "x": None})
    assert decode(encode(update)) == update


def test_scores_results_and_the_final_flag_round_trip() -> None:
    results = {
        "direction_accuracy_trans": WireMetric(None, None, "not_applicable", "no fwd/lat segments"),
        "revisit_memory": WireMetric(None, None, "missing", "no revisit", {"reversal": 32}),
        "global_memory": WireMetric(0.4, 78.37, "official", None, {"pair_source": "strict"}),
        "imaging_sharpness": WireMetric(0.15, None, "official", None, {"unit": "var"}),
    }
    update = ScoresUpdate(
        "e",
        "m",
        63,
        "R",
        15.5,
        0,
        {name: m.normalized for name, m in results.items()},
        final=True,
        complete=True,
        frames_done=64,
        frames=64,
        results=results,
        interactivity={"realtime_factor": 1.3, "transport": None, "frames_dropped": 0},
    )
    assert decode(encode(update)) == update
    live = ScoresUpdate("e", "m", 5, "A", 15.5, 1, {}, frames_done=6)
    back = decode(encode(live))
    assert isinstance(back, ScoresUpdate) and not back.final and back.results == {}
    warned = ScoresUpdate("e", "m", 0, "-", 0.0, 0, {}, warning="keys move nothing")
    assert decode(encode(warned)) == warned


@pytest.mark.parametrize(
    ("results", "problem"),
    [
        ({"x": {"status": "great"}}, "result 'x' without a known status"),
        ({"x": 1.0}, "result 'x' without a known status"),
        ({"x": {"status": "official", "d": {"pairs": [1]}}}, "no number, string or bool"),
        ([1], "'results' must be a map"),
    ],
)
def test_scores_results_are_checked(results: object, problem: str) -> None:
    body = {"t": "scores", "episode": "e", "frame": 0, "fps": 0.0, "dropped": 0, "metrics": {}}
    with pytest.raises(WireError, match=re.escape(problem)):
        decode(msgpack.packb({**body, "results": results}))


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"\xc1", "not a msgpack message"),
        (msgpack.packb([1, 2]), "message is a list"),
        (msgpack.packb({"t": "warp"}), "unknown message type 'warp'"),
        (msgpack.packb({"t": "step", "i": 1, "key": "Q"}), "unknown key 'Q'"),
        (msgpack.packb({"t": "step", "i": True, "key": "W"}), "got bool"),
        (msgpack.packb({"t": "hello", "fps": 0, "w": 1, "h": 1}), "fps 0"),
        (
            msgpack.packb({"t": "frame", "i": 0, "w": 5000, "h": 2, "enc": "raw", "img": b""}),
            "size 5000x2 outside",
        ),
        (
            msgpack.packb({"t": "frame", "i": 0, "w": 2, "h": 2, "enc": "raw", "img": b"123"}),
            "raw frame of 3 bytes, expected 2x2x3 = 12",
        ),
        (
            msgpack.packb({"t": "frame", "i": 0, "w": 2, "h": 2, "enc": "gif", "img": b"1"}),
            "unknown image encoding 'gif'",
        ),
        (msgpack.packb({"t": "frame", "i": 0, "w": 2, "h": 2, "enc": "raw"}), "without 'img'"),
        (msgpack.packb(msgpack.ExtType(1, b"x")), "not a msgpack message"),
    ],
)
def test_bad_messages_are_refused_with_the_reason(payload: bytes, problem: str) -> None:
    with pytest.raises(WireError, match=None) as err:
        decode(payload)
    assert problem in str(err.value)


def test_pickle_is_never_unpickled() -> None:
    with pytest.raises(WireError):
        decode(pickle.dumps({"t": "step", "i": 1, "key": "W"}))


def test_size_limit_is_checked_before_decoding() -> None:
    big = encode(Frame(0, "W", _image(64, 64)))
    with pytest.raises(WireError, match="over the 1000-byte limit"):
        decode(big, max_bytes=1000)


def test_non_finite_pose_is_refused() -> None:
    pose = np.eye(4)
    pose[0, 3] = np.nan
    with pytest.raises(WireError, match="non-finite"):
        decode(encode(Frame(0, "W", _image(), pose=pose)))


def test_public_key_messages_and_key_map() -> None:
    assert public_key_message("keydown", "ArrowLeft") == '{"type": "keydown", "key": "ArrowLeft"}'
    assert public_key_message("heartbeat") == '{"type": "heartbeat"}'
    names = parse_key_map("L=j, R=l")
    assert names == {**BROWSER_KEYS, "L": "j", "R": "l"}
    with pytest.raises(WireError, match="--key-map entry 'X=1'"):
        parse_key_map("X=1")


def test_a_case_start_rides_on_reset_and_the_hello_says_what_it_takes() -> None:
    start = CaseStart(b"\xff\xd8jpeg", "image/jpeg", "A street.", (1.0, 2.0, 3.0, 4.0), "s/000_001")
    back = decode(encode(Reset("000_001", start)))
    assert isinstance(back, Reset) and back.start is not None
    assert (back.start.image, back.start.mime, back.start.prompt) == (
        b"\xff\xd8jpeg",
        "image/jpeg",
        "A street.",
    )
    assert back.start.intrinsics == (1.0, 2.0, 3.0, 4.0) and back.start.case == "s/000_001"
    assert decode(encode(Reset("e"))) == Reset("e")  # no start: the message of before
    hello = Hello("m", 16.0, 64, 48, ("image", "prompt"))
    assert decode(encode(hello)) == hello
    # an older server's hello: takes nothing; a newer one's unknown names are left out
    assert decode(encode(Hello("m", 16.0, 64, 48))).start == ()  # type: ignore[union-attr]
    body = msgpack.packb({"t": "hello", "model": "m", "fps": 16, "w": 8, "h": 8,
                          "start": ["image", "video"]})  # fmt: skip
    assert decode(body) == Hello("m", 16.0, 8, 8, ("image",))
    # an older evaluator's reset, and a bye refusing an episode's start
    assert decode(msgpack.packb({"t": "reset", "episode": "e"})) == Reset("e")
    assert decode(encode(Bye("no image", "e"))) == Bye("no image", "e")


@pytest.mark.parametrize(
    "start",
    [
        "not a map",
        {"img": "base64 text"},
        {"img": b""},
        {"prompt": 5},
        {"K": [1, 2, 3]},
        {"K": [1, 2, 3, float("nan")]},
        {"mime": "x" * 200},
    ],
)
def test_a_malformed_case_start_is_one_line(start: object) -> None:
    with pytest.raises(WireError, match="reset message"):
        decode(msgpack.packb({"t": "reset", "episode": "e", "start": start}))


def test_a_stop_rules_state_rides_on_scores_and_older_messages_have_none() -> None:
    """The ``stop`` map of a scores message: a case run's ``--stop-when`` rule, each watched
    column's state and whether it was met after how many cases, round trip; an older
    evaluator's message has none, and a malformed map reads as none (the message is read)."""
    stop = WireStop(
        "direction_accuracy_trans:width<=4",
        {"direction_accuracy_trans": "width met", "local_memory": "open"},
        met=True,
        after=41,
    )
    update = ScoresUpdate("e", "m", 0, "-", 0.0, 0, {}, frames_done=0, stop=stop)
    assert decode(encode(update)) == update
    never_checked = replace(update, stop=WireStop("vs=base", {}))
    assert decode(encode(never_checked)) == never_checked
    plain = decode(encode(ScoresUpdate("e", "m", 0, "-", 0.0, 0, {})))
    assert isinstance(plain, ScoresUpdate) and plain.stop is None
    body = {"t": "scores", "episode": "e", "frame": 0, "fps": 0.0, "dropped": 0, "metrics": {}}
    for bad in (
        "width<=4",
        {"rule": "", "cols": {}, "met": False},
        {"rule": "width<=4", "cols": {"x": 1}, "met": False},
        {"rule": "width<=4", "cols": {}, "met": "yes"},
        {"rule": "width<=4", "cols": {}, "met": True, "after": -1},
        {"rule": "width<=4", "cols": [], "met": False},
    ):
        back = decode(msgpack.packb({**body, "stop": bad}))
        assert isinstance(back, ScoresUpdate) and back.stop is None


def test_a_hello_may_leave_the_size_to_the_first_frame() -> None:
    """A model without the optional width/height is served with a 0×0 hello (or, from a
    server of another language, none at all): the size comes with the first frame. Half a
    size, or a size out of range, is still refused."""
    assert decode(encode(Hello("m", 16.0, 0, 0))) == Hello("m", 16.0, 0, 0)
    assert decode(msgpack.packb({"t": "hello", "model": "m", "fps": 16})) == Hello("m", 16.0, 0, 0)
    for w, h in ((0, 5), (5, 0), (-1, -1), (5000, 8)):
        with pytest.raises(WireError, match="size"):
            decode(msgpack.packb({"t": "hello", "model": "m", "fps": 16, "w": w, "h": h}))
    with pytest.raises(WireError, match="without 'h'"):
        decode(msgpack.packb({"t": "hello", "model": "m", "fps": 16, "w": 8}))
    with pytest.raises(WireError, match="got bool"):
        decode(msgpack.packb({"t": "hello", "model": "m", "fps": 16, "w": False, "h": 0}))
