"""``--flow raft[:FILE]``: our RAFT in torchvision's layout, loaded from a checkpoint file.

torchvision's real weights are not available offline, so the loading path runs on a tiny
randomly initialised RAFT saved like a real checkpoint (a plain state dict in a ``.pth``); the
layout test pins the key names and shapes of torchvision's raft_large so that its published
file loads with ``strict=True``. A test with the real weights runs when they are in the torch
hub cache (or ``RAFT_WEIGHTS`` names the file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.engine.config import PipelineConfig
from streameval.errors import BackendUnavailableError, BadInputError
from streameval.perception.flow import create_flow_backend, flow_input, flow_provenance
from streameval.results.cache.episode import load_episode_cache
from tests.engine.helpers import run, textured, world_source
from tests.perception.raft_large_layout import (
    RAFT_LARGE_NUM_PARAMS,
    RAFT_LARGE_STATE,
    RAFT_SMALL_NUM_PARAMS,
)

torch = pytest.importorskip("torch")
raft_net = pytest.importorskip("streameval.perception.raft_net")

TINY = raft_net.RAFT_TINY


@pytest.fixture(autouse=True)
def one_torch_thread() -> Any:
    """torch's second worker spins against the other jobs of a 2-core machine (4× slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RAFT's state dict saved as torchvision saves its checkpoints. BatchNorm running
    statistics are perturbed so that loading them (not the defaults) is what the tests see."""
    torch.manual_seed(0)
    net = raft_net.RAFT(TINY)
    for name, buf in net.named_buffers():
        if name.endswith("running_var"):
            buf.uniform_(0.5, 2.0)
        elif name.endswith("running_mean"):
            buf.normal_(0.0, 0.1)
    path = tmp_path_factory.mktemp("raft") / "raft_tiny.pth"
    torch.save(net.state_dict(), path)
    return path


def test_state_dict_has_torchvision_raft_large_keys_and_shapes() -> None:
    state = raft_net.RAFT(raft_net.RAFT_LARGE).state_dict()
    assert [(k, tuple(v.shape)) for k, v in state.items()] == list(RAFT_LARGE_STATE)
    large = raft_net.RAFT(raft_net.RAFT_LARGE)
    small = raft_net.RAFT(raft_net.RAFT_SMALL)
    assert sum(p.numel() for p in large.parameters()) == RAFT_LARGE_NUM_PARAMS
    assert sum(p.numel() for p in small.parameters()) == RAFT_SMALL_NUM_PARAMS


def test_a_raft_large_checkpoint_loads_strictly_and_names_its_variant(tmp_path: Path) -> None:
    """A file with exactly torchvision's raft_large keys and shapes (values random) loads with
    strict=True; the architecture is read back from the shapes alone."""
    gen = torch.Generator().manual_seed(1)
    fake_release = {k: torch.randn(s, generator=gen) for k, s in RAFT_LARGE_STATE}
    for k, _ in RAFT_LARGE_STATE:
        if k.endswith("num_batches_tracked"):
            fake_release[k] = torch.tensor(7)
        elif k.endswith("running_var"):
            fake_release[k] = fake_release[k].abs() + 0.5
    path = tmp_path / "raft_large_C_T_SKHT_V2-ff5fadd5.pth"
    torch.save(fake_release, path)
    backend = create_flow_backend(f"raft:{path}")
    assert backend.name == "raft-large"
    assert backend.config == raft_net.RAFT_LARGE  # type: ignore[attr-defined]
    loaded = backend._net.state_dict()  # type: ignore[attr-defined]
    assert all(torch.equal(loaded[k].cpu(), v) for k, v in fake_release.items())
    small = raft_net.RAFT(raft_net.RAFT_SMALL).state_dict()
    assert raft_net.config_from_state_dict(small) == raft_net.RAFT_SMALL


def test_tiny_raft_runs_with_the_flow_contract(tiny_weights: Path) -> None:
    backend = create_flow_backend(f"raft:{tiny_weights}")
    assert flow_input(backend) == "rgb" and backend.name == "raft-custom"
    a = textured(1, 130, 150)  # sides not multiples of 8: padded, then cropped back
    b = np.roll(a, 3, axis=1)
    flow = backend(a, b)
    assert flow.shape == (130, 150, 2) and flow.dtype == np.float32
    assert np.isfinite(flow).all() and flow.flags.c_contiguous
    assert np.abs(flow).max() > 0  # a random network still answers something
    prov = flow_provenance(backend)
    assert prov["flow"] == "raft-custom"
    assert prov["flow_device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert prov["flow_weights"].startswith("raft_tiny.pth sha256:")
    assert prov["flow_iterations"] == "12"
    with pytest.raises(ValueError, match="RGB uint8"):
        backend(a[..., 0], b[..., 0])
    with pytest.raises(ValueError, match="needs both sides"):
        backend(a[:120], b[:120])  # torchvision's min_size: 128


def test_raft_small_layout_runs_from_its_file(tmp_path: Path) -> None:
    """raft_small's other blocks (bottleneck encoders, a context encoder without norm, one
    3×3 GRU, bilinear upsampling) load from a file of its shapes and answer the contract."""
    torch.manual_seed(2)
    path = tmp_path / "raft_small_C_T_V2-01064c6d.pth"
    torch.save(raft_net.RAFT(raft_net.RAFT_SMALL).state_dict(), path)
    backend: Any = create_flow_backend(f"raft-small:{path}")
    assert backend.name == "raft-small" and backend._net.mask_predictor is None
    a = textured(4, 128, 136)
    flow = backend(a, np.roll(a, 2, axis=0))
    assert flow.shape == (128, 136, 2) and flow.dtype == np.float32 and np.isfinite(flow).all()


def test_tiny_raft_is_deterministic_and_batches_like_single_pairs(tiny_weights: Path) -> None:
    one = create_flow_backend(f"raft:{tiny_weights}")
    two = create_flow_backend(f"raft:{tiny_weights}")
    frames = [textured(s, 128, 136) for s in range(4)]
    first = one(frames[0], frames[1])
    assert np.array_equal(first, one(frames[0], frames[1]))
    assert np.array_equal(first, two(frames[0], frames[1]))
    batch = one.batch(frames[:2], frames[2:])  # type: ignore[attr-defined]
    np.testing.assert_allclose(batch[0], one(frames[0], frames[2]), rtol=0, atol=1e-4)
    np.testing.assert_allclose(batch[1], one(frames[1], frames[3]), rtol=0, atol=1e-4)


def test_convex_upsampling_puts_each_subpixel_where_the_mask_points() -> None:
    """With all the mask weight on the centre of the 3×3 window, sub-pixel (i, j) of coarse
    pixel (y, x) is 8 × that pixel's flow: pins the permute order of the reshape."""
    flow = torch.arange(2 * 3 * 4, dtype=torch.float32).view(1, 2, 3, 4)
    mask = torch.full((1, 9 * 64, 3, 4), -1e4)
    mask.view(1, 9, 8, 8, 3, 4)[:, 4] = 0.0  # neighbour index 4 = the centre
    up = raft_net.upsample_flow(flow, mask)
    assert up.shape == (1, 2, 24, 32)
    expected = 8 * flow.repeat_interleave(8, dim=2).repeat_interleave(8, dim=3)
    assert torch.allclose(up, expected)
    plain = raft_net.upsample_flow(torch.ones(1, 2, 3, 4), None)
    assert torch.allclose(plain, torch.full((1, 2, 24, 32), 8.0))


