"""Claims against measurements: what a claim text states, and the neutral verdicts —
table-tested, never "reproduced"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.errors import BadInputError
from streameval.inputs.claims import Claim, parse_claim
from streameval.results.claims import (
    BELOW,
    CONSISTENT,
    DIFFERENT,
    NOT_MEASURED,
    NOT_STATED,
    VERDICTS,
    Measured,
    claim_verdict,
    gpu_matches,
    measured_from_run,
    verdict_line,
)

H100 = ("NVIDIA H100 80GB HBM3",)


@pytest.mark.parametrize(
    ("text", "fps", "count", "gpu", "width", "height"),
    [
        ("25 fps, 1x H100, 720p", 25.0, 1, "H100", None, 720),
        ("8xH100; 1280x720; 16fps", 16.0, 8, "H100", 1280, 720),
        ("RTX 4090, 30 FPS", 30.0, 1, "RTX 4090", None, None),
        ("2 × A100 80GB, 1280×704, 12.5 fps", 12.5, 2, "A100 80GB", 1280, 704),
        ("24 fps", 24.0, None, None, None, None),
        ("480p, 16 frames/s", 16.0, None, None, None, 480),
    ],
)
def test_a_claim_states_fps_gpus_and_resolution(
    text: str, fps: float, count: int | None, gpu: str | None, width: int | None, height: int | None
) -> None:
    assert parse_claim(text) == Claim(text, fps, count, gpu, width, height)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("fast", "cannot read 'fast'"),
        ("25 fps, 30 fps", "'30 fps': the claim states its fps twice"),
        ("0x H100", "'0x H100': a GPU count is at least 1"),
        ("0 fps", "'0 fps': a frame rate is in (0, 1000]"),
        (" , ", "empty claim"),
    ],
)
def test_a_claim_that_cannot_be_read_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_claim(text)
    assert str(caught.value).startswith(f"--claim: {problem}")


OK, LO, DC, NS, NM = CONSISTENT, BELOW, DIFFERENT, NOT_STATED, NOT_MEASURED
FULL, HD = "25 fps, 1x H100, 720p", (1280, 720)
# (claim, measured fps, measured GPUs, measured resolution) → (overall, per field)
CASES = [
    # everything stated and matching, at or above the rate (5 % tolerance)
    (FULL, 25.3, H100, HD, OK, (OK, OK, OK)),
    (FULL, 23.9, H100, HD, OK, (OK, OK, OK)),
    (FULL, 16.0, H100, HD, LO, (LO, OK, OK)),
    # a different configuration wins over the rate: the numbers are not comparable
    (FULL, 30.0, H100, (640, 480), DC, (OK, OK, DC)),
    (FULL, 30.0, ("NVIDIA A100-SXM4-80GB",), HD, DC, (OK, DC, OK)),
    ("25 fps, 2x H100, 720p", 30.0, H100, HD, DC, (OK, DC, OK)),
    ("25 fps, 1x H100, 1280x720", 30.0, H100, (960, 720), DC, (OK, OK, DC)),
    # a claim without its configuration
    ("25 fps", 30.0, H100, HD, NS, (OK, NS, NS)),
    ("25 fps, 720p", 10.0, H100, HD, NS, (LO, NS, OK)),
    # what the run could not measure is said, never guessed
    (FULL, None, H100, HD, NM, (NM, OK, OK)),
    (FULL, 26.0, None, HD, OK, (OK, NM, OK)),
    ("1x H100, 720p", 26.0, H100, HD, NS, (NS, OK, OK)),
]  # fmt: skip


@pytest.mark.parametrize(("text", "fps", "gpus", "size", "overall", "fields"), CASES)
def test_verdicts(
    text: str,
    fps: float | None,
    gpus: tuple[str, ...] | None,
    size: tuple[int, int],
    overall: str,
    fields: tuple[str, str, str],
) -> None:
    measured = Measured(fps=fps, width=size[0], height=size[1], gpus=gpus)
    block = claim_verdict(parse_claim(text), measured)
    assert block["verdict"] == overall
    assert tuple(f["verdict"] for f in block["fields"]) == fields
    assert [f["field"] for f in block["fields"]] == ["fps", "gpu", "resolution"]
    assert block["verdict"] in VERDICTS and "reproduced" not in verdict_line(block)


def test_the_verdict_line_says_what_was_claimed_and_measured() -> None:
    block = claim_verdict(parse_claim("25 fps, 1x H100, 720p"), Measured(16.0, 1280, 720, H100))
    assert verdict_line(block) == (
        "claim '25 fps, 1x H100, 720p': below claim (fps 25 → 16.00 (native): below claim; "
        "gpu 1× H100 → 1× NVIDIA H100 80GB HBM3: consistent; "
        "resolution 720p → 1280×720: consistent)"
    )


@pytest.mark.parametrize(
    ("claimed", "device", "same"),
    [
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("h100", "NVIDIA H100 PCIe", True),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", True),
        ("A100 80GB", "NVIDIA A100-SXM4-80GB", True),  # NVML's dashes part the words
        ("A100 40GB", "NVIDIA A100-SXM4-80GB", False),
        ("H200", "NVIDIA H100 80GB HBM3", False),
    ],
)
def test_gpu_names(claimed: str, device: str, same: bool) -> None:
    assert gpu_matches(claimed, device) is same


def test_the_measured_rate_is_the_native_one_of_the_runtime_object(tmp_path: Path) -> None:
    """``runtime.native_fps`` of each episode's scores.json (its median), never the raw
    delivered rate; without a runtime object the rate is not measured."""
    for name, native in (("a", 15.0), ("b", 16.0), ("c", 17.5), ("d", None)):
        folder = tmp_path / name
        (folder / "cache").mkdir(parents=True)
        doc = {"interactivity": {"delivered_fps": 32.0}}
        if native is not None:
            doc["runtime"] = {"native_fps": native}
        (folder / "scores.json").write_text(json.dumps(doc))
        (folder / "cache" / "episode.json").write_text(json.dumps({"width": 640, "height": 432}))
    measured = measured_from_run([tmp_path / n for n in "abcd"], None)
    assert (measured.fps, measured.width, measured.height, measured.gpus) == (16.0, 640, 432, None)
    assert measured_from_run([tmp_path / "d"], None).fps is None
