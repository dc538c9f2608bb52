"""A key as a mouse motion per frame (``[keys.mouse]``), one control message per frame
(``semantics = "frame"``) and start templates that are a list of messages: what goes on the
wire, and the profile errors that name the field."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import pytest

from streameval.errors import BadInputError
from streameval.transports.profiles import load_profile, parse_profile
from streameval.transports.profiles.keychannel import KeyChannel

HOLD = """
name = "mouse-hold"
transport = "ws"
[keys]
names = { W = "w", S = "s", A = "a", D = "d", L = "j" }
mouse = { L = { dx = -5 }, R = { dx = 5.5, dy = -1 } }
[templates.keydown]
type = "down"
key = "{key}"
buttons = "{buttons}"
dx = "{mouse_dx}"
dy = "{mouse_dy}"
"""


class _Wire:
    """The key channel's outgoing side; ``lock_step``: each message is answered by a frame
    (as Overworld's engine answers each control), after ``delay_s``."""

    def __init__(self, lock_step: bool, delay_s: float = 0.0) -> None:
        self.sent: list[tuple[float, dict[str, object]]] = []
        self.lock_step = lock_step
        self.delay_s = delay_s
        self.channel: KeyChannel | None = None

    async def send(self, payload: str | bytes) -> None:
        self.sent.append((time.perf_counter(), json.loads(payload)))
        if self.lock_step and self.channel is not None:
            channel = self.channel
            asyncio.get_running_loop().call_later(self.delay_s, channel.arrived)


def _channel(profile_name_or_text: str, wire: _Wire, fps: float = 20.0) -> KeyChannel:
    if "\n" in profile_name_or_text:
        profile = parse_profile(profile_name_or_text, "mouse.toml")
    else:
        profile = load_profile(profile_name_or_text)
    names = profile.key_names()
    channel = KeyChannel(profile, names, wire, fps=fps, episode="e", on_lost=print)
    wire.channel = channel
    return channel


def test_hold_templates_carry_the_keys_mouse_motion_per_frame() -> None:
    async def scenario() -> list[dict[str, object]]:
        wire = _Wire(lock_step=False)
        channel = _channel(HOLD, wire)
        for key in ("L", "R", "W"):
            await channel.key("keydown", key)
        return [body for _, body in wire.sent]

    left, right, forward = asyncio.run(scenario())
    # L is named (j) and a motion: both; R only a motion: no button; W a button, no motion
    assert (left["buttons"], left["dx"], left["dy"]) == (["j"], -5.0, 0.0)
    assert (right["buttons"], right["dx"], right["dy"]) == ([], 5.5, -1.0)
    assert (forward["buttons"], forward["dx"], forward["dy"]) == (["w"], 0.0, 0.0)


@pytest.mark.timeout(30)
def test_one_control_per_frame_paced_at_the_fps_with_the_held_keys_motion() -> None:
    """Overworld's profile against a lock-step server that answers at once: controls go at
    the profile's 20 fps, not as fast as frames come back; L is -8 a frame, no button, and a
    key change takes effect on the next control."""

    async def scenario() -> list[tuple[float, dict[str, object]]]:
        wire = _Wire(lock_step=True)
        channel = _channel("overworld", wire)
        await channel.key("keydown", "L")
        await asyncio.sleep(1.0)
        await channel.key("keyup", "L")
        await channel.key("keydown", "W")
        await asyncio.sleep(0.5)
        await channel.close()
        return wire.sent

    sent = asyncio.run(scenario())
    bodies = [body for _, body in sent]
    assert all(b["type"] == "control" for b in bodies)
    turns = [b for b in bodies if b["mouse_dx"] == -8.0]
    moves = [b for b in bodies if b["buttons"] == ["W"]]
    assert all(b["buttons"] == [] and b["mouse_dy"] == 0.0 for b in turns)
    assert all(b["mouse_dx"] == 0.0 for b in moves)
    assert bodies.index(moves[0]) == len(turns)  # every turn, then every move: no mix
    assert 14 <= len(turns) <= 21 and 7 <= len(moves) <= 11, (len(turns), len(moves))
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(sent)]
    assert min(gaps) >= 0.045  # never faster than one frame interval (1/20 s)