def test_correlation_window_orders_offsets_as_torchvision() -> None:
    """Features that match only at a shift (dx, dy) = (2, -1): the window's best channel at
    level 0 is a·side + b with (offsets[a], offsets[b]) = (dx, dy), x offset varying slowest."""
    radius, side = 3, 7
    gen = torch.Generator().manual_seed(0)
    f1 = torch.randn(1, 32, 16, 16, generator=gen)
    f2 = torch.roll(f1, shifts=(-1, 2), dims=(2, 3))  # content moves by dx=+2, dy=-1
    corr = raft_net.CorrPyramid(f1, f2, levels=1, radius=radius)
    coords = raft_net.coords_grid(1, 16, 16, f1.device)
    best = corr(coords)[0, :, 8, 8].argmax().item()
    assert best == (2 + radius) * side + (-1 + radius)


def test_tiny_raft_in_the_pipeline_records_backend_and_weights(
    tiny_weights: Path, tmp_path: Path
) -> None:
    config = PipelineConfig(
        flow=f"raft:{tiny_weights}",
        cuts=None,
        analysis_width=192,
        analysis_height=128,
        quality_frames=False,
    )
    outcome = run(world_source(["A", "L"], 1.0), tmp_path / "ep", config=config)
    assert outcome.complete and not outcome.errors
    doc = json.loads((tmp_path / "ep" / "scores.json").read_text())
    backends = doc["provenance"]["backends"]
    assert backends["flow"] == "raft-custom"
    assert backends["flow_weights"].startswith("raft_tiny.pth sha256:")
    assert backends["flow_device"] in ("cpu", "cuda")
    dis_config = PipelineConfig(
        cuts=None, analysis_width=192, analysis_height=128, quality_frames=False
    )
    run(world_source(["A", "L"], 1.0), tmp_path / "dis", config=dis_config)
    raft_cache = load_episode_cache(tmp_path / "ep" / "cache")
    dis_cache = load_episode_cache(tmp_path / "dis" / "cache")
    assert len(raft_cache.sx) == len(dis_cache.sx) == outcome.frames - 2
    assert np.isfinite(raft_cache.sx).all() and np.isfinite(raft_cache.srad).all()
    assert not np.allclose(raft_cache.sx, dis_cache.sx)  # the network's signals, not DIS's


