"""The run's evidence in ``index.html``: whether its repeated rollouts were identical (and how
far apart), the claim's verdict part by part, and what the hardware did — read from
``OUT/evidence.json``, which a run writes before its reports (the ledger, which hashes the
reports, comes after them)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from streameval.inputs.jsonfile import read_json_object_if_any
from streameval.report.html import number, table
from streameval.results.ledger import EVIDENCE_FILE


def _repeats(block: dict[str, Any]) -> list[str]:
    rows = []
    for e in block.get("episodes", []):
        identical = e.get("identical")
        verdict = (
            "not compared" if identical is None else ("identical" if identical else "NOT identical")
        )
        rows.append(
            [
                str(e.get("episode")),
                str(e.get("rollouts")),
                verdict,
                str(e.get("differing_frames")),
                number(e.get("psnr_db_min")),
                number(e.get("psnr_db_median")),
                str(e.get("reason") or ""),
            ]
        )
    header = ["episode", "rollouts", "verdict", "frames differing", "PSNR min (dB)",
              "PSNR median (dB)", "note"]  # fmt: skip
    overall = block.get("identical")
    said = {True: "identical", False: "not identical", None: "not all compared"}[overall]
    return [
        f"<h2>Same-seed identity (--repeat {escape(str(block.get('repeat')))}): {said}</h2>",
        table(header, rows),
    ]


def _claim(block: dict[str, Any]) -> list[str]:
    rows = [
        [f["field"], f["claimed"], f["measured"], f["verdict"]] for f in block.get("fields", [])
    ]
    text = escape(str(block.get("claim", {}).get("text")))
    return [
        f"<h2>Claim “{text}”: {escape(str(block.get('verdict')))}</h2>",
        table(["part", "claimed", "measured", "verdict"], rows),
    ]


def _hardware(block: dict[str, Any]) -> list[str]:
    gpu = block.get("gpu") or {}
    body = ["<h2>Hardware</h2>"]
    if gpu.get("measured"):
        rows = [
            [
                f"{d.get('index')} {d.get('name')}",
                number(_gib(d.get("memory_peak_bytes"))),
                number(_gib(d.get("memory_baseline_bytes"))),
                number(d.get("utilisation_mean_pct"), 1),
                number(d.get("power_mean_w"), 1),
                number(d.get("power_max_w"), 1),
            ]
            for d in gpu.get("devices", [])
        ]
        header = ["GPU", "peak memory (GiB)", "at start (GiB)", "utilisation mean (%)",
                  "power mean (W)", "power max (W)"]  # fmt: skip
        body += [f"<p class='note'>{escape(str(gpu.get('scope')))}</p>", table(header, rows)]
    else:
        body.append(f"<p>GPU: {escape(str(gpu.get('reason', 'not measured: no GPU')))}</p>")
    server = block.get("server") or {}
    if server.get("reported"):
        rows = [
            [name, number(s.get("median")), number(s.get("p95")), number(s.get("max")),
             str(s.get("count"))]
            for name, s in (server.get("statistics") or {}).items()
        ]  # fmt: skip
        body += [
            f"<p class='note'>{escape(str(server.get('scope')))}</p>",
            table(["statistic", "median", "p95", "max", "chunks"], rows),
        ]
    return body


def _gib(value: object) -> float | None:
    return value / 2**30 if isinstance(value, int | float) else None


def evidence_fragment(root: Path) -> list[str]:
    """The index's evidence sections (none when the run wrote no ``evidence.json``)."""
    doc = read_json_object_if_any(root / EVIDENCE_FILE)
    body: list[str] = []
    if isinstance(doc.get("repeats"), dict):
        body += _repeats(doc["repeats"])
    if isinstance(doc.get("claim"), dict):
        body += _claim(doc["claim"])
    if isinstance(doc.get("hardware"), dict):
        body += _hardware(doc["hardware"])
    return body
