"""``attach "exec:COMMAND ARGS..." --profile NAME``: a program that asks for each chunk's keys
on stdin (Matrix-Game 3's interactive pipeline: ``matrix-game-3-interactive``).

streameval starts the program for the episode (``process.py``: its own process group) and
stops it at the episode's end, or when the episode is cancelled. The profile's ``[process]``
says how to talk to it: per chunk, its prompts in order (a regex each, read from its stdout,
stderr or both) and the line each gets on stdin (``{move}``, ``{turn}``, ``{key}``, …; the
first prompt opens the chunk and the key is chosen then, by the video clock of
``OnDemandSource``); its frames are the new files in its output folder (the value of the
command's ``folder_arg`` option, else ``folder``) or the images it writes to stdout
(``frames.py``). A chunk ends when the first prompt comes again, or the program exits; its
wall time from our first answer is its generation time.

Faults, each one line with the program's last stderr lines quoted: a command that cannot be
started, that exits or shows no prompt within ``start_timeout_s`` before its first prompt —
bad input (exit 2), the episode never starts; a program that exits mid-episode, or writes
no frame (or shows no next prompt) within ``frame_timeout_s`` — the episode ends incomplete
with what came.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path
from typing import Any

from streameval.constants import DEFAULT_FPS
from streameval.core.arrays import Image
from streameval.errors import (
    BadInputError,
    ClipError,
    GenerationFault,
    ProgramExited,
    TemplateError,
    one_line,
)
from streameval.transports.clips import decode_clip
from streameval.transports.exec.frames import FolderFrames, StdoutImages
from streameval.transports.exec.process import Program
from streameval.transports.live_config import ServerInfo
from streameval.transports.ondemand import OnDemandSource
from streameval.transports.profiles.ondemand import ProcessSpec
from streameval.transports.profiles.templates import render

PREFIX = "exec:"
POLL_S = 0.05
"""How often the folder is looked at while the program works."""


def parse_command(url: str) -> list[str]:
    """``exec:python prog.py --out d`` → ``["python", "prog.py", "--out", "d"]`` (shell
    quoting rules, no shell)."""
    try:
        argv = shlex.split(url[len(PREFIX) :])
    except ValueError as exc:
        raise BadInputError(url, f"cannot split the command: {exc}") from None
    if not argv:
        raise BadInputError(url, "no command after exec:")
    return argv


def program_name(url: str) -> str:
    """The model's name for results: the script a program runs (``prog.py`` → ``prog``), else
    the program itself."""
    try:
        argv = shlex.split(url[len(PREFIX) :])
    except ValueError:
        return "exec"
    for arg in argv:
        if arg.endswith(".py"):
            return Path(arg).stem
    return Path(argv[0]).name if argv else "exec"


def option_value(argv: list[str], option: str) -> str | None:
    """The value of ``option`` in ``argv`` (``--opt v`` or ``--opt=v``; the last one wins)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(option + "="):
            value = arg[len(option) + 1 :]
    return value