@pytest.mark.timeout(30)
def test_a_frame_that_never_comes_is_asked_for_again() -> None:
    """A lost frame must not stall the session: the next control goes after a second."""

    async def scenario() -> list[tuple[float, dict[str, object]]]:
        wire = _Wire(lock_step=False)  # nothing ever answers
        channel = _channel("overworld", wire)
        await channel.key("keydown", "R")
        await asyncio.sleep(2.3)
        await channel.close()
        return wire.sent

    sent = asyncio.run(scenario())
    assert len(sent) == 3, [round(t - sent[0][0], 2) for t, _ in sent]
    assert all(body["mouse_dx"] == 8.0 for _, body in sent)


def test_a_start_that_is_a_list_of_messages_leaves_out_what_the_run_lacks() -> None:
    async def scenario(case: dict[str, object] | None) -> list[dict[str, object]]:
        wire = _Wire(lock_step=False)
        channel = _channel("overworld", wire)
        channel.case_values = case
        await channel.start()
        await channel.close()
        return [body for _, body in wire.sent]

    plain = asyncio.run(scenario(None))
    assert plain == [{"type": "reset"}]  # no prompt, no seed: the server's own
    case = {"prompt": "A street.", "image_base64": "aGVsbG8=", "image_mime": "image/jpeg"}
    started = asyncio.run(scenario(case))
    assert started == [
        {"type": "prompt", "prompt": "A street."},
        {"type": "seed_image", "data": "aGVsbG8="},
        {"type": "reset"},
    ]
    no_image = asyncio.run(scenario({"prompt": "A street.", "image_base64": None}))
    assert [b["type"] for b in no_image] == ["prompt", "reset"]


@pytest.mark.parametrize(
    ("mouse", "words"),
    [
        ("Q = { dx = 1 }", "keys.mouse.Q: not a key"),
        ("L = { }", "keys.mouse.L: moves nothing"),
        ("L = { dz = 1 }", "keys.mouse.L: unknown field dz"),
        ('L = { dx = "left" }', "keys.mouse.L.dx: must be a number"),
        ("L = { dx = 1e9 }", "keys.mouse.L.dx: 1000000000.0 is outside"),
    ],
)
def test_a_mouse_table_that_cannot_be_sent_is_one_line(mouse: str, words: str) -> None:
    text = HOLD.replace("mouse = { L = { dx = -5 }, R = { dx = 5.5, dy = -1 } }", "")
    text = text.replace("[templates.keydown]", f"[keys.mouse]\n{mouse}\n[templates.keydown]")
    with pytest.raises(BadInputError, match=r"mouse\.toml") as caught:
        parse_profile(text, "mouse.toml")
    assert words in str(caught.value)


def test_frame_semantics_needs_a_control_template() -> None:
    text = HOLD.replace("names = {", 'semantics = "frame"\nnames = {')
    with pytest.raises(BadInputError, match=r"templates\.control: missing"):
        parse_profile(text, "mouse.toml")


def test_a_lease_profile_takes_the_claim_url_or_the_engines_own_socket() -> None:
    """``http://…/claim``: claimed through the router; ``ws://…/ws``: the engine's own
    socket (world_engine's ``examples/websocket_server.py`` has no router), no claim; any
    other transport is refused naming the claim URL."""
    from streameval.transports.urls import AttachOptions, open_network_source

    options = AttachOptions(clock=None, seconds_per_key=1.0, profile="overworld")
    direct = open_network_source("ws://127.0.0.1:1/ws", ("L",), episode="e", suite="t",
                                 options=options)  # fmt: skip
    assert direct._lease is None  # type: ignore[attr-defined]
    claimed = open_network_source("http://127.0.0.1:1/claim?key=k", ("L",), episode="e",
                                  suite="t", options=options)  # fmt: skip
    assert claimed._lease is not None  # type: ignore[attr-defined]
    with pytest.raises(BadInputError, match="claims its session over HTTP first"):
        open_network_source(
            "mjpeg+http://127.0.0.1:1/s", ("L",), episode="e", suite="t", options=options
        )  # fmt: skip
