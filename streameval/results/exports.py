"""A run's recordings written in the layout an offline benchmark reads (``streameval export``,
docs/cli.md#export).

- ``worldmark``: WorldMark's canonical delivery layout (its ``output_spec.md``),
  ``{domain}/{view}/{MODEL}/{image:03d}_{action:03d}.mp4`` (``real/first/MYMODEL/000_006.mp4``),
  ``MODEL`` the upper-case model tag, at the recording's native fps and size; the video is the
  recording's own bytes (lossless when the run recorded losslessly, the default), never
  re-encoded. Beside each video, in the folder named after its stem (our sidecar convention,
  ``replay/delivery.py``), the action log as recorded (``actions.jsonl``, with ``keys.jsonl``,
  ``chunks.jsonl`` and the geometry sidecars when the recording has them) and what the
  recording's ``meta.json`` says of the live session (``recording.json``: the perception plan,
  the session kind), so that ``streameval replay`` of the export scores what the run scored.
  ``manifest.jsonl`` at the top is WorldMark's provenance manifest, one line per video, with
  the measured values and the key segments in the video's frames.
- ``wbench``: WBench's submission layout (its ``docs/SUBMISSION.md``),
  ``{model}/videos/case_<id>_combined.mp4`` with ``turns.json`` (each case's turn boundaries:
  a turn is a key segment) and ``meta.json`` (``type: action``). ``<id>`` is the case's name,
  with its set in front (``first_view_real_000_006``) when two sets share a name.
- ``raw``: the recordings as streameval records them (``recording/``: video, ``actions.jsonl``,
  ``keys.jsonl``, ``meta.json``, sidecars) in the run's own folders, with a case run's
  ``cases.json`` and ``manifest.jsonl``: ``streameval replay`` reads it as it reads the run.

Every export writes ``export.json``: what was exported from which run, each file with its
source, size and sha256, each episode's codec, fps, frame count and size, and the episodes
skipped with why. An episode without a recording (``--no-record``), or one the format cannot
hold (a WorldMark export of an episode that is no WorldMark case), is skipped with one line;
the others are exported.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from streameval.core.atomic import write_text_atomic
from streameval.core.version import __version__
from streameval.errors import BadInputError
from streameval.protocol.suites import WORLDMARK_DURATION_TOLERANCE, WORLDMARK_SECONDS_PER_KEY
from streameval.replay.actionlog import read_actions_jsonl
from streameval.replay.delivery import LIVE_KEYS, LIVE_RECORD, parse_delivery_name
from streameval.replay.frames import probe_video
from streameval.replay.layout import (
    ACTIONS,
    CASE_RUN,
    CHUNKS,
    DEPTH,
    DEPTH_MASK,
    INTRINSICS,
    KEYS,
    META,
    POSES,
    RECORDED_VIDEO,
    RECORDING_DIR,
    read_json,
)
from streameval.replay.rollout import schedule_from_keys
from streameval.results.layout import path_component
from streameval.results.scores_file import EpisodeRecord, load_results

Format = Literal["worldmark", "wbench", "raw"]
FORMATS: tuple[Format, ...] = ("worldmark", "wbench", "raw")
EXPORT_FORMAT = "streameval.export/1"
EXPORT_MANIFEST = "export.json"
WORLDMARK_MANIFEST = "manifest.jsonl"
CASE_MANIFEST = "manifest.jsonl"  # a case run's own (runs/cases.py), copied by raw
_SIDECARS = (KEYS, CHUNKS, POSES, INTRINSICS, DEPTH, DEPTH_MASK)
_CHUNK = 1 << 20


@dataclass
class ExportResult:
    """What an export wrote: its manifest, the episodes exported, one line per episode
    skipped and per warning (a video WorldMark's own gate would refuse, mixed fps, ...)."""

    out: Path
    manifest: Path
    exported: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Episode:
    """One episode to export: its scores' record, its recording folder and what was probed."""

    record: EpisodeRecord
    recording: Path
    meta: dict[str, Any]
    codec: str
    fps: float
    frames: int
    width: int
    height: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _copy(src: Path, dst: Path, files: list[dict[str, Any]], out: Path) -> None:
    """Copy ``src`` byte for byte to ``dst`` and list it with its source, size and hash."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    files.append(
        {
            "path": dst.relative_to(out).as_posix(),
            "from": str(src),
            "bytes": dst.stat().st_size,
            "sha256": _sha256(dst),
        }
    )


def _write(dst: Path, text: str, files: list[dict[str, Any]], out: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(dst, text)
    files.append(
        {
            "path": dst.relative_to(out).as_posix(),
            "from": None,
            "bytes": dst.stat().st_size,
            "sha256": _sha256(dst),
        }
    )


def _episodes(run: Path, result: ExportResult) -> list[_Episode]:
    """Every episode below ``run`` with a usable recording; one skipped line for the others."""
    loaded = load_results([run])
    if not loaded.episodes:  # nothing to export: the reason, once, and nothing written
        raise loaded.errors[0] if loaded.errors else BadInputError(run, "holds no results")
    result.skipped += [f"{err}: unreadable, skipped" for err in loaded.errors]
    found: list[_Episode] = []
    for record in sorted(loaded.episodes, key=lambda r: str(r.path)):
        recording = record.results_dir / RECORDING_DIR
        video = recording / RECORDED_VIDEO
        if not (recording / META).is_file():
            result.skipped.append(
                f"{record.results_dir}: no recording (run with --no-record?), skipped"
            )
            continue
        if not video.is_file():
            result.skipped.append(f"{recording}: no {RECORDED_VIDEO} in the recording, skipped")
            continue
        try:
            meta = read_json(recording / META)
            probe = probe_video(video)
        except BadInputError as exc:
            result.skipped.append(f"{exc}: skipped")
            continue
        fps = float(meta.get("fps") or probe.fps or 0.0)
        found.append(
            _Episode(
                record, recording, meta, probe.codec, fps, probe.frames, probe.width, probe.height
            )
        )
    return found


def _segments(recording: Path, fps: float) -> list[dict[str, Any]]:
    """The key segments as the recording's action log holds them: ``{keys, frames: [s, e)}``."""
    log = read_actions_jsonl(recording / ACTIONS)
    schedule = schedule_from_keys(log.keys, fps)
    return [{"keys": s.key, "frames": [s.start, s.end]} for s in schedule.segments()]


def _entry(episode: _Episode, files: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    record = episode.record
    return {
        "source": str(record.results_dir),
        "model": record.model,
        "episode": record.episode,
        "set": record.case_set,
        "codec": episode.codec,
        "reencoded": False,
        "video_quality": episode.meta.get("video_quality"),
        "fps": episode.fps,
        "frames": episode.frames,
        "width": episode.width,
        "height": episode.height,
        "scores_sha256": _sha256(record.path),
        **extra,
        "files": files,
    }


# ------------------------------------------------------------------------------------------
# WorldMark
# ------------------------------------------------------------------------------------------


def model_tag(model: str) -> str:
    """WorldMark's upper-case model tag for ``model``: its folder name, upper-cased."""
    return path_component(model).upper()


def _worldmark(
    episodes: Sequence[_Episode], out: Path, result: ExportResult, tag: str | None
) -> None:
    lines: list[str] = []
    for episode in episodes:
        record = episode.record
        set_name = record.case_set
        view, _, domain = (set_name or "").partition("/")
        view_short = view.removesuffix("_view")
        if view_short not in ("first", "third") or domain not in ("real", "style"):
            result.skipped.append(
                f"{record.results_dir}: not a WorldMark case (set {set_name or 'none'}), skipped"
            )
            continue
        try:
            name = parse_delivery_name(Path(f"{record.episode}.mp4"))
        except BadInputError:
            result.skipped.append(
                f"{record.results_dir}: case {record.episode} is not named <image>_<action>, "
                "skipped"
            )
            continue
        model = tag or model_tag(record.model)
        folder = out / domain / view_short / path_component(model)
        video = folder / f"{record.episode}.mp4"
        if video.exists():
            result.skipped.append(f"{record.results_dir}: {video} already exported, skipped")
            continue
        files: list[dict[str, Any]] = []
        _copy(episode.recording / RECORDED_VIDEO, video, files, out)
        sidecars = folder / record.episode
        _copy(episode.recording / ACTIONS, sidecars / ACTIONS, files, out)
        for name_ in _SIDECARS:
            if (episode.recording / name_).is_file():
                _copy(episode.recording / name_, sidecars / name_, files, out)
        live = {
            key: episode.meta[key]
            for key in (*LIVE_KEYS, "complete", "reason")
            if key in episode.meta
        }
        if episode.meta.get("complete") is False:
            result.warnings.append(
                f"{video.relative_to(out)}: the recording is incomplete "
                f"({episode.meta.get('reason') or 'stopped early'}); exported as recorded"
            )
        if live:
            _write(sidecars / LIVE_RECORD, json.dumps(live, indent=1) + "\n", files, out)
        segments = _segments(episode.recording, episode.fps)
        seconds = episode.frames / episode.fps if episode.fps else 0.0
        expected = WORLDMARK_SECONDS_PER_KEY * len(name.keys)
        if abs(seconds - expected) > WORLDMARK_DURATION_TOLERANCE * expected:
            result.warnings.append(
                f"{video.relative_to(out)}: {seconds:.2f} s, WorldMark expects {expected:g} s "
                f"± {WORLDMARK_DURATION_TOLERANCE:.0%}: its check_delivery.py refuses it "
                "(streameval replays it on its action log)"
            )
        lines.append(
            json.dumps(
                {
                    "model": model,
                    "view": view_short,
                    "domain": domain,
                    "image": f"{name.image:03d}",
                    "action_id": name.action,
                    "keys": "".join(name.keys),
                    "video": video.relative_to(out).as_posix(),
                    "requested": {"segments": len(name.keys), "target_sec": expected},
                    "achieved": {
                        "width": episode.width,
                        "height": episode.height,
                        "fps": episode.fps,
                        "fps_source": "recording",
                        "frames": episode.frames,
                        "sec": round(seconds, 3),
                        "measured": True,
                    },
                    "segments": segments,
                    "caveats": [f"recorded live by streameval {__version__} from {record.model}"],
                }
            )
        )
        result.exported.append(_entry(episode, files, delivery=video.relative_to(out).as_posix()))
    if lines:
        manifest = out / WORLDMARK_MANIFEST
        write_text_atomic(manifest, "\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------
# WBench
# ------------------------------------------------------------------------------------------


def _wbench(
    episodes: Sequence[_Episode],
    out: Path,
    result: ExportResult,
    who: tuple[str, str] = ("", ""),
) -> None:
    by_model: dict[str, list[_Episode]] = {}
    for episode in episodes:
        by_model.setdefault(episode.record.model, []).append(episode)
    for model, group in by_model.items():
        root = out / path_component(model)
        names = [e.record.episode for e in group]
        turns: dict[str, Any] = {}
        fps_seen: set[float] = set()
        for episode in group:
            record = episode.record
            case_id = record.episode
            if names.count(case_id) > 1 and record.case_set:  # two sets share the name
                case_id = f"{record.case_set.replace('/', '_')}_{record.episode}"
            case_id = path_component(case_id)
            files: list[dict[str, Any]] = []
            video = root / "videos" / f"case_{case_id}_combined.mp4"
            if video.exists():
                result.skipped.append(f"{record.results_dir}: {video} already exported, skipped")
                continue
            _copy(episode.recording / RECORDED_VIDEO, video, files, out)
            segments = _segments(episode.recording, episode.fps)
            bounds = [segments[0]["frames"][0], *(s["frames"][1] for s in segments)]
            turns[case_id] = {"turn_frames": bounds}
            fps_seen.add(episode.fps)
            result.exported.append(_entry(episode, files, case_id=case_id, turn_frames=bounds))
        if not turns:
            continue
        if len(fps_seen) > 1:
            result.warnings.append(
                f"{model}: recordings at {sorted(fps_seen)} fps; WBench's turns.json holds one "
                "fps (the first is written; export.json has each)"
            )
        fps = next(e.fps for e in group)
        write_text_atomic(
            root / "turns.json", json.dumps({"fps": fps, "cases": turns}, indent=2) + "\n"
        )
        meta = {
            "model_name": path_component(model),
            "type": "action",
            "display_name": model,
            "org": who[0],
            "contact": who[1],
        }
        write_text_atomic(root / "meta.json", json.dumps(meta, indent=2) + "\n")


# ------------------------------------------------------------------------------------------
# raw
# ------------------------------------------------------------------------------------------


def _raw(episodes: Sequence[_Episode], run: Path, out: Path, result: ExportResult) -> None:
    base = run if run.is_dir() else run.parent
    copied_runs: set[Path] = set()
    for episode in episodes:
        record = episode.record
        relative = record.results_dir.resolve().relative_to(base.resolve())
        target = out / relative / RECORDING_DIR
        if target.exists():
            result.skipped.append(f"{record.results_dir}: {target} already exported, skipped")
            continue
        files: list[dict[str, Any]] = []
        for src in sorted(p for p in episode.recording.rglob("*") if p.is_file()):
            _copy(src, target / src.relative_to(episode.recording), files, out)
        # a case run's record (cases.json, manifest.jsonl) above the case: replay reads it
        folder = record.results_dir.parent
        while folder.resolve().is_relative_to(base.resolve()):
            if (folder / CASE_RUN).is_file() and folder not in copied_runs:
                copied_runs.add(folder)
                mirror = out / folder.resolve().relative_to(base.resolve())
                for name in (CASE_RUN, CASE_MANIFEST):
                    if (folder / name).is_file():
                        _copy(folder / name, mirror / name, files, out)
            if folder.resolve() == base.resolve():
                break
            folder = folder.parent
        result.exported.append(_entry(episode, files, recording=str(target.relative_to(out))))


def export_run(
    run: Path,
    fmt: Format,
    out: Path,
    *,
    tag: str | None = None,
    org: str = "",
    contact: str = "",
) -> ExportResult:
    """Export the recordings of every episode below ``run`` (a results folder, a model's
    folder or one episode's) in ``fmt`` into ``out``; ``BadInputError`` when ``run`` holds no
    results. ``tag``: WorldMark's model tag (default ``model_tag`` of each model); ``org`` and
    ``contact``: who submits, as WBench's ``meta.json`` asks (empty: to fill in by hand)."""
    if fmt not in FORMATS:
        raise BadInputError("--format", f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if not run.exists():
        raise BadInputError(run, "no such file or directory")
    result = ExportResult(out, out / EXPORT_MANIFEST)
    episodes = _episodes(run, result)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "worldmark":
        _worldmark(episodes, out, result, tag)
    elif fmt == "wbench":
        _wbench(episodes, out, result, (org, contact))
    else:
        _raw(episodes, run, out, result)
    doc = {
        "format": EXPORT_FORMAT,
        "layout": fmt,
        "run": str(run.resolve()),
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "streameval": __version__,
        "episodes": result.exported,
        "skipped": result.skipped,
        "warnings": result.warnings,
    }
    write_text_atomic(result.manifest, json.dumps(doc, indent=2) + "\n")
    return result
