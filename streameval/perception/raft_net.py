"""RAFT (Teed & Deng, ECCV 2020) in plain PyTorch, laid out as torchvision's ``raft_large`` /
``raft_small``.

Why our own: the reference's flow is a network (SEA-RAFT), and torchvision's RAFT is the
pip-installable one, but torchvision cannot be installed beside our torch (it pins a torch
release of its own, a CUDA build of several GB). So this module follows the *layout* of
torchvision's ``torchvision/models/optical_flow/raft.py`` (BSD-3-Clause, © Soumith Chintala
and the torchvision contributors) — the same module tree, parameter names and shapes — so that
torchvision's published checkpoints (``raft_large_C_T_SKHT_V2-ff5fadd5.pth``, ...) load into
it with ``strict=True`` and no torchvision installed. The code is written here from the paper
and that layout; nothing else of torchvision is used.

The architecture is read back from a checkpoint's shapes (:func:`config_from_state_dict`), so
one loader takes raft_large, raft_small or a tiny test configuration. Two things cannot be seen
in a state dict and are fixed as torchvision fixes them: the feature encoder's norm is
InstanceNorm2d (no parameters) unless the checkpoint carries BatchNorm statistics for it, and
the correlation pyramid has 4 levels (the radius follows from the motion encoder's input).

Imports torch at module level: only the flow registry imports this module, when a RAFT
backend is chosen (``import streameval`` stays torch-free).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from streameval.errors import InvalidDataError

Block = Literal["residual", "bottleneck"]
Norm = Literal["batch", "instance", "none"]
CORR_LEVELS = 4  # torchvision's raft_large and raft_small both use a 4-level pyramid
MASK_MULTIPLIER = 0.25  # the original RAFT's down-weighting of the upsampling mask


@dataclass(frozen=True)
class RaftConfig:
    """Every size that shapes a RAFT network (torchvision's ``_raft`` arguments)."""

    feature_layers: tuple[int, int, int, int, int]
    feature_block: Block
    feature_norm: Norm
    context_layers: tuple[int, int, int, int, int]
    context_block: Block
    context_norm: Norm
    corr_radius: int
    motion_corr_layers: tuple[int, ...]
    motion_flow_layers: tuple[int, int]
    motion_out: int
    hidden: int
    gru_kernels: tuple[tuple[int, int], ...]
    flow_head_hidden: int
    mask_hidden: int | None  # None: bilinear upsampling (raft_small)


RAFT_LARGE = RaftConfig(
    feature_layers=(64, 64, 96, 128, 256),
    feature_block="residual",
    feature_norm="instance",
    context_layers=(64, 64, 96, 128, 256),
    context_block="residual",
    context_norm="batch",
    corr_radius=4,
    motion_corr_layers=(256, 192),
    motion_flow_layers=(128, 64),
    motion_out=128,
    hidden=128,
    gru_kernels=((1, 5), (5, 1)),
    flow_head_hidden=256,
    mask_hidden=256,
)
RAFT_SMALL = RaftConfig(
    feature_layers=(32, 32, 64, 96, 128),
    feature_block="bottleneck",
    feature_norm="instance",
    context_layers=(32, 32, 64, 96, 160),
    context_block="bottleneck",
    context_norm="none",
    corr_radius=3,
    motion_corr_layers=(96,),
    motion_flow_layers=(64, 32),
    motion_out=82,
    hidden=96,
    gru_kernels=((3, 3),),
    flow_head_hidden=128,
    mask_hidden=None,
)

# 64 thousand parameters in the same layout: what the tests and bench/flow_backends.py run
# with random weights on the CPU to exercise the loading and calling path. Not a flow network.
RAFT_TINY = RaftConfig(
    feature_layers=(8, 8, 12, 16, 24),
    feature_block="residual",
    feature_norm="instance",
    context_layers=(8, 8, 12, 16, 24),
    context_block="residual",
    context_norm="batch",
    corr_radius=1,
    motion_corr_layers=(16, 12),
    motion_flow_layers=(8, 8),
    motion_out=16,
    hidden=12,
    gru_kernels=((1, 3), (3, 1)),
    flow_head_hidden=16,
    mask_hidden=16,
)


def variant_name(config: RaftConfig) -> str:
    """``raft-large``, ``raft-small`` or ``raft-custom`` (any other size, e.g. a test net)."""
    if config == RAFT_LARGE:
        return "raft-large"
    if config == RAFT_SMALL:
        return "raft-small"
    return "raft-custom"


def _norm(kind: Norm, channels: int) -> nn.Module | None:
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    if kind == "instance":
        return nn.InstanceNorm2d(channels)
    return None


def conv_norm_act(
    cin: int, cout: int, kernel: int, *, stride: int = 1, norm: Norm = "none", act: bool = True
) -> nn.Sequential:
    """Conv (bias always on, as torchvision's RAFT) [+ norm] [+ ReLU], indexed 0, 1, 2 like
    torchvision's ``Conv2dNormActivation`` so the parameter names match."""
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, bias=True)
    ]
    norm_layer = _norm(norm, cout)
    if norm_layer is not None:
        layers.append(norm_layer)
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class ResidualBlock(nn.Module):
    """Two 3×3 conv-norm-ReLUs plus a (projected when strided) skip, then ReLU."""

    def __init__(self, cin: int, cout: int, *, norm: Norm, stride: int) -> None:
        super().__init__()
        self.convnormrelu1 = conv_norm_act(cin, cout, 3, stride=stride, norm=norm)
        self.convnormrelu2 = conv_norm_act(cout, cout, 3, norm=norm)
        self.downsample: nn.Module = (
            nn.Identity()
            if stride == 1
            else conv_norm_act(cin, cout, 1, stride=stride, norm=norm, act=False)
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        y = self.convnormrelu2(self.convnormrelu1(x))
        out: Tensor = self.relu(self.downsample(x) + y)
        return out


class BottleneckBlock(nn.Module):
    """1×1 → 3×3 (strided) → 1×1 at a quarter of the width, plus skip, then ReLU."""

    def __init__(self, cin: int, cout: int, *, norm: Norm, stride: int) -> None:
        super().__init__()
        mid = cout // 4
        self.convnormrelu1 = conv_norm_act(cin, mid, 1, norm=norm)
        self.convnormrelu2 = conv_norm_act(mid, mid, 3, stride=stride, norm=norm)
        self.convnormrelu3 = conv_norm_act(mid, cout, 1, norm=norm)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module = (
            nn.Identity()
            if stride == 1
            else conv_norm_act(cin, cout, 1, stride=stride, norm=norm, act=False)
        )

    def forward(self, x: Tensor) -> Tensor:
        y = self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))
        out: Tensor = self.relu(self.downsample(x) + y)
        return out