def test_replay_command_with_flow_raft_file(tiny_weights: Path, tmp_path: Path) -> None:
    """``--flow raft:FILE`` through the command line at the full 640×432 analysis size (a
    six-frame rollout: four flow pairs)."""
    from streameval.cli.main import main
    from tests.replay.replay_synth import make_rollout_dir

    rollout = make_rollout_dir(tmp_path / "rollout", ["A"] * 6, size=(64, 48))
    out = tmp_path / "out"
    args = ["replay", str(rollout), "--out", str(out), "--no-tui", "--cuts", "scenedetect-adaptive"]
    assert main([*args, "--no-report", "--flow", f"raft:{tiny_weights}"]) == 0
    doc = json.loads(next(out.rglob("scores.json")).read_text())
    assert doc["frames"] == 6 and doc["provenance"]["backends"]["flow"] == "raft-custom"
    cache = load_episode_cache(next(out.rglob("cache")))
    assert len(cache.sx) == 4 and np.isfinite(cache.sx).all()


def test_missing_weights_name_the_file_and_where_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    with pytest.raises(BackendUnavailableError) as err:
        create_flow_backend("raft")
    text = str(err.value)
    assert "raft_large_C_T_SKHT_V2-ff5fadd5.pth" in text
    assert "https://download.pytorch.org/models/raft_large_C_T_SKHT_V2-ff5fadd5.pth" in text
    assert str(tmp_path / "torch-home" / "hub" / "checkpoints") in text
    with pytest.raises(BackendUnavailableError, match=r"raft_small_C_T_V2-01064c6d\.pth"):
        create_flow_backend("raft-small")
    with pytest.raises(BackendUnavailableError, match=r"nope\.pth not found"):
        create_flow_backend(f"raft:{tmp_path / 'nope.pth'}")
    with pytest.raises(BadInputError, match="takes no weights"):
        create_flow_backend(f"dis-fast:{tmp_path}")


def test_a_file_that_is_not_raft_weights_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.pth"
    torch.save({"conv.weight": torch.zeros(1)}, path)
    with pytest.raises(BackendUnavailableError, match=r"cannot load .*other\.pth"):
        create_flow_backend(f"raft:{path}")
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(BackendUnavailableError, match="cannot load"):
        create_flow_backend(f"raft:{tmp_path / 'junk.pth'}")


def test_missing_weights_fail_the_command_before_any_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from streameval.cli.main import main

    missing = tmp_path / "raft_large.pth"
    args = ["demo", "--no-tui", "--out", str(tmp_path / "out"), "--flow", f"raft:{missing}"]
    assert main(args) == 2
    assert f"weights file {missing} not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("scores.json"))


def test_choosing_dis_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from streameval.perception.flow import create_flow_backend\n"
        "import streameval.engine.pipeline\n"
        "create_flow_backend('dis-fast')\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


def _real_raft_weights() -> Path | None:
    named = os.environ.get("RAFT_WEIGHTS")
    if named:
        return Path(named)
    cached = Path(torch.hub.get_dir()) / "checkpoints" / "raft_large_C_T_SKHT_V2-ff5fadd5.pth"
    return cached if cached.is_file() else None


def test_real_raft_large_measures_a_known_shift() -> None:
    weights = _real_raft_weights()
    if weights is None:
        pytest.skip(
            "torchvision's raft_large weights are not here (put raft_large_C_T_SKHT_V2-"
            "ff5fadd5.pth in the torch hub cache or name it in RAFT_WEIGHTS)"
        )
    backend: Any = create_flow_backend(f"raft:{weights}")
    assert backend.name == "raft-large"
    big = textured(3, 432, 660)
    flow = backend(big[:, 10:650], big[:, 6:646])  # content moves 4 px to the right
    assert abs(float(np.median(flow[..., 0])) - 4.0) < 0.2
    assert abs(float(np.median(flow[..., 1]))) < 0.2
