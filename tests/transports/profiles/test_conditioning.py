"""A profile's ``[conditioning]`` table (docs/serve-formats.md#conditioning-a-case): checked when
the profile loads, and against a case set before anything runs; the case placeholders render
with a case's values and are left out of a run without cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.cases import load_cases
from streameval.cases.conditioning import PLACEHOLDERS as CASE_PLACEHOLDERS
from streameval.cases.conditioning import Conditioning
from streameval.errors import BadInputError
from streameval.transports.profiles import load_profile, parse_profile
from streameval.transports.profiles.conditioning import check_profile_conditioning, server_base
from streameval.transports.profiles.keychannel import KeyChannel
from streameval.transports.profiles.templates import PLACEHOLDERS
from streameval.transports.urls import AttachOptions, check_attach_conditioning
from tests.cases.arena_synth import write_arena

INLINE = """
name = "inline"
transport = "ws"
[conditioning]
image = "inline"
[templates.configure]
type = "start"
input_image_base64 = "{image_base64}"
mime = "{image_mime}"
prompt = "{prompt}"
size = ["{image_width}", "{image_height}"]
intrinsics = "{intrinsics}"
name = "case {case} seed {seed}"
[templates.keydown]
key = "{key}"
"""


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    return write_arena(tmp_path / "arena_inputs")


def _manifest(tmp_path: Path, *lines: dict[str, object]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_every_case_placeholder_is_a_template_placeholder() -> None:
    assert set(CASE_PLACEHOLDERS) <= set(PLACEHOLDERS)


def test_the_worldfoundry_built_in_uploads_and_names_the_image_and_the_caption() -> None:
    profile = load_profile("worldfoundry")
    assert profile.conditioning.image == "upload" and profile.takes_images
    assert profile.conditioning.upload_url == "/api/session/input"
    session = profile.templates["configure"]["session"]
    assert session == {"prompt": "{prompt}", "init_image_path": "{image_path}"}


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (('image = "inline"', 'image = "url"'), "conditioning.image: 'url' is not one of"),
        (("{image_base64}", "{image_bas64}"), "unknown placeholder {image_bas64}"),
        (('input_image_base64 = "{image_base64}"', ""), "holds no {image_base64}"),
        (('image = "inline"', 'image = "upload"'), "conditioning.upload_url: missing"),
        (('image = "inline"', 'image = "none"'), "uses {image_base64} but [conditioning] image"),
        (('image = "inline"', 'image = "inline"\nstart = "reset"'), "needs [templates.reset]"),
        (('image = "inline"', 'image = "inline"\nupload_url = "/up"'), "only with image = 'up"),
        (('image = "inline"', 'image = "inline"\nbogus = 1'), "conditioning: unknown field bogus"),
        (('image = "inline"', 'image = "path"'), "'path' but templates.configure holds no"),
        (
            (
                'transport = "ws"\n[conditioning]',
                'transport = "mjpeg"\n[conditioning]\nstart = "reset"',
            ),
            "conditioning.start: 'reset' keeps a WebSocket open",
        ),
    ],
)
def test_a_bad_conditioning_table_is_one_line(edit: tuple[str, str], problem: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_profile(INLINE.replace(*edit), "mine.toml")
    assert str(info.value).startswith("mine.toml: ") and problem in str(info.value), info.value
    assert "\n" not in str(info.value)


def test_a_reset_profile_sends_reset_on_a_kept_connection() -> None:
    from streameval.transports.profiles.conditioning import start_template

    text = INLINE.replace('image = "inline"', 'image = "inline"\nstart = "reset"')
    with_configure = parse_profile(text + '[templates.reset]\nimg = "{image_base64}"\n', "r.toml")
    assert start_template(with_configure, kept=False) == "configure"
    assert start_template(with_configure, kept=True) == "reset"
    only_reset = parse_profile(text.replace("[templates.configure]", "[templates.reset]"), "r.toml")
    assert start_template(only_reset, kept=False) == "reset"
    assert start_template(load_profile("worldfoundry"), kept=False) == "configure"


def test_an_upload_url_is_a_path_on_the_server_or_a_url() -> None:
    text = INLINE.replace('image = "inline"', 'image = "upload"\nupload_url = "ftp://x"')
    text = text.replace("{image_base64}", "{image_path}")
    with pytest.raises(BadInputError, match="expected /PATH"):
        parse_profile(text, "mine.toml")
    assert server_base("ws://h:9/api/realtime/ws") == "http://h:9/"
    assert server_base("wss://h/x") == "https://h/"
    assert server_base("webrtc+https://h:1/offer") == "https://h:1/"


def test_every_case_of_an_arena_renders_and_the_values_are_the_case(arena: Path) -> None:
    cases = load_cases(arena)
    profile = parse_profile(INLINE, "inline.toml")
    check_profile_conditioning(profile, cases)
    case = cases.cases[4]
    channel = KeyChannel(profile, {}, _Nowhere(), fps=16, episode=case.name, on_lost=print)
    channel.case_values = Conditioning(case, seed=3).values()
    message = json.loads(channel.message("configure", None))
    assert message["prompt"] == case.prompt and message["mime"] == "image/jpeg"
    assert message["name"] == f"case {case.key} seed 3"
    assert message["size"] == list(case.image_size or ())  # numbers stay numbers
    assert message["intrinsics"] == pytest.approx(list(case.intrinsics or ()))
    import base64

    assert case.image_path is not None
    assert base64.b64decode(message["input_image_base64"]) == case.image_path.read_bytes()


def test_without_a_case_the_case_fields_are_left_out() -> None:
    profile = load_profile("worldfoundry")
    channel = KeyChannel(profile, {}, _Nowhere(), fps=16, episode="e", on_lost=print)
    assert json.loads(channel.message("configure", None)) == {"type": "configure", "session": {}}
    partial = INLINE.replace('size = ["{image_width}", "{image_height}"]\n', "")
    assert partial != INLINE
    channel = KeyChannel(parse_profile(partial, "p.toml"), {}, _Nowhere(), fps=16, episode="e",
                         on_lost=print)  # fmt: skip
    with pytest.raises(Exception, match=r"no value for \{case\}"):
        channel.message("configure", None)  # inside a longer string: it needs a case


def test_a_profile_without_images_given_cases_with_images_is_refused(arena: Path) -> None:
    cases = load_cases(arena)
    keys_only = parse_profile(
        'name = "k"\ntransport = "ws"\n[templates.keydown]\nkey = "{key}"\n', "keys.toml"
    )
    with pytest.raises(BadInputError) as info:
        check_profile_conditioning(keys_only, cases)
    assert str(info.value).startswith("keys.toml: profile 'k' sends no image")
    assert "13 of the 13 cases" in str(info.value)


def test_a_case_without_an_image_or_intrinsics_does_not_render(arena: Path, tmp_path: Path) -> None:
    image = next((arena / "first_view" / "real").glob("000.*"))
    manifest = _manifest(
        tmp_path,
        {"case": "a", "image": str(image), "actions": "W"},
        {"case": "b", "actions": "S", "prompt": "no picture"},
    )
    cases = load_cases(manifest)
    path_profile = INLINE.replace('image = "inline"', 'image = "path"')
    path_profile = path_profile.replace("{image_base64}", "{image_path}")
    path_profile = path_profile.replace('intrinsics = "{intrinsics}"\n', "")
    with pytest.raises(BadInputError) as info:
        check_profile_conditioning(parse_profile(path_profile, "p.toml"), cases)
    line = str(info.value)
    assert line.startswith("p.toml: templates.configure does not render for case worldmark/b")
    assert "has no image" in line
    with pytest.raises(BadInputError, match=r"case worldmark/a: .*has no intrinsics"):
        check_profile_conditioning(parse_profile(INLINE, "i.toml"), cases)


def test_attach_checks_each_url_before_anything_runs(arena: Path) -> None:
    cases = load_cases(arena)
    options = AttachOptions(clock=None, seconds_per_key=1.0)
    # over MQTT the server's hello says whether it takes an image: checked on connect
    check_attach_conditioning(["mqtt://127.0.0.1:1/m"], options, cases)
    with pytest.raises(BadInputError, match="without --profile the public style sends no image"):
        check_attach_conditioning(["webrtc+http://127.0.0.1:1/offer"], options, cases)
    with pytest.raises(BadInputError, match="profile 'keycode' sends no image"):
        check_attach_conditioning(
            ["webrtc+http://127.0.0.1:1/offer"], AttachOptions(None, 1.0, profile="keycode"), cases
        )
    worldfoundry = AttachOptions(None, 1.0, profile="worldfoundry")
    check_attach_conditioning(["ws://a:1/api/realtime/ws", "ws://b:2/api/realtime/ws"],
                              worldfoundry, cases)  # fmt: skip


class _Nowhere:
    async def send(self, payload: str | bytes) -> None:
        raise ConnectionError("not connected")
