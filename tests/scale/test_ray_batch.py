"""``replay --ray`` / ``rescore --ray`` on a local Ray instance (2 CPUs, loopback only).

One Ray instance serves the module (starting one costs ~10 s here); the episodes are short
(48 frames) so the module stays well under a minute. Deselect with ``-m 'not ray'``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from streameval.engine.config import PipelineConfig
from tests.replay.replay_synth import moving_texture, write_actions, write_meta, write_video

ray = pytest.importorskip("ray")

# one xdist worker runs the whole module: a single local Ray instance, its fixtures shared
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

# PySceneDetect: a TransNetV2 process per episode would dominate these short episodes.
CUTS = ["--cuts", "scenedetect-adaptive"]
EPISODES = ("ep0", "ep1", "ep2")


def _episode(out: Path, name: str) -> Path:
    """The one ``OUT/<model>/<episode>/`` folder of episode ``name``."""
    (found,) = out.glob(f"*/{name}")
    return found


def _scored_parts(results_dir: Path) -> dict[str, Any]:
    """What must be identical between a local and a Ray run (wall-clock interactivity and
    provenance aside): every metric with its details, the motion-type fits, frame count."""
    doc = json.loads((results_dir / "scores.json").read_text())
    return {k: doc[k] for k in ("metrics", "motion_types", "frames", "complete", "episode")}


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rollouts")
    for seed, name in enumerate(EPISODES):
        d = root / name
        write_meta(d, fps=16, width=160, height=96)
        write_video(d / "video.mp4", moving_texture(48, 96, 160, seed=seed), fps=16)
        write_actions(d, ["D"] * 24 + ["A"] * 24)
    return root


@pytest.fixture(scope="module")
def local_results(rollouts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    assert main(["replay", str(rollouts), "--out", str(out), "--no-tui", *CUTS]) == 0
    return out


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level="WARNING",
    )
    yield
    ray.shutdown()


def test_batch_equals_local_and_resume_skips_finished(
    rollouts: Path,
    local_results: Path,
    ray_instance: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "ray"
    assert main(["replay", "--ray", str(rollouts), "--out", str(out), "--no-tui", *CUTS]) == 0
    for name in EPISODES:
        assert _scored_parts(_episode(out, name)) == _scored_parts(_episode(local_results, name))
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(line["episode"] for line in lines) == list(EPISODES)
    # the driver writes the run's ledger, with where each episode ran; verify reads it back
    ledger = json.loads((out / "ledger.json").read_text())
    assert len(ledger["episodes"]) == len(EPISODES) and ledger["ray"]["workers"]
    assert main(["verify", str(out)]) == 0

    # a batch stopped half-way: ep1 has no scores.json, ep2's run was incomplete
    (_episode(out, "ep1") / "scores.json").unlink()
    doc = json.loads((_episode(out, "ep2") / "scores.json").read_text())
    (_episode(out, "ep2") / "scores.json").write_text(json.dumps({**doc, "complete": False}))
    before = (_episode(out, "ep0") / "scores.json").stat().st_mtime_ns
    capsys.readouterr()
    argv = ["replay", "--ray", str(rollouts), "--out", str(out), "--no-tui", "--resume", *CUTS]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{_episode(out, 'ep0')}: finished before, skipped (--resume)" in err
    assert (_episode(out, "ep0") / "scores.json").stat().st_mtime_ns == before
    for name in EPISODES:
        assert _scored_parts(_episode(out, name)) == _scored_parts(_episode(local_results, name))


def test_the_python_api_runs_the_batch_on_ray(
    rollouts: Path, local_results: Path, ray_instance: None, tmp_path: Path
) -> None:
    """``streameval.evaluate(rollouts=..., ray=...)`` takes the command line's road: the same
    scores as a local replay, and the driver's ledger says where each episode ran."""
    import streameval

    out = tmp_path / "api"
    found = streameval.evaluate(
        rollouts=[rollouts],
        out=out,
        ray="local",
        config=PipelineConfig(cuts="scenedetect-adaptive"),
        reports=False,
    )
    assert found.complete and not found.failures
    assert sorted(o.info.episode for o in found.outcomes) == list(EPISODES)
    for name in EPISODES:
        assert _scored_parts(_episode(out, name)) == _scored_parts(_episode(local_results, name))
    ledger = json.loads((out / "ledger.json").read_text())
    assert ledger["ray"]["workers"] and ledger["inputs"]["command"] == "api"


def test_rescore_on_ray_leaves_scores_unchanged(
    local_results: Path, ray_instance: None, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {name: _scored_parts(_episode(local_results, name)) for name in EPISODES}
    assert main(["rescore", "--ray", str(local_results)]) == 0
    printed = capsys.readouterr().out
    for name in EPISODES:
        assert f"rescored {_episode(local_results, name)} (unchanged)" in printed
        assert _scored_parts(_episode(local_results, name)) == before[name]


def _ray_task_pids(function: str) -> list[int]:
    """Worker processes running ``function`` now: Ray titles them ``ray::<function>``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(f"ray::{function}".encode()):
            pids.append(int(entry.name))
    return pids


def test_killed_worker_episode_is_retried(
    rollouts: Path, local_results: Path, ray_instance: None, tmp_path: Path
) -> None:
    from streameval.scale.ray_batch import RayOptions, run_replay_batch
    from streameval.scale.tasks import ReplayTask

    out = tmp_path / "ep0"
    # paced at the rollout's 16 fps: the episode runs 3 s, time enough to kill its worker
    task = ReplayTask("ep0", rollouts / "ep0", out, pace=16.0)
    killed: list[int] = []

    def kill_worker_mid_episode() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if pids := _ray_task_pids("run_replay_task"):
                time.sleep(1.0)  # well into the episode
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_worker_mid_episode)
    killer.start()
    batch = run_replay_batch(
        [task], PipelineConfig(cuts="scenedetect-adaptive"), RayOptions(), resume=False
    )
    killer.join()
    assert killed, "the episode's worker was never seen running"
    assert not batch.failures and len(batch.reports) == 1
    report = batch.reports[0]
    assert report.outcome is not None and report.outcome.complete
    assert int(report.worker.rsplit(":", 1)[1]) != killed[0]  # a new worker finished it
    assert _scored_parts(out) == _scored_parts(_episode(local_results, "ep0"))


def test_more_gpus_per_episode_than_the_cluster_has_is_refused_at_once(
    rollouts: Path, ray_instance: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", "--ray", str(rollouts), "--out", str(tmp_path), "--no-tui"]
    assert main([*argv, "--gpus-per-episode", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --gpus-per-episode: 1 GPU(s) per episode asked, the Ray cluster has 0"]
    assert not (tmp_path / "ep0").exists()
