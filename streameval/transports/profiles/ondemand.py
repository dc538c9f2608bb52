"""The tables of the two on-demand styles: servers that generate only when asked.

- **Request-response** (``transport = "http"``): one templated HTTP request per key segment or
  per chunk (``[request]``), and where its frames are in the answer (``[answer]``): a video
  path on a shared filesystem, a URL to GET, or the video's bytes in the body (Yume's web app).
- **A process on stdin** (``transport = "exec"``): a program streameval starts, answering its
  prompts on stdin (``[process]``: a regex per prompt and what to write), its frames read from
  new files in a folder or from its stdout (Matrix-Game 3's interactive pipeline).

Both fill their templates with the placeholders of ``templates.py`` plus ``ON_DEMAND_VALUES``:
``{move}`` / ``{turn}`` (the key's name on the server's translation and rotation channels: a
server with two controls, WASD and a camera, gets the idle name ``[keys] no_move`` /
``no_turn`` on the channel the key does not use) and ``{seconds}`` (video seconds the request
covers). Every field is checked when the profile is loaded (``model.py``), every template
rendered once with sample values: a problem is one ``BadInputError`` naming file and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from streameval.errors import TemplateError
from streameval.transports.profiles.templates import PLACEHOLDERS, encode, placeholders_in, render

if TYPE_CHECKING:
    from streameval.transports.profiles.fields import TomlFields

ON_DEMAND_VALUES = ("move", "turn", "seconds")
"""Placeholders the on-demand styles fill beyond ``templates.PLACEHOLDERS``."""
SAMPLE_ON_DEMAND: dict[str, Any] = {
    "key": "w",
    "keycode": 87,
    "move": "w",
    "turn": "u",
    "timestamp": 0.0,
    "speed": 1.0,
    "chunk": 0,
    "frames": 9,
    "seconds": 0.5625,
    "episode": "episode",
}
DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024 * 1024
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
"""Frame files decoded as one image each; any other file is a video chunk (PyAV)."""

Per = Literal["segment", "chunk"]
AnswerKind = Literal["json", "video"]
FramesFrom = Literal["folder", "stdout"]
PromptStream = Literal["stdout", "stderr", "both"]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """``[request]``: one request per key segment (``per = "segment"``: the server makes the
    whole segment, ``{frames}`` long) or per chunk (``"chunk"``: requests under the same key
    until its segment has its frames, the video clock); ``body`` is the JSON template, and
    ``first`` replaces fields of it in the episode's first request (a server that continues
    from its last answer must not continue from the previous episode's)."""

    per: Per = "chunk"
    method: Literal["POST", "PUT"] = "POST"
    timeout_s: float = 600.0
    body: dict[str, Any] = field(default_factory=dict)
    first: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AnswerSpec:
    """``[answer]``: ``kind = "video"`` — the body is the video (or one image); ``"json"`` — a
    JSON object whose ``url`` field (dotted path) is a URL to GET, absolute or relative to
    the request's, or whose ``path`` field is a file on a filesystem we share (``path_map``:
    the server's prefix → ours). ``error``: a field whose presence says the request failed
    (its text is the reason). ``keep_last``: only the answer's last N frames are new (a server
    that sends its context frames again with each continuation)."""

    kind: AnswerKind = "json"
    url: str | None = None
    path: str | None = None
    path_map: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    keep_last: int | None = None
    max_bytes: int = DEFAULT_MAX_ANSWER_BYTES

    def local_path(self, server_path: str) -> str:
        """The server's path as we can open it (the longest ``path_map`` prefix applies)."""
        for theirs, ours in sorted(self.path_map, key=lambda p: -len(p[0])):
            if server_path == theirs or server_path.startswith(theirs.rstrip("/") + "/"):
                return ours.rstrip("/") + server_path[len(theirs.rstrip("/")) :]
        return server_path


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """One prompt of the program (a regex searched in what it printed since the last one we
    answered) and the line we write to its stdin when it appears."""

    match: str
    send: str

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.match)


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """``[process]``: the prompts of one chunk, in order (the first opens a chunk; the key is
    chosen then); where they are printed; where frames come from: new files in ``folder``
    (the value of the command's ``folder_arg`` option when it has one) matching ``files``,
    or concatenated JPEG/PNG images on stdout; how long the program may take to show its
    first prompt (loading a model) and to write a chunk's frames."""

    prompts: tuple[PromptSpec, ...]
    prompt_stream: PromptStream = "both"
    frames: FramesFrom = "folder"
    folder: str = "."
    folder_arg: str | None = None
    files: str = "*"
    start_timeout_s: float = 900.0
    frame_timeout_s: float = 600.0
    settle_ms: float = 100.0


# ---------------------------------------------------------------- reading


def check_template(section: TomlFields, name: str, template: Any, codec: str = "json") -> None:
    """A template's placeholders are known and it renders with sample values."""
    known = (*PLACEHOLDERS, *ON_DEMAND_VALUES)
    try:
        unknown = placeholders_in(template) - set(known)
        if unknown:
            raise TemplateError(
                f"unknown placeholder {{{sorted(unknown)[0]}}} (known: {', '.join(known)})"
            )
        encode(render(template, SAMPLE_ON_DEMAND), codec)
    except TemplateError as exc:
        raise section.fail(name, f"does not render: {exc}") from None


