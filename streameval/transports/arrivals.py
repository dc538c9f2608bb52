"""The arrival log of a live session: which key was held when, and what was counted.

Alignment by arrival (docs/serve-formats.md#alignment-and-recordings): a frame that does not say
which key conditioned it gets the key whose keydown was sent last before the frame arrived. Counters
name every frame that did not make it into the episode and why.
"""

from __future__ import annotations

import bisect
from typing import Literal

from streameval.protocol.keys import NO_KEY

Alignment = Literal["scheduled", "reported", "inferred"]


class ArrivalLog:
    def __init__(self) -> None:
        self.key_times: list[float] = []
        self.key_names: list[str] = []
        self.n_frames = 0
        self.alignment: Alignment = "inferred"
        self._counters: dict[str, int] = {}
        self._server_times: list[float] = []

    @property
    def keys_sent(self) -> int:
        return len(self.key_times)

    def key_down(self, key: str, t_wall: float) -> None:
        self.key_times.append(t_wall)
        self.key_names.append(key)

    def key_at(self, t_wall: float) -> str:
        """The key held at ``t_wall`` (the last keydown sent at or before it)."""
        j = bisect.bisect_right(self.key_times, t_wall) - 1
        return self.key_names[j] if j >= 0 else NO_KEY

    def frame(self, t_wall: float, t_server: float | None) -> None:
        self.n_frames += 1
        if t_server is not None:
            self._server_times.append(t_server)

    def count(self, what: str, n: int = 1) -> None:
        self._counters[what] = self._counters.get(what, 0) + n

    def counter(self, what: str) -> int:
        return self._counters.get(what, 0)

    def counters(self) -> dict[str, int | str]:
        """What goes into ``scores.json`` ``interactivity`` from the transport's side."""
        out: dict[str, int | str] = {"alignment": self.alignment}
        for name in (
            "duplicate",
            "out_of_order",
            "missing",
            "malformed",
            "dropped_transport",
            "preroll",
            "before_ready",
            "reconnects",
        ):
            out[f"frames_{name}" if name not in ("malformed", "reconnects") else name] = (
                self._counters.get(name, 0)
            )
        return out
