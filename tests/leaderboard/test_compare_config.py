"""``compare``'s readers on hand-written results: the configuration of a run (from its
scores.json, cache and ledger) and the runtime figures of the ``runtime`` object."""

from __future__ import annotations

import json
from pathlib import Path

from streameval.leaderboard.compare import (
    configuration_differences,
    run_configuration,
    runtime_figures,
)


def _episode(root: Path, name: str, *, fps: float, width: int, runtime: dict | None) -> None:
    folder = root / "m" / name
    (folder / "cache").mkdir(parents=True)
    doc: dict = {
        "fps": fps,
        "provenance": {"source": "ws://127.0.0.1:9/x", "backends": {"flow": "dis-fast"}},
    }
    if runtime is not None:
        doc["runtime"] = runtime
    (folder / "scores.json").write_text(json.dumps(doc))
    meta = {"width": width, "height": 432, "session": "paced"}
    (folder / "cache" / "episode.json").write_text(json.dumps(meta))


def test_configuration_and_runtime_figures(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _episode(a, "e1", fps=16, width=640, runtime={"native_fps": 15.0, "realtime": "pass"})
    _episode(a, "e2", fps=16, width=640, runtime={"native_fps": 17.0, "realtime": "fail"})
    _episode(b, "e1", fps=32, width=320, runtime=None)
    (b / "ledger.json").write_text(
        json.dumps({"host": {"cores": 2}, "inputs": {"options": {"out": "x", "flow": "dis-fast"}}})
    )
    config_a = run_configuration(a)
    assert config_a["transport"] == "ws (paced)" and config_a["resolution"] == "640×432"
    assert config_a["fps.native"] == "15.0, 17.0" and config_a["backends.flow"] == "dis-fast"
    differences = configuration_differences(config_a, run_configuration(b))
    assert [(d.key, d.a, d.b) for d in differences] == [
        ("fps.announced", "16", "32"),
        ("fps.native", "15.0, 17.0", "not recorded"),
        ("resolution", "640×432", "320×432"),
        ("host.cores", "not recorded", "2"),
        ("options.flow", "not recorded", "dis-fast"),  # "out" is where, not how
    ]
    figures = runtime_figures(a)
    assert figures["native_fps"] == "16.00" and figures["realtime"] == "fail, pass"
    assert runtime_figures(b)["native_fps"] == "not measured"