def read_request(top: TomlFields) -> RequestSpec | None:
    if "request" not in top.table:
        return None
    s = top.sub("request")
    spec = RequestSpec(
        per=s.choice("per", ("segment", "chunk"), "chunk"),
        method=s.choice("method", ("POST", "PUT"), "POST"),
        timeout_s=float(s.number("timeout_s", 600.0, 0, 86_400) or 600.0),
        body=s.take("body", dict, {}),
        first=s.take("first", dict, {}),
    )
    s.done()
    if not spec.body:
        raise s.fail("body", "missing: the request's JSON template")
    check_template(s, "body", spec.body)
    check_template(s, "first", {**spec.body, **spec.first})
    return spec


def read_answer(top: TomlFields) -> AnswerSpec | None:
    if "answer" not in top.table:
        return None
    s = top.sub("answer")
    raw_map = s.take("path_map", dict, {})
    for theirs, ours in raw_map.items():
        if not isinstance(ours, str) or not ours or not theirs:
            raise s.fail(f"path_map.{theirs}", "must map a server path prefix to ours")
    keep = s.number("keep_last", None, 0, 1_000_000)
    spec = AnswerSpec(
        kind=s.choice("kind", ("json", "video"), "json"),
        url=s.take("url", str),
        path=s.take("path", str),
        path_map=tuple((str(k), str(v)) for k, v in raw_map.items()),
        error=s.take("error", str),
        keep_last=None if keep is None else int(keep),
        max_bytes=int(s.number("max_bytes", DEFAULT_MAX_ANSWER_BYTES, 1023, 2**40) or 0),
    )
    s.done()
    if spec.kind == "json" and (spec.url is None) == (spec.path is None):
        raise s.fail("url", "a JSON answer names its video by exactly one of url or path")
    if spec.kind == "video" and (spec.url or spec.path or spec.error):
        raise s.fail("kind", "a video answer has no url, path or error field")
    return spec


def read_process(top: TomlFields) -> ProcessSpec | None:
    if "process" not in top.table:
        return None
    s = top.sub("process")
    raw = s.take("prompts", list, [])
    if not raw:
        raise s.fail("prompts", 'missing: at least one { match = "REGEX", send = "{move}" }')
    prompts = []
    for i, entry in enumerate(raw):
        where = f"prompts[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"match", "send"}:
            raise s.fail(where, "must be a table with exactly match and send")
        match, send = entry["match"], entry["send"]
        if not isinstance(match, str) or not match or not isinstance(send, str):
            raise s.fail(where, "match (a regex) and send (a template) must be strings")
        try:
            re.compile(match)
        except re.error as exc:
            raise s.fail(f"{where}.match", f"not a regex: {exc}") from None
        check_template(s, f"{where}.send", send)
        prompts.append(PromptSpec(match, send))
    spec = ProcessSpec(
        prompts=tuple(prompts),
        prompt_stream=s.choice("prompt_stream", ("stdout", "stderr", "both"), "both"),
        frames=s.choice("frames", ("folder", "stdout"), "folder"),
        folder=s.take("folder", str, "."),
        folder_arg=s.take("folder_arg", str),
        files=s.take("files", str, "*"),
        start_timeout_s=float(s.number("start_timeout_s", 900.0, 0, 86_400) or 900.0),
        frame_timeout_s=float(s.number("frame_timeout_s", 600.0, 0, 86_400) or 600.0),
        settle_ms=float(s.number("settle_ms", 100.0, 0, 60_000) or 100.0),
    )
    s.done()
    if spec.frames == "stdout" and spec.prompt_stream != "stderr":
        raise s.fail("prompt_stream", 'frames on stdout: the prompts must be on "stderr"')
    if not spec.files or "/" in spec.files:
        raise s.fail("files", "a file name pattern (glob) inside the folder, e.g. '*.mp4'")
    try:
        extra = placeholders_in(spec.folder) - {"episode"}
    except TemplateError as exc:
        raise s.fail("folder", str(exc)) from None
    if extra:
        raise s.fail("folder", f"only {{episode}} is known here, not {{{sorted(extra)[0]}}}")
    return spec


def describe(profile_request: RequestSpec | None, answer: AnswerSpec | None,
             process: ProcessSpec | None) -> str | None:  # fmt: skip
    """One line for ``streameval profiles``; None when the profile is no on-demand style."""
    if profile_request is not None:
        per = "key segment" if profile_request.per == "segment" else "chunk"
        where = "in the answer's body"
        if answer is not None and answer.kind == "json":
            where = (
                f"at the URL in JSON field {answer.url!r}"
                if answer.url
                else f"in the file named by JSON field {answer.path!r}"
            )
        return f"one {profile_request.method} per {per}; frames: the video {where}"
    if process is not None:
        asks = ", ".join(repr(p.match) for p in process.prompts)
        source = (
            "concatenated images on stdout"
            if process.frames == "stdout"
            else f"new files {process.files!r} in its output folder"
        )
        return f"a process answered on stdin at {asks}; frames: {source}"
    return None