class ExecSource(OnDemandSource):
    scheme = "exec"

    def prepare(self) -> None:
        profile, url = self.profile, self.url
        if profile.process is None:
            raise BadInputError(profile.path, "transport exec needs [process]")
        self.spec: ProcessSpec = profile.process
        self.argv = parse_command(url)
        self.images = StdoutImages() if self.spec.frames == "stdout" else None
        self.folder: FolderFrames | None = None
        if self.spec.frames == "folder":
            self.folder = FolderFrames(
                self.frame_folder(), self.spec.files, self.spec.settle_ms / 1000
            )
        self.program = Program(
            self.argv,
            prompt_stream=self.spec.prompt_stream,
            on_stdout_bytes=self.images.feed if self.images is not None else None,
        )
        self._exited_after_chunk = False
        self.check()

    def frame_folder(self) -> Path:
        """The command's own output option when it has one, else the profile's folder."""
        given = option_value(self.argv, self.spec.folder_arg) if self.spec.folder_arg else None
        if given is not None:
            return Path(given)
        return Path(render(self.spec.folder, {"episode": self.episode}))

    def check(self) -> None:
        """Every answer for every key of the episode renders before the program starts."""
        for key in set(self.keys) or {"W"}:
            for i, prompt in enumerate(self.spec.prompts):
                try:
                    self.render_for(prompt.send, key, 1, f"[process] prompts[{i}].send")
                except TemplateError as exc:
                    raise BadInputError(self.profile.path, str(exc)) from None

    def _fault(self, what: str) -> str:
        return f"{what}; {self.program.last_words()}"

    # ------------------------------------------------------------ LiveSource hooks

    async def open_transport(self) -> ServerInfo:
        """Start the program and wait for its first prompt (loading a model may take
        minutes: ``start_timeout_s``). Whatever stops it here is bad input, with its words."""
        if self.folder is not None:
            self.folder.snapshot()
        try:
            await self.program.start()
        except OSError as exc:
            raise BadInputError(
                self.url, f"cannot start {self.argv[0]!r}: {one_line(exc.strerror or str(exc))}"
            ) from None
        first = self.spec.prompts[0]
        timeout = self.spec.start_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await self.program.wait_for(first.pattern)
        except ProgramExited as exc:
            await self.program.stop()
            raise BadInputError(
                self.url, self._fault(f"exited with code {exc.returncode} before its first prompt")
            ) from None
        except TimeoutError:
            words = self.program.last_words()
            await self.program.stop()
            raise BadInputError(
                self.url, f"no prompt matching {first.match!r} within {timeout:g} s; {words}"
            ) from None
        fps = self.fps_hint or self.profile.fps or DEFAULT_FPS
        return ServerInfo(program_name(self.url), fps)

    async def close_transport(self) -> None:
        await self.program.stop()

    # ------------------------------------------------------------ one chunk

    async def generate(self, key: str, values: dict[str, Any]) -> list[Image]:
        what = f"chunk {self.chunk} (key {key})"
        if self._exited_after_chunk:
            raise GenerationFault(
                self._fault(f"exited with code {self.program.returncode} before {what}")
            )
        if self.chunk == 0:
            self._preroll()
        timeout = self.spec.frame_timeout_s
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                for i, prompt in enumerate(self.spec.prompts):
                    if i:  # the first one was seen already: it opened this chunk
                        await self.program.wait_for(prompt.pattern)
                    line = self.render_for(prompt.send, key, values["frames"], f"prompts[{i}]")
                    await self.program.write_line(str(line))
                try:
                    await self.program.wait_for(self.spec.prompts[0].pattern)
                except ProgramExited:
                    self._exited_after_chunk = True  # its last chunk may still be whole
                return await self._frames(started + timeout, what)
        except ProgramExited as exc:
            what = f"exited with code {exc.returncode} in {what}"
            raise GenerationFault(self._fault(what)) from None
        except TimeoutError:
            raise GenerationFault(
                self._fault(f"{what}: no frame and no next prompt within {timeout:g} s")
            ) from None

    def _preroll(self) -> None:
        """Frames written before our first answer were conditioned on no key of ours: not
        part of the episode (images on stdout are counted as ``frames_preroll``)."""
        if self.images is not None:
            self.log.count("preroll", len(self.images.take()))
        elif self.folder is not None:
            self.folder.snapshot()

    async def _frames(self, deadline: float, what: str) -> list[Image]:
        """The chunk's frames: at least one must come before ``deadline`` (a writer that
        finishes after the next prompt is waited for)."""
        while True:
            if self.images is not None:
                # frames before the prompt may still be in the pipe: until stdout is quiet
                settle = self.spec.settle_ms / 1000
                while time.perf_counter() - self.program.last_stdout_t < settle:
                    await asyncio.sleep(settle)
                found = self.images.take()
                if found:
                    return await self._decode_images(found, what)
            else:
                assert self.folder is not None
                files = await self.folder.take()
                if files:
                    try:
                        return await asyncio.to_thread(FolderFrames.decode, files)
                    except ClipError as exc:
                        raise GenerationFault(f"{what}: {exc}") from None
            if self.program.ended:
                code = self.program.returncode
                raise GenerationFault(self._fault(f"exited with code {code} in {what}"))
            if time.perf_counter() > deadline:
                where = (
                    "on stdout"
                    if self.images is not None
                    else f"in {self.folder.folder if self.folder else '?'} "
                    f"matching {self.spec.files!r}"
                )
                raise GenerationFault(self._fault(f"{what}: no frame {where}"))
            await asyncio.sleep(POLL_S)

    async def _decode_images(self, images: list[bytes], what: str) -> list[Image]:
        def decode() -> list[Image]:
            out: list[Image] = []
            for i, data in enumerate(images):
                out.extend(decode_clip(data, f"{what}: stdout image {i}"))
            return out

        try:
            return await asyncio.to_thread(decode)
        except ClipError as exc:
            raise GenerationFault(str(exc)) from None
