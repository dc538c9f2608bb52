"""``--flow sea-raft:CHECKOUT``: the reference's SEA-RAFT from a local checkout.

SEA-RAFT's code is not installable here and no checkout is faked: without one, the tests check
that every missing piece is named with how to get it, and that the checkout's generically named
modules cannot displace ours. With ``SEA_RAFT_DIR`` pointing at a real checkout (and its
Spring-M weights in ``DIR/models/`` or the Hugging Face cache), the network runs end to end.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.engine.config import PipelineConfig
from streameval.errors import BackendUnavailableError
from streameval.perception.flow import create_flow_backend, flow_input, flow_provenance
from tests.engine.helpers import run, textured, world_source

sea_raft_flow = pytest.importorskip("streameval.perception.sea_raft_flow")


def test_no_checkout_or_a_missing_one_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError, match=r"no checkout given \(--flow sea-raft:DIR"):
        create_flow_backend("sea-raft")
    with pytest.raises(BackendUnavailableError) as err:
        create_flow_backend(f"sea-raft:{tmp_path / 'SEA-RAFT'}")
    text = str(err.value)
    assert f"checkout {tmp_path / 'SEA-RAFT'} does not exist" in text
    assert "git clone https://github.com/princeton-vl/SEA-RAFT" in text
    assert "MemorySlices/Tartan-C-T-TSKH-spring540x960-M" in text


def test_a_folder_without_the_code_names_code_config_and_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sea_raft_flow, "_hub_weights", lambda: None)  # whatever this HF cache has
    with pytest.raises(BackendUnavailableError) as err:
        create_flow_backend(f"sea-raft:{tmp_path}")
    text = str(err.value)
    assert str(tmp_path / "core" / "raft.py") in text
    assert str(tmp_path / "config" / "eval" / "spring-M.json") in text
    assert str(tmp_path / "models" / "Tartan-C-T-TSKH-spring540x960-M.pth") in text
    assert "MemorySlices/Tartan-C-T-TSKH-spring540x960-M in the Hugging Face cache" in text
    with pytest.raises(BackendUnavailableError, match=r"other\.pth \(its weights\)"):
        sea_raft_flow.SeaRaftFlow(tmp_path, weights=tmp_path / "other.pth")


def test_missing_checkout_fails_the_run_before_the_episode(tmp_path: Path) -> None:
    config = PipelineConfig(flow=f"sea-raft:{tmp_path / 'none'}", cuts=None)
    with pytest.raises(BackendUnavailableError, match="does not exist"):
        run(world_source(["A"], 0.5), config=config)


def test_checkout_modules_are_imported_in_isolation(tmp_path: Path) -> None:
    """While SEA-RAFT's modules are imported, a same-named module already loaded (here a
    stand-in ``utils``) is set aside and the checkout's core/ comes first on sys.path; both
    are restored afterwards, and nothing the checkout brought stays behind."""
    mine = types.ModuleType("utils")
    previous = sys.modules.get("utils")
    sys.modules["utils"] = mine
    path_before = list(sys.path)
    try:
        with sea_raft_flow._checkout_imports(tmp_path):
            assert "utils" not in sys.modules
            assert sys.path[:2] == [str(tmp_path / "core"), str(tmp_path)]
            sys.modules["raft"] = types.ModuleType("raft")  # as an import would leave it
        assert sys.modules["utils"] is mine
        assert "raft" not in sys.modules
        assert sys.path == path_before
    finally:
        if previous is None:
            sys.modules.pop("utils", None)
        else:
            sys.modules["utils"] = previous


def _checkout() -> Path:
    named = os.environ.get("SEA_RAFT_DIR")
    if not named:
        pytest.skip("SEA_RAFT_DIR is not set: no SEA-RAFT checkout to run end to end")
    return Path(named)


def test_real_sea_raft_measures_a_known_shift_in_analysis_pixels() -> None:
    """The reference's network on the colour analysis frame: a 4-px shift of a texture reads
    as +4 analysis pixels (the reference itself would report half: module docstring)."""
    backend: Any = create_flow_backend(f"sea-raft:{_checkout()}")
    assert flow_input(backend) == "rgb"
    big = textured(3, 432, 660)
    prev, nxt = big[:, 10:650], big[:, 6:646]  # content moves 4 px to the right
    flow = backend(prev, nxt)
    assert flow.shape == (432, 640, 2) and flow.dtype == np.float32
    assert np.array_equal(flow, backend(prev, nxt))
    assert abs(float(np.median(flow[..., 0])) - 4.0) < 0.3
    assert abs(float(np.median(flow[..., 1]))) < 0.3
    prov = flow_provenance(backend)
    assert prov["flow"].startswith("sea-raft") and "sha256:" in prov["flow_weights"]
    assert prov["flow_iterations"] == "4" and prov["flow_scale"] == "-1"  # Spring-M


def test_real_sea_raft_in_the_pipeline(tmp_path: Path) -> None:
    config = PipelineConfig(flow=f"sea-raft:{_checkout()}", cuts=None, quality_frames=False)
    outcome = run(world_source(["A"], 0.5), tmp_path / "ep", config=config)
    assert outcome.complete and not outcome.errors
