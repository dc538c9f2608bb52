"""The probe's pure parts: candidates, classification of known signals, the mapping's
refusals, the written profile, the contradicted-key rule and the message tally."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.core.episode.motion import MotionFit
from streameval.engine.keys_contradicted import contradictions, moved_sideways, summary_lines
from streameval.errors import BadInputError
from streameval.probe.candidates import candidates, check_probeable, uses_keycodes
from streameval.probe.classify import KeyMotion, classify
from streameval.probe.mapping import choose
from streameval.probe.measure import PressSignals, shared_vertical
from streameval.probe.write import profile_text
from streameval.transports.profiles import load_profile, parse_profile
from streameval.transports.profiles.mouse_names import mouse_name, parse_mouse_name
from streameval.transports.websocket.messages import MessageTally

OWN = {"W": "w", "S": "s", "A": "a", "D": "d", "L": "j", "R": "l"}


def _motions(**does: str) -> list[KeyMotion]:
    return [KeyMotion(name, motion) for name, motion in does.items()]  # type: ignore[arg-type]


USUAL = dict(w="forward", s="back", a="strafe left", d="strafe right", j="yaw left",
             l="yaw right")  # fmt: skip


def test_candidates_start_with_the_profile_and_keep_keycodes_only_where_sent() -> None:
    wf = candidates(load_profile("worldfoundry"))
    assert wf[:6] == ("w", "s", "a", "d", "j", "l") and "ArrowLeft" in wf and "q" in wf
    keycode = load_profile("keycode")
    assert uses_keycodes(keycode) and not uses_keycodes(load_profile("worldfoundry"))
    assert candidates(keycode)[:6] == ("w", "s", "a", "d", "ArrowLeft", "ArrowRight")
    with pytest.raises(BadInputError, match="camera poses, not key names"):
        check_probeable(load_profile("camera-pose"))
    with pytest.raises(BadInputError, match="generates on request"):
        check_probeable(load_profile("yume-webapp"))


def _signals(sx: float = 0.0, srad: float = 0.0, sy: float = 0.0, p_yaw: float | None = None,
             n: int = 40) -> PressSignals:  # fmt: skip
    ramp = np.clip(np.concatenate([np.linspace(0, 1, 10), np.ones(n - 20), np.linspace(1, 0, 10)]),
                   0, 1)  # fmt: skip
    fit = None if p_yaw is None else MotionFit(1 - p_yaw, p_yaw, 1, 1, "m", 3, 30)
    t = np.arange(1, n + 1) / 16.0
    return PressSignals("k", 0.0, 1.0, t, sx * ramp, srad * ramp, sy * ramp, fit, 640)


def test_classify_reads_the_channel_the_sign_and_the_motion_type() -> None:
    assert classify(_signals(srad=2.0), 16).motion == "forward"
    assert classify(_signals(srad=-2.0), 16).motion == "back"
    assert classify(_signals(sx=3.0, p_yaw=0.02), 16).motion == "strafe left"
    turn = classify(_signals(sx=-3.0, p_yaw=0.97), 16)
    assert turn.motion == "yaw right" and turn.unit == "°/s" and turn.speed is not None
    assert classify(_signals(sx=3.0, p_yaw=0.5), 16).motion == "sideways left"
    assert classify(_signals(sy=2.0), 16).motion == "pitch up"
    assert classify(_signals(sx=0.01), 16).motion == "nothing"
    w = classify(_signals(srad=2.0), 16)
    assert w.speed == pytest.approx(32.0) and w.ease_in_s == pytest.approx(8 / 16)


def test_the_mapping_prefers_the_profile_names_and_refuses_rather_than_guess() -> None:
    assert choose(_motions(**USUAL), OWN).names == OWN
    arrows = _motions(**USUAL, ArrowUp="forward")
    assert choose(arrows, OWN).names["W"] == "w"  # the profile's own name wins
    # two names of equal standing for one action (world-arcade's a and ArrowLeft): the first
    # pressed is chosen, the other recorded as an alias; the profile's own name when it is one
    two = choose(_motions(**{**USUAL, "w": "nothing"}, ArrowUp="forward", i="forward"), OWN)
    assert two.complete and two.names["W"] == "ArrowUp" and two.aliases == {"W": ["i"]}
    # the keycode profile's L is ArrowLeft, which world-arcade takes as a strafe like a
    keycode = {**OWN, "L": "ArrowLeft"}
    own_two = choose(_motions(**USUAL, ArrowLeft="strafe left"), keycode)
    assert own_two.names["A"] == "a" and own_two.aliases == {"A": ["ArrowLeft"]}
    assert own_two.names["L"] == "j"
    unclear = _motions(**{**USUAL, "a": "sideways left"})
    (problem,) = choose(unclear, OWN).problems
    assert problem.startswith("A (strafe left): motion type ambiguous: a moves left")
    alone = choose(_motions(**USUAL), OWN, KeyMotion("(no key)", "forward", 30.0, "px/s"))
    assert not alone.names and "moves with no key held (forward at 30 px/s)" in alone.problems[0]


def test_the_written_profile_is_the_base_with_the_names_found() -> None:
    base = load_profile("worldfoundry")
    names = {"W": "w", "S": "s", "A": "j", "D": "l", "L": "a", "R": "d"}
    text = profile_text(base, names, fps=15.5, comment="probed\nhere")
    written = parse_profile(text, "written")
    assert written.key_names() == names and written.fps == 15.5
    assert written.name == "worldfoundry-probed" and text.startswith("# probed\n# here\n")
    assert written.templates == base.templates and written.ready == base.ready
    assert text.count("names = ") == 1


def test_contradictions_are_a_d_turning_and_l_r_strafing() -> None:
    keys = {0: "A", 1: "D", 2: "W", 3: "L", 4: "R", 6: "L"}

    def fit(p_yaw: float, amp: float = 3.0) -> MotionFit:
        return MotionFit(1 - p_yaw, p_yaw, amp * (1 - p_yaw), amp * p_yaw, "m", 3, 30)

    fits = {0: fit(0.9), 1: fit(0.1), 2: None, 3: fit(0.1), 4: fit(0.5), 5: fit(1.0, 0.0),
            6: fit(0.1)}  # fmt: skip
    # 5: a standing picture, no evidence; 6: L after A fits a strafe, which may be the A
    found = contradictions({**keys, 5: "A"}, fits)
    assert [(c.key, c.segment) for c in found] == [("A", 0), ("L", 3)]
    assert "key A turns instead of strafing" in found[0].message()
    (line,) = summary_lines("ep", [c.to_json() for c in found if c.key == "L"])
    assert line.startswith("ep: key L strafes instead of turning in 1 segment(s)")


def test_a_segment_whose_picture_does_not_move_sideways_contradicts_nothing() -> None:
    # WorldFoundry Studio's own code, Matrix-Game 3.0's cadence, keys W then R: the R
    # segment still showed the W chunks (Sx ~0.05, Srad ~4.5 px a sample); the fit read that
    # forward motion as translation (p_yaw 0.00) and the warning said "R strafes"
    n = 40
    forward = (np.full(n, 0.05), np.full(n, 4.5))
    turning = (np.full(n, 3.0), np.full(n, 0.4))
    frames = [10, 27, 36]
    assert not moved_sideways(*forward, frames)
    assert moved_sideways(*turning, frames)
    assert not moved_sideways(np.full(n, np.nan), np.full(n, np.nan), frames)
    assert not moved_sideways(*turning, [n + 5])  # no signal at the fit's frames: no evidence
    fit = MotionFit(1.0, 0.0, 3.0, 0.0, "m", 3, 30)
    keys = {0: "R", 1: "L"}
    found = contradictions(keys, {0: fit, 1: fit}, {0: False, 1: True})
    assert [(c.key, c.segment) for c in found] == [("L", 1)]


def test_the_tally_names_each_kind_of_message() -> None:
    tally = MessageTally()
    for data in (b"\xff\xd8\xff rest", '{"type": "ready", "fps": 16}', "not json", b"\xc1"):
        tally.add(data)
    tally.add(b"\xff\xd8\xff again")
    assert tally.counts == {"binary frame": 2, "type=ready": 1, "text (not JSON)": 1,
                            "binary message": 1}  # fmt: skip
    assert tally.last["type=ready"]["fps"] == 16
    assert tally.describe().startswith("2 binary frame, 1 ")


def test_a_mouse_motion_is_a_name_of_its_own() -> None:
    assert mouse_name(-8.0, 0.0) == "mouse:-8,0" and mouse_name(2.5, -1) == "mouse:2.5,-1"
    assert parse_mouse_name("mouse:-8,0") == (-8.0, 0.0)
    assert parse_mouse_name("mouse:+0.5,3") == (0.5, 3.0)
    for bad in ("mouse:0,0", "mouse:x,1", "mouse:1", "w", "", None, "mouse:1,2,3"):
        assert parse_mouse_name(bad) is None, bad
    keys = load_profile("overworld").keys
    # the key channel and the browser read the name as its motion and no button
    assert keys.motion("mouse:3,-2") == (3.0, -2.0) and not keys.is_button("mouse:3,-2")
    assert keys.motion("L") == (-8.0, 0.0) and not keys.is_button("L")
    assert keys.motion("W") == (0.0, 0.0) and keys.is_button("W")


def test_mouse_candidates_only_where_the_server_can_be_sent_mouse_motion() -> None:
    ow = candidates(load_profile("overworld"))
    # the profile's own turns are its mouse motions, pressed among its names
    assert ow[:6] == ("W", "S", "A", "D", "mouse:-8,0", "mouse:8,0")
    web = candidates(load_profile("web-wasd"))
    assert web[:6] == ("w", "s", "a", "d", "ArrowLeft", "ArrowRight")
    assert web[-2:] == ("mouse:-8,0", "mouse:8,0")  # last: keys first
    assert candidates(load_profile("web-wasd"), step=3)[-2:] == ("mouse:-3,0", "mouse:3,0")
    assert not any(n.startswith("mouse:") for n in candidates(load_profile("worldfoundry")))
    # keyCodes: a motion has none and is kept all the same
    keycode = parse_profile(
        'name = "kc"\ntransport = "ws"\n[templates.keydown]\ncode = "{keycode}"\n'
        'dx = "{mouse_dx}"\n[templates.keyup]\ncode = "{keycode}"\n',
        "kc.toml",
    )
    assert uses_keycodes(keycode) and candidates(keycode)[-2:] == ("mouse:-8,0", "mouse:8,0")


def test_a_mouse_found_for_a_turn_is_written_as_keys_mouse_and_back() -> None:
    found = {"W": "W", "S": "S", "A": "A", "D": "D", "L": "mouse:8,0", "R": "mouse:-8,0"}
    text = profile_text(load_profile("overworld"), found, fps=20, comment="probed")
    written = parse_profile(text, "written")
    assert written.keys.mouse == {"L": (8.0, 0.0), "R": (-8.0, 0.0)}  # inverted, as found
    assert not written.keys.is_button("L") and written.keys.is_button("W")
    assert text.count("mouse =") == 1
    # a web page whose turns are the mouse: L and R leave the names, no button is pressed
    found = {"W": "w", "S": "s", "A": "a", "D": "d", "L": "mouse:-4,0", "R": "mouse:4,0"}
    written = parse_profile(profile_text(load_profile("web-wasd"), found, fps=None,
                                         comment="c"), "w")  # fmt: skip
    assert written.keys.mouse == {"L": (-4.0, 0.0), "R": (4.0, 0.0)}
    assert set(written.keys.names) == {"W", "S", "A", "D"}
    # the other way: a mouse profile whose server turns by keys loses its mouse
    found = {"W": "W", "S": "S", "A": "A", "D": "D", "L": "ArrowLeft", "R": "ArrowRight"}
    written = parse_profile(profile_text(load_profile("overworld"), found, fps=20,
                                         comment="c"), "w")  # fmt: skip
    assert written.keys.mouse == {} and written.key_names()["L"] == "ArrowLeft"


def test_a_pitch_is_the_vertical_flow_both_halves_share() -> None:
    flow = np.zeros((40, 60, 2), np.float32)
    flow[..., 1] = 2.0
    assert shared_vertical(flow) == pytest.approx(2.0)  # the whole picture moved down
    flow[:20, :, 1] = -1.0
    assert shared_vertical(flow) == 0.0  # top up, bottom down: forward, not a pitch
    flow[:20, :, 1] = 0.0
    assert shared_vertical(flow) == 0.0  # the ground moves, the sky does not: forward
    flow[:20, :, 1] = -0.5
    flow[20:, :, 1] = -3.0
    assert shared_vertical(flow) == pytest.approx(-0.5)  # both up: the smaller is shared
