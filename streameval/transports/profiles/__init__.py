"""Server profiles: how a family of servers talks, as data (TOML), not code.

The built-ins ship as TOML files beside this module and are registered by name in a
``Registry``; ``--profile PATH.toml`` reads a file instead, so a new server style needs no
code change (docs/serve-formats.md#writing-a-profile). ``streameval profiles`` lists them.
"""

from __future__ import annotations

from pathlib import Path

from streameval.core.registry import Registry
from streameval.errors import UnknownProfileError
from streameval.transports.profiles.model import (
    ServerProfile,
    parse_profile,
    read_profile_file,
)

__all__ = ["PROFILES", "ServerProfile", "UnknownProfileError", "load_profile", "parse_profile"]

HERE = Path(__file__).resolve().parent
BUILT_INS = (
    "worldfoundry",
    "keycode",
    "press",
    "gamecraft",
    "camera-pose",
    "public",
    "yume-webapp",
    "matrix-game-3-interactive",
    "serve",
    "overworld",
    "web-wasd",
)


PROFILES: Registry[str] = Registry("server profile", error=UnknownProfileError, lazy=False)
"""Name → the TOML file that defines it."""
for _name in BUILT_INS:
    PROFILES.register(_name, str(HERE / f"{_name.replace('-', '_')}.toml"))


def load_profile(spec: str) -> ServerProfile:
    """A built-in by name, or a file (a path ending in ``.toml`` or naming a directory
    part); every problem is one ``BadInputError`` naming the file and the field."""
    if spec.endswith(".toml") or "/" in spec or "\\" in spec:
        return read_profile_file(Path(spec))
    return read_profile_file(Path(PROFILES.get(spec)))


def built_in_profiles() -> list[ServerProfile]:
    return [load_profile(name) for name in PROFILES.names()]
