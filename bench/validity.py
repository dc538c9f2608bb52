"""The defect × metric table for two worlds in one run (docs/methods.md#cpu-defaults-and-backends).

Worlds: the procedural world (``streameval.worlds``) and a third-party OpenGL room
(``bench/gl_world.py``: moderngl on Mesa's software rasteriser). Both send bare frames (no depth,
no pose), as most real model servers do, so the depth-free motion-type path runs. Defects:
clean; still (lossless, and x264 CRF 18 and 28 through PyAV); reversed keys; a 3 s lag; a 1 s
stall in every 3 s; a strafe that also turns; a jump elsewhere at each key switch; blur. Columns:
the eight control metrics, then Local and Revisit Memory. Short episodes (W S A D L R, 5 s
each) keep the run to a few minutes on two cores.

The OpenGL world needs the optional extra: ``pip install -e '.[bench]'`` (moderngl) and a Mesa
EGL driver (``apt-get install libegl-mesa0``); without it only the procedural world is printed.

Measured (2 cores, 219 s; CPU default stack; README "How the numbers are made"): still
worlds, lossless and CRF 18/28, score direction accuracy and purity 0 on both worlds and on every
scene family of the last table (procedural towns 1 and 2, the OpenGL room's flat, high-frequency
and banded-gradient walls); clean accuracy 100.0 / 99.3 (procedural, trans / rot) and
100.0 / 98.2 (OpenGL); reverse -> accuracy 0; a 3 s lag -> latency 37.5-40.6 against 86-99
clean, accuracy kept (rot 99.3 / 98.7); 1 s stalls in every 3 s -> stability 58.6 / 8.6 against
100, accuracy kept (rot 98.9 / 98.2); a strafe that also turns -> trans purity 82.8 / 62.0
against 98.7 / 94.9; a jump at each switch -> Revisit 50.9 (procedural, a cut at each switch:
Local 0) / 88.4 (OpenGL) against 99-100; blur within 1.5 points; 30 deg/s turns: rotation
accuracy 99.9 / 99.9. Open: a still CRF 28 clip keeps some stability (rot 50.0 procedural,
trans 16.5 OpenGL); with 30 deg/s turns the shared v_ref of latency puts the strafes out of
reach (latency trans 32.9).

Usage: python bench/validity.py [--seconds-per-key 5]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.inprocess.driver import InProcessSource

Frame = npt.NDArray[np.uint8]
KEYS = ["W", "S", "A", "D", "L", "R"]
COLUMNS = {
    f"{m}_{c}": f"{short}_{c[:3]}"
    for m, short in (
        ("direction_accuracy", "acc"),
        ("direction_purity", "pur"),
        ("motion_stability", "stab"),
        ("response_latency", "lat"),
    )
    for c in ("trans", "rot")
} | {"local_memory": "local", "revisit_memory": "revisit"}
# name -> (procedural-world overrides, OpenGL-world config fields, x264 CRF or None)
DEFECTS: dict[str, tuple[dict[str, Any], dict[str, Any], int | None]] = {
    "clean": ({}, {}, None),
    "still": ({"freeze_after_s": 0.0}, {"still": True}, None),
    "still crf18": ({"freeze_after_s": 0.0}, {"still": True}, 18),
    "still crf28": ({"freeze_after_s": 0.0}, {"still": True}, 28),
    "reversed": ({"key_map": {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L"}},
                 {"reversed": True}, None),
    "lag 3s": ({"response_delay_s": 3.0}, {"delay_s": 3.0}, None),
    "stall 1s/3s": (
        {"hiccup_period_s": 3.0, "hiccup_duration_s": 1.0},
        {"stall_period_s": 3.0, "stall_s": 1.0},
        None,
    ),
    "strafe turns": ({"leak_yaw_on_strafe": 2.0}, {"leak_yaw_on_strafe": 1.0}, None),
    "jump@switch": ({}, {"jump_at_switch": True}, None),  # procedural: a cut at each switch
    "blur": ({"blur_sigma": 2.5}, {"blur_sigma": 2.5}, None),
    "fast turn": ({"yaw_rate_deg": 30.0}, {"yaw_rate_deg": 30.0}, None),  # not a defect
}  # fmt: skip


class Frames:
    """A model that plays frames rendered in advance (so a codec can run over the whole clip)."""

    def __init__(self, frames: list[Frame], fps: float) -> None:
        self.frames, self.fps, self.k = frames, fps, 0

    def step(self, key: str) -> Frame:
        frame = self.frames[min(self.k, len(self.frames) - 1)]
        self.k += 1
        return frame


def x264(frames: list[Frame], fps: float, crf: int) -> list[Frame]:
    """Encode with libx264 (yuv420p, CRF ``crf``) through PyAV and decode back."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=round(fps), options={"crf": str(crf)})
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = "yuv420p"
        for f in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(stream.encode())
    buf.seek(0)
    with av.open(buf) as inp:
        return [fr.to_ndarray(format="rgb24") for fr in inp.decode(video=0)]


