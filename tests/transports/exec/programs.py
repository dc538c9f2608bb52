"""The programs the ``exec:`` tests start, as source text written into the test's folder.

The program (``INTERACTIVE``) is written from the public description of Matrix-Game 3's interactive
pipeline (``generate.py --interactive``): per chunk it prints a key legend and asks with
``input()`` for a mouse action (i k j l u), then a keyboard action (w s a d q), renders the
chunk (the first longer than the rest) and writes it as
``{output_dir}/{save_name}_current_iteration_{i}.mp4``; after ``--num_iterations`` chunks it
writes ``{save_name}.mp4`` with every frame and exits. ``--frames stdout`` instead writes PNG
frames to stdout and asks on stderr. No streameval code: the model is the procedural world.
``--reverse`` turns every key the opposite way; ``--fault`` plays one failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

INTERACTIVE = r"""
import argparse
import os
import sys
import time

import av
import cv2
import numpy as np

from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

KEYBOARD = {"w": "W", "s": "S", "a": "A", "d": "D", "q": None}
MOUSE = {"j": "L", "l": "R", "u": None, "i": None, "k": None}
OPPOSITE = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L", "-": "-"}

parser = argparse.ArgumentParser()
parser.add_argument("--output_dir", default="./output")
parser.add_argument("--save_name", default="generated_video")
parser.add_argument("--num_iterations", type=int, default=12)
parser.add_argument("--first", type=int, default=12)
parser.add_argument("--chunk", type=int, default=8)
parser.add_argument("--frames", choices=["folder", "stdout"], default="folder")
parser.add_argument("--reverse", action="store_true")
parser.add_argument("--fault", default=None)
args = parser.parse_args()

if args.fault == "crash":
    print("Traceback (most recent call last):", file=sys.stderr)
    print("ModuleNotFoundError: No module named 'wan'", file=sys.stderr)
    sys.exit(1)
if args.fault == "mute":
    print("loading the model ...", file=sys.stderr)
    time.sleep(3600)

ask = sys.stdout if args.frames == "folder" else sys.stderr
# 320×216 (the depth on the same 160×108 grid): the tests are not about the resolution
world = ProceduralWorld(world_config_for_defect(
    "clean", width=320, height=216, depth_downsample=2, depth_range_m=None,
    depth_resolvable_step=None))


def question(text):
    if args.frames == "folder":
        return input(text)
    sys.stderr.write(text)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def write_mp4(path, frames):
    container = av.open(path, "w", format="mp4")
    stream = container.add_stream("libx264", rate=24)
    stream.width, stream.height = frames[0].shape[1], frames[0].shape[0]
    stream.pix_fmt = "yuv420p"
    stream.options = {"preset": "ultrafast", "crf": "16"}
    for image in frames:
        for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()


os.makedirs(args.output_dir, exist_ok=True)
every = []
for clip in range(args.num_iterations):
    print(f" Iteration {clip + 1}/{args.num_iterations}", flush=True)
    print("-" * 30, file=ask)
    print("PRESS [I, K, J, L, U] FOR CAMERA TRANSFORM", file=ask)
    print("PRESS [W, S, A, D, Q] FOR MOVEMENT", file=ask)
    print("-" * 30, file=ask)
    while True:
        mouse = question("Please input the mouse action (e.g. `U`):\n").strip().lower()
        keyboard = question("Please input the keyboard action (e.g. `W`):\n").strip().lower()
        if mouse in MOUSE and keyboard in KEYBOARD:
            break
    key = KEYBOARD[keyboard] or MOUSE[mouse] or "-"
    if args.reverse:
        key = OPPOSITE[key]
    if args.fault == "silent" and clip == 1:
        time.sleep(3600)
    if args.fault == "exit" and clip == 1:
        print("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr)
        sys.exit(3)
    count = args.first if clip == 0 else args.chunk
    frames = [np.ascontiguousarray(world.step(key).image) for _ in range(count)]
    every.extend(frames)
    if args.frames == "folder":
        write_mp4(f"{args.output_dir}/{args.save_name}_current_iteration_{clip}.mp4", frames)
    else:
        for image in frames:
            ok, png = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
            sys.stdout.buffer.write(png.tobytes())
        sys.stdout.buffer.flush()
if args.frames == "folder":
    write_mp4(f"{args.output_dir}/{args.save_name}.mp4", every)
print(f"Saved concatenated video with {args.num_iterations} segments", flush=True)
"""


def write_program(folder: Path) -> Path:
    path = folder / "interactive.py"
    path.write_text(INTERACTIVE)
    return path


def exec_url(program: Path, *args: str) -> str:
    """``exec:`` with this interpreter (the venv that has numpy, av and the world)."""
    return f"exec:{sys.executable} {program} " + " ".join(args)
