"""``--flow raft[:WEIGHTS.pth]`` and ``raft-small[:WEIGHTS.pth]``: RAFT with torchvision's
published weights, without torchvision (:mod:`streameval.perception.raft_net`).

Weights are never downloaded: the evaluator runs offline and a silent download would make a
result depend on the network. Without a path, the file torchvision itself would use is looked
up in the torch hub cache (``$TORCH_HOME/hub/checkpoints``, by default
``~/.cache/torch/hub/checkpoints/``); a missing file fails at once, naming the file expected
and its download address. With a path, the network's sizes are read from the checkpoint, so
``raft:FILE`` loads raft_large, raft_small or any smaller test configuration, always with
``strict=True`` (every parameter from the file, none left at its initial value).

Signal contract (as DIS): the flow from ``prev`` to ``nxt`` in pixels of the analysis frame it
was given, (H, W, 2) float32. RAFT sees the *colour* analysis frame, as the reference's network
does (``input = "rgb"``), scaled to [-1, 1] as torchvision's ``OpticalFlow`` preset; frames whose
sides are not multiples of 8 are edge-padded symmetrically and the flow cropped back.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.arrays import Flow, Image
from streameval.errors import BackendUnavailableError

INSTALL_HINT = "pip install 'streameval[heavy]' (torch==2.13.0 CPU wheel; no torchvision needed)"
DOWNLOADS = "https://download.pytorch.org/models/"
RAFT_LARGE_FILE = "raft_large_C_T_SKHT_V2-ff5fadd5.pth"  # torchvision's raft_large DEFAULT
RAFT_SMALL_FILE = "raft_small_C_T_V2-01064c6d.pth"  # torchvision's raft_small DEFAULT
RAFT_UPDATES = 12  # torchvision's num_flow_updates default
MIN_SIDE = 128  # torchvision's min_size for RAFT: 1/8 resolution, then 3 halvings, ≥ 2 pixels


def import_torch(job: str) -> Any:
    """``torch``, or BackendUnavailableError naming ``job`` and how to install it."""
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailableError(f"{job} needs torch, which is not installed; {INSTALL_HINT}")
    return importlib.import_module("torch")


def pick_device(torch: Any, device: str | None) -> str:
    """``device`` as given, else CUDA when available, else the CPU."""
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def file_digest(path: Path) -> str:
    """``name sha256:<16 hex>``: which weights, stable across machines (a path is not)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{path.name} sha256:{h.hexdigest()[:16]}"


def hub_checkpoint(torch: Any, filename: str) -> Path:
    """Where torchvision keeps ``filename`` once downloaded (torch hub cache)."""
    return Path(torch.hub.get_dir()) / "checkpoints" / filename


def check_rgb_pair(prev: Image, nxt: Image, what: str) -> None:
    if prev.shape != nxt.shape or prev.ndim != 3 or prev.shape[2] != 3 or prev.dtype != np.uint8:
        raise ValueError(
            f"{what}: expected two RGB uint8 frames of one shape (H, W, 3), got "
            f"{prev.dtype} {prev.shape} and {nxt.dtype} {nxt.shape}"
        )


def pad_to_8(height: int, width: int) -> tuple[int, int, int, int]:
    """(left, right, top, bottom) edge padding to multiples of 8, split evenly."""
    ph, pw = -height % 8, -width % 8
    return pw // 2, pw - pw // 2, ph // 2, ph - ph // 2


class RaftFlow:
    """RAFT on the colour analysis frame; weights from a torchvision checkpoint file.

    ``model``: the ``.pth`` file, or empty for torchvision's default file of ``variant`` in
    the torch hub cache. ``updates``: refinement iterations (12, torchvision's default).
    ``device``: None picks CUDA when available, else the CPU.
    """

    input = "rgb"

    def __init__(
        self,
        model: str | Path = "",
        *,
        variant: str = "large",
        updates: int = RAFT_UPDATES,
        device: str | None = None,
    ) -> None:
        job = f"RAFT flow backend (raft{'' if variant == 'large' else '-' + variant})"
        self._torch = torch = import_torch(job)
        filename = RAFT_LARGE_FILE if variant == "large" else RAFT_SMALL_FILE
        path = Path(model).expanduser() if str(model) else hub_checkpoint(torch, filename)
        if not path.is_file():
            raise BackendUnavailableError(
                f"{job}: weights file {path} not found; download {DOWNLOADS}{filename} "
                f"(torchvision's raft_{variant} weights) into {hub_checkpoint(torch, '')} "
                f"or pass its path as --flow raft{'' if variant == 'large' else '-small'}:FILE"
            )
        from streameval.perception import raft_net

        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            config = raft_net.config_from_state_dict(state)
            net = raft_net.RAFT(config)
            net.load_state_dict(state, strict=True)
        except Exception as err:  # not a RAFT state dict, truncated, wrong layout
            raise BackendUnavailableError(
                f"{job}: cannot load {path} as torchvision-layout RAFT weights: "
                f"{type(err).__name__}: {err}"
            ) from err
        self.device = pick_device(torch, device)
        self._net = net.to(self.device).eval()
        self.updates = int(updates)
        self.config = config
        self.name = raft_net.variant_name(config)
        self.provenance = {
            "weights": file_digest(path),
            "device": self.device,
            "iterations": str(self.updates),
        }

    def _prepare(self, frames: Sequence[Image]) -> Any:
        torch = self._torch
        batch = torch.from_numpy(np.stack(frames)).to(self.device)
        x = batch.permute(0, 3, 1, 2).float() * (2.0 / 255.0) - 1.0
        left, right, top, bottom = pad_to_8(x.shape[2], x.shape[3])
        if left or right or top or bottom:
            x = torch.nn.functional.pad(x, (left, right, top, bottom), mode="replicate")
        return x

    def batch(self, prevs: Sequence[Image], nexts: Sequence[Image]) -> list[Flow]:
        """Flows of several pairs in one forward pass (same frame size), each (H, W, 2)."""
        if len(prevs) != len(nexts) or not prevs:
            raise ValueError("RAFT batch: give as many next frames as previous ones, at least 1")
        for p, n in zip(prevs, nexts, strict=True):
            check_rgb_pair(p, n, self.name)
        h, w = prevs[0].shape[:2]
        if min(h, w) < MIN_SIDE:
            # the 4th correlation level would be 1 pixel wide: its lookup divides by 0 (NaN)
            raise ValueError(f"{self.name}: frames of {w}×{h}; RAFT needs both sides ≥ {MIN_SIDE}")
        left, _, top, _ = pad_to_8(h, w)
        with self._torch.inference_mode():
            flow = self._net(self._prepare(prevs), self._prepare(nexts), self.updates)
            flow = flow[:, :, top : top + h, left : left + w].permute(0, 2, 3, 1)
            out = flow.float().cpu().numpy()
        return [np.ascontiguousarray(f, dtype=np.float32) for f in out]

    def __call__(self, prev: Image, nxt: Image) -> Flow:
        return self.batch([prev], [nxt])[0]


def raft(model: str = "", **kwargs: Any) -> RaftFlow:
    """``--flow raft[:FILE]`` (torchvision's raft_large file by default)."""
    return RaftFlow(model, variant="large", **kwargs)


def raft_small(model: str = "", **kwargs: Any) -> RaftFlow:
    """``--flow raft-small[:FILE]`` (torchvision's raft_small file by default)."""
    return RaftFlow(model, variant="small", **kwargs)
