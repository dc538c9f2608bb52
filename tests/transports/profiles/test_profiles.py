"""Server profiles as data (docs/serve-formats.md#writing-a-profile): the built-ins load, a bad
profile is one line naming the file, the field and what is wrong, templates render typed
values, and ``streameval profiles`` lists every built-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.errors import BadInputError, TemplateError, UnknownNameError
from streameval.transports.profiles import BUILT_INS, PROFILES, load_profile, parse_profile
from streameval.transports.profiles.keychannel import PosePath
from streameval.transports.profiles.templates import keycode_of, render

GOOD = """
name = "x"
transport = "ws"
[keys]
semantics = "hold"
[templates.keydown]
type = "keydown"
key = "{keycode}"
"""


def test_every_built_in_loads_and_is_registered() -> None:
    assert PROFILES.names() == list(BUILT_INS)
    for name in BUILT_INS:
        profile = load_profile(name)
        assert profile.name == name and profile.description and profile.url


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (('semantics = "hold"', 'semantics = "hodl"'), "keys.semantics: 'hodl' is not one of"),
        (("[keys]", "[keys]\nspeeed = 1"), "keys: unknown field speeed"),
        (("{keycode}", "{keykode}"), "templates.keydown: does not render: unknown placeholder"),
        (('semantics = "hold"', 'semantics = "press"'), "templates.press: missing"),
        (('transport = "ws"', "transport = 3"), "transport: must be a string or a list"),
        (("[keys]", "[keys]\nheartbeat_s = -1"), "keys.heartbeat_s: -1 is outside"),
        (("[keys]", '[keys]\nnames = { Q = "q" }'), "keys.names.Q: not a key"),
        (('name = "x"', 'name = "x"\n[stats]\nmatch = {}'), "stats.match: needs at least one"),
    ],
)
def test_a_bad_profile_names_the_file_and_the_field(edit: tuple[str, str], problem: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_profile(GOOD.replace(*edit), "my.toml")
    assert str(info.value).startswith("my.toml: ") and problem in str(info.value), info.value
    assert "\n" not in str(info.value)


def test_not_toml_and_unknown_names(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = ")
    with pytest.raises(BadInputError, match=r"bad\.toml: not TOML"):
        load_profile(str(bad))
    with pytest.raises(UnknownNameError, match="did you mean 'worldfoundry'"):
        load_profile("worldfoundy")
    with pytest.raises(BadInputError, match="no such profile file"):
        load_profile(str(tmp_path / "none.toml"))


def test_templates_render_typed_values() -> None:
    template = {"type": "keydown", "key": "{keycode}", "text": "at {timestamp}s {{x}}"}
    out = render(template, {"keycode": 87, "timestamp": 1.5})
    assert out == {"type": "keydown", "key": 87, "text": "at 1.5s {x}"}
    with pytest.raises(TemplateError, match="no value for"):
        render("{keycode}", {})
    assert (keycode_of("w"), keycode_of("ArrowLeft"), keycode_of("ArrowRight")) == (87, 37, 39)
    assert keycode_of("lookleft") is None


def test_pose_path_moves_the_camera_as_the_key_says() -> None:
    path = PosePath(load_profile("camera-pose"), 16.0)
    poses = path.advance("W", 9)
    assert len(poses) == 9 and len(poses[0]) == 4
    assert poses[-1][2][3] == pytest.approx(9 / 16)  # 1 m/s forward along +z
    turned = path.advance("R", 16)[-1]
    assert turned[0][2] == pytest.approx(0.5, abs=1e-6)  # 30°/s right for 1 s: sin 30°


def test_profiles_command_lists_every_built_in(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    for name in BUILT_INS:
        assert f"\n{name} " in f"\n{out}"


def test_a_websocket_needs_a_profile_and_a_profile_its_transport(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path), "--actions", "1", "--no-tui"]
    assert main(["attach", "ws://127.0.0.1:9/x", *out]) == 2
    assert "a WebSocket server needs --profile" in capsys.readouterr().err
    assert main(["attach", "webrtc+http://127.0.0.1:9/o", "--profile", "worldfoundry", *out]) == 2
    assert "profile 'worldfoundry' is for ws:// URLs" in capsys.readouterr().err