class FeatureEncoder(nn.Module):
    """7×7/2 stem, three stages of two blocks (strides 1, 2, 2), 1×1 head: 1/8 resolution."""

    def __init__(self, layers: tuple[int, int, int, int, int], *, block: Block, norm: Norm) -> None:
        super().__init__()
        cls = ResidualBlock if block == "residual" else BottleneckBlock
        self.convnormrelu = conv_norm_act(3, layers[0], 7, stride=2, norm=norm)
        stages = []
        for cin, cout, stride in zip(layers[:3], layers[1:4], (1, 2, 2), strict=True):
            stages.append(
                nn.Sequential(
                    cls(cin, cout, norm=norm, stride=stride), cls(cout, cout, norm=norm, stride=1)
                )
            )
        self.layer1, self.layer2, self.layer3 = stages
        self.conv = nn.Conv2d(layers[3], layers[4], kernel_size=1)
        for m in self.modules():  # the initialisation torchvision uses (matters untrained only)
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        x = self.convnormrelu(x)
        out: Tensor = self.conv(self.layer3(self.layer2(self.layer1(x))))
        return out


class MotionEncoder(nn.Module):
    """Encodes correlation features and the current flow; the flow is appended unchanged."""

    def __init__(self, config: RaftConfig, corr_channels: int) -> None:
        super().__init__()
        corr = config.motion_corr_layers
        flow = config.motion_flow_layers
        self.convcorr1 = conv_norm_act(corr_channels, corr[0], 1)
        self.convcorr2: nn.Module = (
            conv_norm_act(corr[0], corr[1], 3) if len(corr) == 2 else nn.Identity()
        )
        self.convflow1 = conv_norm_act(2, flow[0], 7)
        self.convflow2 = conv_norm_act(flow[0], flow[1], 3)
        self.conv = conv_norm_act(corr[-1] + flow[1], config.motion_out - 2, 3)

    def forward(self, flow: Tensor, corr_features: Tensor) -> Tensor:
        corr = self.convcorr2(self.convcorr1(corr_features))
        motion = self.convflow2(self.convflow1(flow))
        return torch.cat([self.conv(torch.cat([corr, motion], dim=1)), flow], dim=1)


