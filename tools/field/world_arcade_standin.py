"""Run world-arcade's own server (dweam-team/world-arcade: ``dweam/server.py``,
``dweam/worker.py``, ``dweam/game_process.py``) with only its game — the world model — swapped
for ``StandInWorld`` (tools/field/README.md says how to fetch their code).

How the swap is made, without touching their code: world-arcade loads each game package of its
``DEFAULT_SOURCE_CONFIG`` from a local path first (``PathSource``, how its developers run a
local checkout of a game), pip-installing it into its games venv (``$CACHE_DIR/dweam-venv``)
and reading the package's ``dweam.toml`` (``type``, ``entrypoint``, ``games``). This launcher
writes such a package at the path of one of those slots (``diamond-csgo``) whose
``dweam.toml`` names ``StandInGame`` below as its entrypoint (game type ``standin``, id
``keyworld``), and starts their FastAPI app with uvicorn as their ``dweam/scripts/serve.py``
does. Everything else is theirs: the offer route and its server-sent events, the worker
process and its TCP command channel, ``GameRTCConnection`` (data channel, heartbeat, keyCode
→ pygame mapping through ``JS_TO_PYGAME_KEY_MAP``), ``GameVideoTrack`` (its 1/30 s sleep and
``next_timestamp``), the ``Game`` base class's loop (pygame events, ``clock.tick(30)``, a
one-frame buffer).

``dweam/game_process.py`` imports torch although nothing in it uses torch (the real games need it);
a CUDA torch is gigabytes, so an empty module named torch stands in for it on that process's
path (``$CACHE_DIR/stubs/torch``). That is the only stub.

Usage:
    python world_arcade_standin.py --src /tmp/field/wa --port 8080   (with their venv's python)
Then: ``webrtc+http://127.0.0.1:8080/offer/standin/keyworld`` with ``--profile keycode``.
Environment: STANDIN_IMAGE (the picture the world starts from), STANDIN_SIZE (default 320x192).
"""

from __future__ import annotations

import argparse
import os
import site
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from standin_world import StandInWorld  # noqa: E402

SLOT = ("diamond-csgo", "diamond_csgo")  # one of world-arcade's PathSource slots


def _game_class() -> type:
    """``StandInGame``, a subclass of their ``dweam.game.Game`` (built on first use: their
    package and pygame are imported only in their venv)."""
    import pygame
    from dweam.game import Game

    # pygame key → (forward, right, yaw, pitch): WASD move, the arrows turn and look up/down,
    # and j/l turn as the arrows do (two names for one action, as some games have)
    motion = {
        pygame.K_w: (1, 0, 0, 0), pygame.K_s: (-1, 0, 0, 0),
        pygame.K_a: (0, -1, 0, 0), pygame.K_d: (0, 1, 0, 0),
        pygame.K_LEFT: (0, 0, -1, 0), pygame.K_RIGHT: (0, 0, 1, 0),
        pygame.K_j: (0, 0, -1, 0), pygame.K_l: (0, 0, 1, 0),
        pygame.K_UP: (0, 0, 0, 1), pygame.K_DOWN: (0, 0, 0, -1),
    }  # fmt: skip

    class StandInGame(Game):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            width, height = (int(v) for v in os.getenv("STANDIN_SIZE", "320x192").split("x"))
            self.world = StandInWorld(width, height, fps=30.0)  # their loop ticks at 30
            image = None
            path = os.getenv("STANDIN_IMAGE")
            if path:
                image = pygame.surfarray.array3d(pygame.image.load(path)).swapaxes(0, 1)
            self.world.reset(image)

        def step(self) -> Any:
            move = np.zeros(4)
            for key in self.keys_pressed:
                move += motion.get(key, (0, 0, 0, 0))
            frame = self.world.step(*np.clip(move, -1, 1))
            return pygame.surfarray.make_surface(frame.swapaxes(0, 1))

    return StandInGame


def __getattr__(name: str) -> Any:  # ``world_arcade_standin:StandInGame`` as their entrypoint
    if name == "StandInGame":
        return _game_class()
    raise AttributeError(name)


def _prepare(run_dir: Path, cache: Path) -> None:
    """The game package at the slot's path, and the stand-in's folder plus the torch stub on
    the games venv's path."""
    folder, module = SLOT
    pkg = run_dir / folder / module
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "dweam.toml").write_text(
        textwrap.dedent("""\
        type = "standin"
        entrypoint = "world_arcade_standin:StandInGame"
        [games.keyworld]
        title = "Stand-in world (streameval tools/field)"
        description = "A key-obeying numpy world in place of a world model"
        """)
    )
    (run_dir / folder / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{module}"
        version = "0.0.1"
        [tool.setuptools.package-data]
        {module} = ["dweam.toml"]
        """)
    )
    stubs = cache / "stubs" / "torch"
    stubs.mkdir(parents=True, exist_ok=True)
    (stubs / "__init__.py").write_text(
        '"""Empty: game_process.py imports torch and uses none."""\n'
    )
    (Path(site.getsitepackages()[0]) / "streameval_field.pth").write_text(
        f"{HERE}\n{cache / 'stubs'}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default="/tmp/field/wa", help="their source tree")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--run-dir", default="/tmp/field/wa-run")
    args = parser.parse_args()
    cache = Path(os.environ.setdefault("CACHE_DIR", "/tmp/field/wa-cache"))
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # as their serve.py
    # their loader pip-installs every slot (git sources fail here: no network but PyPI)
    os.environ.setdefault("PIP_NO_BUILD_ISOLATION", "1")
    os.environ.setdefault("PIP_RETRIES", "0")
    os.environ.setdefault("PIP_TIMEOUT", "5")
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
    run_dir = Path(args.run_dir)
    _prepare(run_dir, cache)
    os.chdir(run_dir)
    sys.path.insert(0, args.src)
    import uvicorn
    from dweam.server import app

    uvicorn.run(app, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