def procedural(overrides: dict[str, Any], keys: list[str], spk: float) -> tuple[list[Frame], float]:
    world = ProceduralWorld(world_config_for_defect("clean", **overrides))
    return [world.step(k).image for k in keys], world.fps


def gl(fields: dict[str, Any], keys: list[str], spk: float) -> tuple[list[Frame], float]:
    from bench.gl_world import GLConfig, GLWorld

    world = GLWorld(GLConfig(**fields))
    return [world.step(k) for k in keys], world.fps


def score(frames: list[Frame], fps: float, schedule: Schedule, name: str) -> dict[str, Any]:
    h, w = frames[0].shape[:2]
    source = InProcessSource(
        Frames(frames, fps), schedule, episode=name, model_name=name, suite="validity",
        width=w, height=h,
    )  # fmt: skip
    config = PipelineConfig(cuts="scenedetect-adaptive")
    outcome = asyncio.run(run_episode(source, config=config))
    return dict(outcome.scores.metrics)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-per-key", type=float, default=5.0)
    args = parser.parse_args()
    worlds: dict[str, Callable[..., tuple[list[Frame], float]]] = {"procedural": procedural}
    try:
        import moderngl  # noqa: F401

        worlds["opengl"] = gl
    except ImportError:
        print("OpenGL world skipped: pip install -e '.[bench]' (moderngl) and Mesa EGL")
    columns = list(COLUMNS)
    t_start = time.monotonic()
    for world_name, render in worlds.items():
        print(f"\n== {world_name} world (bare frames, no depth/pose) ==")
        for defect, (proc, glf, crf) in DEFECTS.items():
            fps = 16.0
            schedule = Schedule.per_key(KEYS, args.seconds_per_key, fps)
            keys = list(schedule.frame_keys())
            if world_name == "procedural":
                spec = dict(proc)
                if defect == "jump@switch":
                    spec["hard_cut_every_s"] = args.seconds_per_key
                frames, fps = render(spec, keys, args.seconds_per_key)
            else:
                frames, fps = render(glf, keys, args.seconds_per_key)
            if crf is not None:
                frames = x264(frames, fps, crf)
            metrics = score(frames, fps, schedule, f"{world_name}-{defect}")
            if defect == "clean":
                print(f"{'defect':<14}" + "".join(f"{COLUMNS[c]:>9}" for c in columns))
            row = [metrics[c].normalized if c in metrics else None for c in columns]
            print(f"{defect:<14}" + "".join(f"{_cell(v):>9}" for v in row), flush=True)
    still_families(worlds, args.seconds_per_key)
    print(f"\n({time.monotonic() - t_start:.0f} s; '-' = not applicable or missing)")


STILL_COLUMNS = [c for c in COLUMNS if c.startswith(("direction_accuracy", "direction_purity"))]


def still_families(worlds: dict[str, Callable[..., tuple[list[Frame], float]]], spk: float) -> None:
    """Still worlds on every scene family the table above does not show: the highest direction
    accuracy or purity (our bar for a still: <= 5), lossless and x264 CRF 18 / 28."""
    print("\n== stills on every scene family: max of accuracy and purity (trans, rot) ==")
    schedule = Schedule.per_key(KEYS, spk, 16.0)
    keys = list(schedule.frame_keys())
    families: list[tuple[str, Callable[..., tuple[list[Frame], float]], dict[str, Any]]] = [
        (f"procedural town {seed}", procedural, {"freeze_after_s": 0.0, "seed": seed})
        for seed in (1, 2)
    ]
    if "opengl" in worlds:
        families += [
            (f"opengl {family}", worlds["opengl"], {"still": True, "family": family})
            for family in ("flat", "hifreq", "outdoor")
        ]
    print(f"{'family':<22}{'lossless':>10}{'crf18':>10}{'crf28':>10}")
    for name, render, spec in families:
        frames, fps = render(spec, keys, spk)
        cells = []
        for crf in (None, 18, 28):
            clip = frames if crf is None else x264(frames, fps, crf)
            metrics = score(clip, fps, schedule, f"still-{name}-{crf}")
            values = [metrics[c].normalized for c in STILL_COLUMNS if c in metrics]
            known = [v for v in values if v is not None]
            cells.append(_cell(max(known)) if known else "-")
        print(f"{name:<22}" + "".join(f"{c:>10}" for c in cells), flush=True)


def _cell(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


if __name__ == "__main__":
    main()
