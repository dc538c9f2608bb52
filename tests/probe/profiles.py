"""The ``worldfoundry`` profile as the probe tests' servers need it: their test servers (written
before the Studio's own code was run) stream without a start image, which the real Studio does
not (its built-in profile says ``required = true``, and ``probe`` then asks for ``--image``).
Same name, same messages; only the start is optional."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from streameval.transports.profiles import load_profile


@cache
def worldfoundry_any_start() -> str:
    """A file: the built-in ``worldfoundry`` profile without ``required = true``."""
    text = Path(load_profile("worldfoundry").path).read_text(encoding="utf-8")
    assert "required = true" in text
    folder = Path(tempfile.mkdtemp(prefix="probe-profiles-"))
    path = folder / "worldfoundry.toml"
    path.write_text(text.replace("required = true", "required = false"), encoding="utf-8")
    return str(path)
