"""``--flow sea-raft:CHECKOUT``: the reference's flow network, SEA-RAFT, from a local checkout.

Loaded the way the reference loads it (its ``wm_config.py`` points ``SEARAFT_CFG`` at
``<checkout>/config/eval/spring-M.json``; ``flow_eval.py`` puts the checkout's ``core/`` on
``sys.path``, builds ``RAFT(args)`` from that JSON and loads the Spring-M weights) and called as
it calls it: the colour analysis frame as float 0–255, resized by ``2**args.scale`` (bilinear,
``align_corners=False``), ``iters=args.iters`` (Spring-M: scale −1, 4 iterations), the last
``flow`` of ``test_mode``, resized back to the analysis frame (bilinear). SEA-RAFT pads to
multiples of 8 itself. The code is the checkout's; nothing of it is copied here.

Three departures, each for a stated reason:

- **Units.** The reference resizes the flow of the half-size image back to 640×432 *without*
  scaling its values, so its Sx/Srad are in half-resolution pixels (half the analysis-pixel
  flow for Spring-M). This backend multiplies by the resize ratio, so it returns analysis
  pixels like every other backend (DIS, RAFT) and the kernels' pixel constants mean one thing.
- **Weights.** The reference fetches ``MemorySlices/Tartan-C-T-TSKH-spring540x960-M`` from the
  Hugging Face hub (``RAFT.from_pretrained``); we never download: the same file is read from
  the HF cache, or the ``.pth`` of SEA-RAFT's README from ``<checkout>/models/``, and loaded
  with ``strict=True``.
- **No ImageNet initialisation.** ``RAFT(args)`` initialises its encoders from torchvision's
  ImageNet ResNet-34 (importing torchvision and downloading its weights) before the checkpoint
  overwrites every one of those values. That step is skipped while constructing (torchvision
  is not a dependency: it pins a torch release of its own, a CUDA build of several GB);
  ``strict=True`` then proves no parameter kept an initial value.

The checkout's modules have generic names (``raft``, ``utils``, ``config``, ...): they are
imported with the checkout first on ``sys.path`` and any module of the same name set aside,
which is restored afterwards.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from streameval.core.arrays import Flow, Image
from streameval.errors import BackendUnavailableError
from streameval.perception.raft_flow import (
    check_rgb_pair,
    file_digest,
    import_torch,
    pick_device,
)

JOB = "SEA-RAFT flow backend (sea-raft)"
REPO = "https://github.com/princeton-vl/SEA-RAFT"
CONFIG = Path("config/eval/spring-M.json")  # the reference's SEARAFT_CFG
CHECKPOINT = Path("models/Tartan-C-T-TSKH-spring540x960-M.pth")  # SEA-RAFT README's file
HUB_ID = "MemorySlices/Tartan-C-T-TSKH-spring540x960-M"  # what the reference loads
HUB_FILES = ("model.safetensors", "pytorch_model.bin")
# Top-level module names of the checkout's core/ and root (set aside while importing).
CHECKOUT_MODULES = frozenset({"raft", "update", "corr", "extractor", "layer", "utils", "config"})
GET = (
    f"get the code with `git clone {REPO} DIR` and the weights with `hf download {HUB_ID}` (the "
    f"checkpoint the reference loads; into the Hugging Face cache) or SEA-RAFT's README file "
    f"{CHECKPOINT.name} into DIR/{CHECKPOINT.parent}/, then pass --flow sea-raft:DIR"
)


def _hub_weights() -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for name in HUB_FILES:
        found = try_to_load_from_cache(HUB_ID, name)
        if isinstance(found, str):
            return Path(found)
    return None


def resolve_checkout(
    checkout: str | Path, config: str | Path | None = None, weights: str | Path | None = None
) -> tuple[Path, Path, Path]:
    """(checkout, config JSON, weights file), or one BackendUnavailableError naming every
    missing piece and how to get it."""
    if not str(checkout):
        raise BackendUnavailableError(f"{JOB}: no checkout given (--flow sea-raft:DIR); {GET}")
    root = Path(checkout).expanduser()
    if not root.is_dir():
        raise BackendUnavailableError(f"{JOB}: checkout {root} does not exist; {GET}")
    missing = []
    if not (root / "core" / "raft.py").is_file():
        missing.append(f"{root / 'core' / 'raft.py'} (the SEA-RAFT code)")
    cfg = Path(config).expanduser() if config else root / CONFIG
    if not cfg.is_file():
        missing.append(f"{cfg} (its config)")
    found: Path | None
    if weights:
        found = Path(weights).expanduser()
        if not found.is_file():
            missing.append(f"{found} (its weights)")
    else:
        found = root / CHECKPOINT if (root / CHECKPOINT).is_file() else _hub_weights()
        if found is None:
            missing.append(
                f"weights: neither {root / CHECKPOINT} nor {HUB_ID} in the Hugging Face cache"
            )
    if missing:
        raise BackendUnavailableError(f"{JOB}: missing {'; '.join(missing)}; {GET}")
    assert found is not None
    return root, cfg, found


@contextlib.contextmanager
def _checkout_imports(root: Path) -> Iterator[None]:
    """The checkout's ``core/`` and root first on sys.path, same-named modules set aside."""

    def ours(name: str) -> bool:
        return name.split(".")[0] in CHECKOUT_MODULES

    saved = {name: sys.modules.pop(name) for name in [n for n in sys.modules if ours(n)]}
    paths = [str(root / "core"), str(root)]
    sys.path[:0] = paths
    try:
        yield
    finally:
        for p in paths:
            sys.path.remove(p)
        for name in [n for n in sys.modules if ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


def _load_state(torch: Any, path: Path) -> dict[str, Any]:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state: dict[str, Any] = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    # a DataParallel-trained file prefixes every key with "module."
    if state and all(k.startswith("module.") for k in state):
        state = {k.removeprefix("module."): v for k, v in state.items()}
    return state


def build_sea_raft(root: Path, config: Path, weights: Path, torch: Any) -> tuple[Any, Any]:
    """(network in eval mode on the CPU, args) from the checkout, its config and weights.
    ``args`` is the config JSON as attributes, what the reference's ``RAFT(args)`` reads and
    writes (its own script passes an argparse namespace; nothing of argparse is needed)."""
    args = SimpleNamespace(**json.loads(config.read_text(encoding="utf-8")))
    with _checkout_imports(root):
        raft_module = importlib.import_module("raft")
        extractor = sys.modules.get("extractor")
        encoder = getattr(extractor, "ResNetFPN", None)
        original = getattr(encoder, "_init_weights", None)
        if encoder is not None and original is not None:

            def without_imagenet(self: Any, a: Any) -> None:
                self.init_weight = False  # the checkpoint overwrites these values (strict)
                original(self, a)

            encoder._init_weights = without_imagenet
        try:
            net = raft_module.RAFT(args)
        finally:
            if encoder is not None and original is not None:
                encoder._init_weights = original
    net.load_state_dict(_load_state(torch, weights), strict=True)
    return net.eval(), args


class SeaRaftFlow:
    """SEA-RAFT on the colour analysis frame, flow returned in analysis pixels.

    ``model``: the checkout. ``config``/``weights``: override the Spring-M JSON and the
    weights file (default: the checkout's ``models/`` file, else the reference's hub
    checkpoint from the HF cache). ``iters``: None = the config's. ``device``: None picks CUDA
    when available, else the CPU.
    """

    input = "rgb"

    def __init__(
        self,
        model: str | Path = "",
        *,
        config: str | Path | None = None,
        weights: str | Path | None = None,
        iters: int | None = None,
        device: str | None = None,
    ) -> None:
        root, cfg, weights_file = resolve_checkout(model, config, weights)
        self._torch = torch = import_torch(JOB)
        try:
            net, args = build_sea_raft(root, cfg, weights_file, torch)
        except Exception as err:  # code, config and weights that do not fit together
            raise BackendUnavailableError(
                f"{JOB}: cannot build SEA-RAFT from {root} with {cfg.name} and "
                f"{weights_file}: {type(err).__name__}: {err}"
            ) from err
        self.device = pick_device(torch, device)
        self._net = net.to(self.device)
        settings = vars(args)  # the config's keys; scale and name may be absent
        self.scale = int(settings.get("scale", 0))
        self.iters = int(iters if iters is not None else args.iters)
        self.name = f"sea-raft-{settings.get('name', cfg.stem)}"
        self.provenance = {
            "weights": file_digest(weights_file),
            "config": cfg.name,
            "device": self.device,
            "iterations": str(self.iters),
            "scale": str(self.scale),
        }

    def batch(self, prevs: Sequence[Image], nexts: Sequence[Image]) -> list[Flow]:
        """Flows of several pairs in one forward pass (same frame size), each (H, W, 2)."""
        if len(prevs) != len(nexts) or not prevs:
            raise ValueError("SEA-RAFT batch: as many next frames as previous ones, at least 1")
        for p, n in zip(prevs, nexts, strict=True):
            check_rgb_pair(p, n, self.name)
        torch = self._torch
        interpolate = torch.nn.functional.interpolate
        h, w = prevs[0].shape[:2]

        def tensor(frames: Sequence[Image]) -> Any:
            x = torch.from_numpy(np.stack(frames)).to(self.device).permute(0, 3, 1, 2).float()
            if self.scale:
                x = interpolate(x, scale_factor=2.0**self.scale, mode="bilinear")
            return x

        with torch.inference_mode():
            x1, x2 = tensor(prevs), tensor(nexts)
            out = self._net(x1, x2, iters=self.iters, test_mode=True)["flow"][-1]
            hs, ws = out.shape[-2:]
            flow = interpolate(out, size=(h, w), mode="bilinear", align_corners=False)
            # to analysis pixels (the reference leaves them in pixels of the resized image)
            ratio = torch.tensor([w / ws, h / hs], device=flow.device).view(1, 2, 1, 1)
            result = (flow * ratio).permute(0, 2, 3, 1).float().cpu().numpy()
        return [np.ascontiguousarray(f, dtype=np.float32) for f in result]

    def __call__(self, prev: Image, nxt: Image) -> Flow:
        return self.batch([prev], [nxt])[0]


def sea_raft(model: str = "", **kwargs: Any) -> SeaRaftFlow:
    """``--flow sea-raft:CHECKOUT``."""
    return SeaRaftFlow(model, **kwargs)
