"""TransNetV2 worker processes shared by the episodes of one run.

Starting a worker costs ~2 s of CPU (torch import, model load) and delays its first verdict;
paid per episode it was a quarter of a 12 s episode's CPU on this machine. A worker now serves
episode after episode: after it reports one episode's cuts it reads the next episode's frames
from the same pipe, with a fresh window stream (``transnet.transnet_worker_main``). The model
is stateless between clips (inference only, no RNG), so an episode's cuts do not depend on
what the worker saw before (tested against a fresh worker).

Only a worker that finished its episode cleanly returns to the pool; one that failed, timed
out or was abandoned mid-episode is killed. Episodes at the same time get workers of their own
(the pool grows to the run's concurrency). At exit the idle workers get end of input and leave.
A forked child never touches its parent's workers (the pool belongs to one process id).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from streameval.core import cpu

_WORKER_CODE = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
    "from streameval.perception.transnet import transnet_worker_main; transnet_worker_main()"
)
MAX_IDLE = 4  # idle workers kept per configuration (one per concurrent episode, at most)


class TransNetWorker:
    """One worker process: its pipes, its stderr (for failure messages) and a reader thread
    that turns its JSON lines into ``inbox`` messages (None at end of output)."""

    def __init__(self, config: dict[str, Any]) -> None:
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        # Its own process group: a Ctrl-C at the terminal goes to the foreground group, and
        # the evaluator, not the worker, decides what an interrupt means (the episode in
        # progress is finalized; its cut detector must not die of the same KeyboardInterrupt).
        # The worker still ends with the evaluator: its stdin closes.
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_CODE, json.dumps(paths), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            process_group=0,
        )
        self.inbox: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self.episodes = 0  # episodes finished by this worker
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def alive(self) -> bool:
        return self.process.poll() is None and self._reader.is_alive()

    def _read(self) -> None:
        pipe = self.process.stdout
        assert pipe is not None
        try:
            for line in pipe:
                try:
                    self.inbox.put(json.loads(line))
                except ValueError:
                    continue
        except (OSError, ValueError):
            pass
        self.inbox.put(None)  # EOF: the worker exited (or was killed)

    def error_tail(self) -> str:
        try:
            self.stderr.seek(0)
            lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f"; stderr: {lines[-1]}" if lines else ""

    def stop(self, *, graceful: bool = False) -> None:
        """End the process: end of input first when ``graceful`` (an idle worker leaves by
        itself), else at once; then close the pipes and the stderr file."""
        proc = self.process
        if graceful and proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2.0)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5.0)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()
        with contextlib.suppress(OSError, ValueError):
            self.stderr.close()


class WorkerPool:
    """Idle workers by configuration; ``acquire`` reuses one or starts one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[TransNetWorker]] = {}
        self._pid = os.getpid()

    def acquire(self, config: dict[str, Any]) -> tuple[TransNetWorker, bool]:
        """A worker for ``config`` and whether it is reused (already loaded)."""
        key = _key(config)
        with self._lock:
            if os.getpid() != self._pid:  # a forked child: the parent's workers are not ours
                self._idle, self._pid = {}, os.getpid()
            idle = self._idle.get(key, [])
            while idle:
                worker = idle.pop()
                if worker.alive():
                    return worker, True
                worker.stop()
        return TransNetWorker(config), False

    def release(self, config: dict[str, Any], worker: TransNetWorker) -> None:
        """Back to the pool after a clean episode (else, or when the pool is full, stopped)."""
        key = _key(config)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if worker.alive() and os.getpid() == self._pid and len(idle) < MAX_IDLE:
                idle.append(worker)
                return
        worker.stop(graceful=True)

    def shutdown(self) -> None:
        """Stop every idle worker (at exit; tests call it to start from a clean pool)."""
        with self._lock:
            workers = [w for ws in self._idle.values() for w in ws]
            self._idle = {}
            mine = os.getpid() == self._pid
        if mine:
            for worker in workers:
                worker.stop(graceful=True)

    def idle_cpu_seconds(self) -> float:
        """CPU seconds the idle workers have used so far (Linux ``/proc``; 0 elsewhere): a
        reused worker is never reaped, so ``RUSAGE_CHILDREN`` misses it."""
        with self._lock:
            pids = [w.pid for ws in self._idle.values() for w in ws]
        return sum(_process_cpu_seconds(pid) for pid in pids)

    def idle_count(self) -> int:
        with self._lock:
            return sum(len(ws) for ws in self._idle.values())


def _key(config: dict[str, Any]) -> str:
    """The pool's key: the worker's configuration and the CPU features it was started under
    (``$STREAMEVAL_CPU_FEATURES``, which a worker reads once, when it starts)."""
    return json.dumps([config, os.environ.get(cpu.CPU_FEATURES_ENV, "")], sort_keys=True)


def _process_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # after the command name: state is field 3, utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


POOL = WorkerPool()
atexit.register(POOL.shutdown)