class ConvGRU(nn.Module):
    """GRU whose gates are convolutions over [hidden, input]."""

    def __init__(self, inputs: int, hidden: int, kernel: tuple[int, int]) -> None:
        super().__init__()
        pad = (kernel[0] // 2, kernel[1] // 2)
        self.convz = nn.Conv2d(hidden + inputs, hidden, kernel, padding=pad)
        self.convr = nn.Conv2d(hidden + inputs, hidden, kernel, padding=pad)
        self.convq = nn.Conv2d(hidden + inputs, hidden, kernel, padding=pad)

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class RecurrentBlock(nn.Module):
    """One or two ConvGRUs in sequence (raft_large: 1×5 then 5×1; raft_small: one 3×3)."""

    def __init__(self, inputs: int, hidden: int, kernels: tuple[tuple[int, int], ...]) -> None:
        super().__init__()
        self.convgru1 = ConvGRU(inputs, hidden, kernels[0])
        self.convgru2 = ConvGRU(inputs, hidden, kernels[1]) if len(kernels) == 2 else None

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        h = self.convgru1(h, x)
        return self.convgru2(h, x) if self.convgru2 is not None else h


class FlowHead(nn.Module):
    def __init__(self, cin: int, hidden: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, hidden, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.conv2(self.relu(self.conv1(x)))
        return out


class UpdateBlock(nn.Module):
    def __init__(self, config: RaftConfig, corr_channels: int) -> None:
        super().__init__()
        self.motion_encoder = MotionEncoder(config, corr_channels)
        context = config.context_layers[-1] - config.hidden
        self.recurrent_block = RecurrentBlock(
            config.motion_out + context, config.hidden, config.gru_kernels
        )
        self.flow_head = FlowHead(config.hidden, config.flow_head_hidden)

    def forward(
        self, hidden: Tensor, context: Tensor, corr: Tensor, flow: Tensor
    ) -> tuple[Tensor, Tensor]:
        x = torch.cat([context, self.motion_encoder(flow, corr)], dim=1)
        hidden = self.recurrent_block(hidden, x)
        return hidden, self.flow_head(hidden)


class MaskPredictor(nn.Module):
    """Weights of the convex 8× upsampling: 9 neighbours for each of the 8×8 sub-pixels."""

    def __init__(self, cin: int, hidden: int) -> None:
        super().__init__()
        self.convrelu = conv_norm_act(cin, hidden, 3)
        self.conv = nn.Conv2d(hidden, 8 * 8 * 9, 1)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = MASK_MULTIPLIER * self.conv(self.convrelu(x))
        return out


def coords_grid(batch: int, h: int, w: int, device: torch.device) -> Tensor:
    """(B, 2, h, w) pixel coordinates, channel 0 = x (column), channel 1 = y (row)."""
    ys, xs = torch.meshgrid(
        torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij"
    )
    return torch.stack([xs, ys]).float()[None].repeat(batch, 1, 1, 1)


def sample_at(volume: Tensor, coords: Tensor) -> Tensor:
    """Bilinear lookup of ``volume`` (N, C, H, W) at absolute pixel ``coords`` (N, h, w, 2 as
    x, y); outside the map reads 0 (align_corners=True normalisation, as RAFT)."""
    h, w = volume.shape[-2:]
    x, y = coords[..., :1], coords[..., 1:]
    grid = torch.cat([2 * x / (w - 1) - 1, 2 * y / (h - 1) - 1], dim=-1)
    return F.grid_sample(volume, grid, mode="bilinear", align_corners=True)


class CorrPyramid:
    """All-pairs correlation of two 1/8 feature maps, average-pooled ``levels`` times; looked
    up in a (2r+1)² window around each pixel's current match at every level."""

    def __init__(self, fmap1: Tensor, fmap2: Tensor, levels: int, radius: int) -> None:
        b, c, h, w = fmap1.shape
        corr = torch.matmul(fmap1.view(b, c, h * w).transpose(1, 2), fmap2.view(b, c, h * w))
        volume = (corr / math.sqrt(c)).reshape(b * h * w, 1, h, w)
        self.pyramid = [volume]
        for _ in range(levels - 1):
            volume = F.avg_pool2d(volume, kernel_size=2, stride=2)
            self.pyramid.append(volume)
        side = 2 * radius + 1
        offsets = torch.linspace(-radius, radius, side, device=fmap1.device)
        # delta[a, b] = (offsets[a], offsets[b]) added to (x, y): torchvision's ordering, which
        # fixes the channel order the motion encoder's weights expect.
        da, db = torch.meshgrid(offsets, offsets, indexing="ij")
        self.delta = torch.stack([da, db], dim=-1).view(1, side, side, 2)

    def __call__(self, coords: Tensor) -> Tensor:
        b, _, h, w = coords.shape
        centre = coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
        features = []
        for volume in self.pyramid:
            features.append(sample_at(volume, centre + self.delta).view(b, h, w, -1))
            centre = centre / 2
        return torch.cat(features, dim=-1).permute(0, 3, 1, 2).contiguous()


def upsample_flow(flow: Tensor, mask: Tensor | None) -> Tensor:
    """1/8 flow -> full resolution, in full-resolution pixels (×8): a convex combination of
    the 3×3 neighbourhood with ``mask``'s softmax weights, or bilinear without a mask."""
    b, _, h, w = flow.shape
    if mask is None:
        return 8 * F.interpolate(flow, size=(8 * h, 8 * w), mode="bilinear", align_corners=True)
    weights = torch.softmax(mask.view(b, 1, 9, 8, 8, h, w), dim=2)
    patches = F.unfold(8 * flow, kernel_size=3, padding=1).view(b, 2, 9, 1, 1, h, w)
    up = torch.sum(weights * patches, dim=2)
    return up.permute(0, 1, 4, 2, 5, 3).reshape(b, 2, 8 * h, 8 * w)


class RAFT(nn.Module):
    """Images (B, 3, H, W) in [-1, 1], H and W multiples of 8 -> flow (B, 2, H, W) in pixels
    from image1 to image2 after ``updates`` refinements (torchvision's default: 12)."""

    def __init__(self, config: RaftConfig) -> None:
        super().__init__()
        if config.context_layers[-1] <= config.hidden:
            raise ValueError("the context encoder must output more channels than the hidden state")
        self.config = config
        corr_channels = CORR_LEVELS * (2 * config.corr_radius + 1) ** 2
        self.feature_encoder = FeatureEncoder(
            config.feature_layers, block=config.feature_block, norm=config.feature_norm
        )
        self.context_encoder = FeatureEncoder(
            config.context_layers, block=config.context_block, norm=config.context_norm
        )
        self.update_block = UpdateBlock(config, corr_channels)
        self.mask_predictor = (
            MaskPredictor(config.hidden, config.mask_hidden)
            if config.mask_hidden is not None
            else None
        )

    def forward(self, image1: Tensor, image2: Tensor, updates: int = 12) -> Tensor:
        b, _, h, w = image1.shape
        if h % 8 or w % 8:
            raise ValueError(f"image height and width must be multiples of 8, got {h}×{w}")
        fmap1, fmap2 = torch.chunk(self.feature_encoder(torch.cat([image1, image2])), 2)
        corr = CorrPyramid(fmap1, fmap2, CORR_LEVELS, self.config.corr_radius)
        hidden, context = torch.split(
            self.context_encoder(image1),
            [self.config.hidden, self.config.context_layers[-1] - self.config.hidden],
            dim=1,
        )
        hidden, context = torch.tanh(hidden), F.relu(context)
        coords0 = coords_grid(b, h // 8, w // 8, image1.device)
        coords1 = coords0.clone()
        for _ in range(updates):
            hidden, delta = self.update_block(hidden, context, corr(coords1), coords1 - coords0)
            coords1 = coords1 + delta
        # Only the last estimate is wanted: torchvision upsamples every iteration (for its
        # training loss); the final upsampled flow is the same.
        mask = self.mask_predictor(hidden) if self.mask_predictor is not None else None
        return upsample_flow(coords1 - coords0, mask)


def _shape(state: Mapping[str, Tensor], key: str) -> tuple[int, ...]:
    try:
        return tuple(state[key].shape)
    except KeyError:
        raise InvalidDataError(f"not a torchvision-layout RAFT checkpoint: no {key!r}") from None


def _encoder(
    state: Mapping[str, Tensor], prefix: str, default_norm: Norm
) -> tuple[tuple[int, int, int, int, int], Block, Norm]:
    block: Block = (
        "bottleneck" if f"{prefix}.layer1.0.convnormrelu3.0.weight" in state else "residual"
    )
    last = "convnormrelu3" if block == "bottleneck" else "convnormrelu2"
    widths = [_shape(state, f"{prefix}.convnormrelu.0.weight")[0]]
    for stage in (1, 2, 3):
        widths.append(_shape(state, f"{prefix}.layer{stage}.1.{last}.0.weight")[0])
    widths.append(_shape(state, f"{prefix}.conv.weight")[0])
    norm: Norm = "batch" if f"{prefix}.convnormrelu.1.running_mean" in state else default_norm
    return (widths[0], widths[1], widths[2], widths[3], widths[4]), block, norm


def config_from_state_dict(state: Mapping[str, Tensor]) -> RaftConfig:
    """The :class:`RaftConfig` whose network has ``state``'s parameter shapes; ValueError
    naming the first key that is missing or inconsistent."""
    feature, feature_block, feature_norm = _encoder(state, "feature_encoder", "instance")
    context, context_block, context_norm = _encoder(state, "context_encoder", "none")
    me = "update_block.motion_encoder"
    corr_in = _shape(state, f"{me}.convcorr1.0.weight")[1]
    side = math.isqrt(corr_in // CORR_LEVELS)
    if CORR_LEVELS * side * side != corr_in or side % 2 == 0:
        raise InvalidDataError(f"{me}.convcorr1 takes {corr_in} channels: not 4 levels of (2r+1)²")
    corr_layers = [_shape(state, f"{me}.convcorr1.0.weight")[0]]
    if f"{me}.convcorr2.0.weight" in state:
        corr_layers.append(_shape(state, f"{me}.convcorr2.0.weight")[0])
    rb = "update_block.recurrent_block"
    kernels = [_shape(state, f"{rb}.convgru1.convz.weight")[2:4]]
    if f"{rb}.convgru2.convz.weight" in state:
        kernels.append(_shape(state, f"{rb}.convgru2.convz.weight")[2:4])
    mask = "mask_predictor.convrelu.0.weight"
    return RaftConfig(
        feature_layers=feature,
        feature_block=feature_block,
        feature_norm=feature_norm,
        context_layers=context,
        context_block=context_block,
        context_norm=context_norm,
        corr_radius=(side - 1) // 2,
        motion_corr_layers=tuple(corr_layers),
        motion_flow_layers=(
            _shape(state, f"{me}.convflow1.0.weight")[0],
            _shape(state, f"{me}.convflow2.0.weight")[0],
        ),
        motion_out=_shape(state, f"{me}.conv.0.weight")[0] + 2,
        hidden=_shape(state, f"{rb}.convgru1.convz.weight")[0],
        gru_kernels=tuple((k[0], k[1]) for k in kernels),
        flow_head_hidden=_shape(state, "update_block.flow_head.conv1.weight")[0],
        mask_hidden=_shape(state, mask)[0] if mask in state else None,
    )
