"""Case folders made in the tests: WorldMark's ``arena_inputs/`` layout with seeded scenes.

The layout follows WorldMark's published ``arena_inputs/README.txt``; the images are drawn
here (a seeded scene of shapes over a smooth background), never copied.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

PROTOCOL_TEXT = """Action protocol (test copy of the published table)
Keys:  W=forward  S=back  A=strafe-left  D=strafe-right  L=turn-left  R=turn-right
 1: W      (forward)
 2: S      (back)
 3: A      (strafe left)
 4: D      (strafe right)
 5: R      (turn right)
 6: WS     (forward -> back)
 7: LR     (turn-left -> turn-right)
 8: AD     (strafe-left -> strafe-right)
 9: WR     (forward -> turn-right)
10: SL     (back -> turn-left)
11: WSW    (forward -> back -> forward)
12: LRL    (turn-left -> turn-right -> turn-left)
13: WRW    (forward -> turn-right -> forward)
14: ADA    (strafe-left -> strafe-right -> strafe-left)
15: WRS    (forward -> turn-right -> back)
"""

# set -> (image sizes (w, h), image suffix, action rows, view prefix of the captions)
SETS: dict[str, tuple[list[tuple[int, int]], str, list[str], str]] = {
    "first_view/real": ([(160, 120), (161, 97), (200, 112)], ".jpg",
                        ["1, 6, 9", "2, 5", "11, 15"], "First-person view."),
    "third_view/style": ([(96, 96), (96, 96), (96, 96)], ".png",
                         ["1, 6", "3", "7, 12, 14"], "Third-person view."),
}  # fmt: skip
CASES_PER_SET = {"first_view/real": 7, "third_view/style": 6}


def scene(seed: int, width: int, height: int) -> npt.NDArray[np.uint8]:
    """A seeded RGB scene: a smooth background, forty filled shapes, a little noise."""
    rng = np.random.default_rng(seed)
    low = rng.random((6, 8, 3)).astype(np.float32) * 255
    img = cv2.resize(low, (width, height), interpolation=cv2.INTER_CUBIC)
    scale = max(width, height) / 1024
    for _ in range(40):
        colour = [int(c) for c in rng.integers(0, 255, 3)]
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        if rng.random() < 0.5:
            w, h = (max(2, int(rng.integers(20, 300) * scale)) for _ in range(2))
            cv2.rectangle(img, (x, y), (x + w, y + h), colour, -1)
        else:
            cv2.circle(img, (x, y), max(1, int(rng.integers(10, 150) * scale)), colour, -1)
    img += rng.normal(0, 12, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def write_image(path: Path, rgb: npt.NDArray[np.uint8], quality: int = 90) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    params = [cv2.IMWRITE_JPEG_QUALITY, quality] if path.suffix == ".jpg" else []
    ok, data = cv2.imencode(path.suffix, np.ascontiguousarray(rgb[:, :, ::-1]), params)
    assert ok
    path.write_bytes(data.tobytes())
    return path


def caption(set_name: str, index: int) -> str:
    return f"{SETS[set_name][3]} Scene {index} of {set_name}, with shapes over a soft sky."


def intrinsics(width: int, height: int, index: int) -> npt.NDArray[np.float32]:
    f = 0.8 * width + index
    return np.array([f, f, (width - 1) / 2, (height - 1) / 2], np.float32)


def write_arena(root: Path, *, protocol: bool = True) -> Path:
    """An ``arena_inputs`` folder: 2 sets of 3 images with captions, actions, intrinsics."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.txt").write_text("test inputs in WorldMark's arena_inputs layout\n")
    if protocol:
        (root / "action_protocol.txt").write_text(PROTOCOL_TEXT)
    for s, (set_name, (sizes, suffix, rows, _)) in enumerate(SETS.items()):
        view, domain = set_name.split("/")
        for i, (w, h) in enumerate(sizes):
            write_image(root / view / domain / f"{i:03d}{suffix}", scene(100 * s + i, w, h))
            path = root / view / f"{domain}_intrinsics" / f"{i:03d}_intrinsics.npy"
            path.parent.mkdir(exist_ok=True)
            np.save(path, intrinsics(w, h, i))
        (root / view / f"{domain}_action.txt").write_text("\n".join(rows))  # no final newline
        captions = [caption(set_name, i) for i in range(len(sizes))]
        (root / view / f"prompt_{domain}.txt").write_text("\n".join(captions) + "\n")
    return root
