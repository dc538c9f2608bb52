"""The program of an ``exec:`` URL: started in its own process group, read, answered, stopped.

- **Start.** ``asyncio`` subprocess with pipes on stdin, stdout and stderr, in a session of its
  own (``start_new_session``: its own process group, so a terminal's Ctrl-C reaches us, not
  it, and stopping it stops whatever it started too); ``PYTHONUNBUFFERED=1`` so a Python
  program's prints are not held back in a pipe buffer.
- **Prompts.** What it prints on the profile's stream(s) is kept as text; ``wait_for(regex)``
  searches what came since the last prompt answered (a prompt without a newline counts:
  ``input()`` writes none after it).
- **Frames on stdout.** With ``frames = "stdout"`` the stdout bytes go to an image splitter
  (``frames.py``) instead.
- **Its last words.** The last lines of stderr are kept for every fault line (a traceback's
  last line is usually the reason).
- **Stop.** SIGTERM to the group, SIGKILL after a grace period; awaited, so no zombie is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections import deque
from collections.abc import Callable

from streameval.core.tasks import cancel_and_wait
from streameval.errors import ProgramExited, one_line

READ_BLOCK = 64 * 1024
TAIL_LINES = 5
TAIL_LINE_CHARS = 200
MAX_PROMPT_TEXT = 1024 * 1024
"""Text kept for prompt matching past the last answered prompt (older text is let go)."""
STOP_GRACE_S = 3.0


class Program:
    """One running program and what it has said so far."""

    def __init__(
        self,
        argv: list[str],
        *,
        prompt_stream: str,
        on_stdout_bytes: Callable[[bytes], None] | None = None,
    ) -> None:
        self.argv = argv
        self.prompt_stream = prompt_stream
        self.on_stdout_bytes = on_stdout_bytes  # frames on stdout: raw bytes go there
        self.process: asyncio.subprocess.Process | None = None
        self.text = ""  # prompt stream(s) since the last prompt answered
        self.stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.stdout_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.last_stdout_t = 0.0
        self.changed = asyncio.Event()  # more output, or the end
        self._partial = {"stdout": "", "stderr": ""}
        self._tasks: list[asyncio.Task[None]] = []
        self._eof = {"stdout": False, "stderr": False}
        self._over = False  # both pipes closed and the process reaped (or not reapable)

    async def start(self) -> None:
        """Raise ``OSError`` when the program cannot be started (not found, not allowed)."""
        pipe = asyncio.subprocess.PIPE
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self._tasks = [
            asyncio.create_task(self._read(self.process.stdout, "stdout")),
            asyncio.create_task(self._read(self.process.stderr, "stderr")),
        ]

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    @property
    def ended(self) -> bool:
        """It said everything it will say and has exited (``returncode`` is known then,
        unless it closed its pipes and went on running)."""
        return self._over

    async def _read(self, stream: asyncio.StreamReader, name: str) -> None:
        try:
            while block := await stream.read(READ_BLOCK):
                if name == "stdout":
                    self.last_stdout_t = time.perf_counter()
                if name == "stdout" and self.on_stdout_bytes is not None:
                    self.on_stdout_bytes(block)
                else:
                    self._text(name, block.decode("utf-8", errors="replace"))
                self.changed.set()
        finally:
            self._eof[name] = True
            if all(self._eof.values()):
                if self.process is not None:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(STOP_GRACE_S):
                            await self.process.wait()
                self._over = True
            self.changed.set()

    def _text(self, name: str, text: str) -> None:
        if self.prompt_stream in (name, "both"):
            self.text = (self.text + text)[-MAX_PROMPT_TEXT:]
        lines = (self._partial[name] + text).split("\n")
        self._partial[name] = lines.pop()[-TAIL_LINE_CHARS:]
        tail = self.stderr_tail if name == "stderr" else self.stdout_tail
        tail.extend(one_line(line)[:TAIL_LINE_CHARS] for line in lines if line.strip())

    async def wait_for(self, pattern: re.Pattern[str]) -> None:
        """Until ``pattern`` appears in what came since the last prompt answered (then that
        text is consumed); ``ProgramExited`` when the program ends first. No timeout here:
        the caller bounds it."""
        while True:
            found = pattern.search(self.text)
            if found is not None:
                self.text = self.text[found.end() :]
                return
            if self.ended:
                raise ProgramExited(self.returncode)
            self.changed.clear()
            await self.changed.wait()

    async def write_line(self, line: str) -> None:
        """One answer on stdin; ``ProgramExited`` when it has closed its stdin."""
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write((line + "\n").encode())
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise ProgramExited(self.returncode) from None

    def last_words(self) -> str:
        """Its last stderr lines, quoted, for a fault line (stdout's when stderr was quiet)."""
        tail = [*self.stderr_tail, *([self._partial["stderr"]] if self._partial["stderr"] else [])]
        where = "stderr"
        if not tail:
            tail, where = list(self.stdout_tail), "stdout"
        if not tail:
            return "it printed nothing"
        quoted = " | ".join(repr(line) for line in tail[-TAIL_LINES:])
        return f"its last {where} lines: {quoted}"

    async def stop(self) -> None:
        """End it and everything it started (its process group); never raises."""
        process = self.process
        if process is not None and process.returncode is None:
            for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                try:  # asyncio.timeout, not wait_for: a cancel is never lost (core/tasks.py)
                    async with asyncio.timeout(wait_s):
                        await process.wait()
                    break
                except TimeoutError:
                    continue
        elif process is not None:
            # it exited by itself; what it started may still run in its group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        if process is not None and process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        await cancel_and_wait(self._tasks)
