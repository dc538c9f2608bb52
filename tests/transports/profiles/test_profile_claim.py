"""A server profile's ``[claim]``: what the vendor states, checked as ``--claim`` is,
and used by a run when no ``--claim`` is given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from streameval.errors import BadInputError
from streameval.runs.run import run_evidence
from streameval.runs.spec import RunSpec
from streameval.transports.profiles import parse_profile

GOOD = """
name = "x"
transport = "ws"
[keys]
semantics = "hold"
[templates.keydown]
type = "keydown"
key = "{keycode}"
"""


@pytest.mark.parametrize(
    ("table", "claim"),
    [
        ('[claim]\ntext = "16 fps, 1x H100, 480p"', "16 fps, 1x H100, 480p"),
        ('[claim]\nfps = 25\ngpu = "8x H100"\nresolution = "720p"', "25 fps, 8x H100, 720p"),
        ("", None),
    ],
)
def test_a_profile_states_a_claim(table: str, claim: str | None) -> None:
    assert parse_profile(GOOD + table, "my.toml").claim == claim


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[claim]\ntext = "fast"', "my.toml: claim: cannot read 'fast'"),
        ('[claim]\ntext = "16 fps"\nfps = 16', "my.toml: claim: give text or its parts"),
        ("[claim]\n", "my.toml: claim: empty"),
        ('[claim]\nspeed = "x"', "my.toml: claim: unknown field speed"),
    ],
)
def test_a_bad_claim_names_the_profile(table: str, problem: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_profile(GOOD + table, "my.toml")
    assert str(info.value).startswith(problem), info.value


def test_a_run_takes_the_profiles_claim_unless_one_is_given(tmp_path: Path) -> None:
    profile = tmp_path / "vendor.toml"
    profile.write_text(GOOD + '[claim]\ntext = "16 fps, 1x H100, 480p"\n')
    spec = RunSpec(tmp_path, profile=str(profile))
    claim = run_evidence(spec).claim
    assert claim is not None and (claim.fps, claim.gpu_name, claim.height) == (16.0, "H100", 480)
    claim = run_evidence(replace(spec, claim="30 fps")).claim
    assert claim is not None and (claim.fps, claim.gpu_name) == (30.0, None)
