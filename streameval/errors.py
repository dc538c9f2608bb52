"""Exceptions with a user-facing one-line message that names the bad input."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from pathlib import Path


def one_line(text: str) -> str:
    """Error messages are one line (docs/cli.md#bad-input): fold whatever a library told us
    (a traceback-like multi-line ``str(exc)``, a schema message) into single spaces."""
    return " ".join(text.split())


SECRET_QUERY_FIELDS = frozenset(
    {"key", "passphrase", "password", "token", "secret", "api_key", "apikey", "access_token"}
)
"""Query fields of an http(s)/ws(s) URL whose value is a credential (a hosted world model's
claim URL carries its passphrase as ``?key=``); an MQTT URL's ``key=`` is a file path."""
WEB_SCHEMES = ("http", "https", "ws", "wss")


def redact_url(text: str) -> str:
    """``scheme://user:PASS@host…`` as ``scheme://user@host…``, and a web URL's credential
    query fields (``SECRET_QUERY_FIELDS``) as ``***``: a URL that carries credentials is named
    in error lines, logs and results without them (the same form as ``MqttTarget.display``)."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    changed = False
    if parts.scheme.split("+")[-1] in WEB_SCHEMES and parts.query:
        fields = parse_qsl(parts.query, keep_blank_values=True)
        if any(name.lower() in SECRET_QUERY_FIELDS for name, _ in fields):
            hidden = [(n, "***" if n.lower() in SECRET_QUERY_FIELDS else v) for n, v in fields]
            parts, changed = parts._replace(query=urlencode(hidden, safe="*")), True
    if password:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        parts, changed = parts._replace(netloc=f"{user}@{hostport}"), True
    return urlunsplit(parts) if changed else text


class StreamevalError(Exception):
    """The root of every error streameval raises on purpose (httpx's ``HTTPError`` habit).

    Two families hang below it: ``BadInputError`` — the user gave us something we cannot use
    (the command line prints its one line and exits 2) — and ``InvalidDataError`` — a kernel,
    decoder or message reader got data it cannot use; its caller turns that into a metric
    status or a ``BadInputError`` naming the file. An exception outside the tree is a bug.

    A plain ``ValueError`` is ours: a function called against its contract by our own code (a
    kernel given arrays of the wrong shape, a window of 0, a metric registered twice), which
    input checking upstream makes unreachable from anything a user gives. The command line
    does not catch it: it is a bug, and its traceback is what a bug report needs. A check
    that a user's value can reach (a file, a flag, a profile, a server message, a model's
    output) raises from the tree; where callers already caught ``ValueError`` there, the
    class is a ``ValueError`` too (``InvalidDataError``, ``UnknownKeyError``, ...).
    """


class BadInputError(StreamevalError):
    """Input the user gave us is wrong (exit status 2).

    ``source`` names the file, URL or message at fault; ``str(err)`` is one line:
    ``"<source>: <what is wrong>"``. Given one argument, it is the whole line (subclasses whose
    messages already name their input).
    """

    def __init__(self, source: object, problem: str | None = None) -> None:
        if problem is None:
            self.source = ""
            self.problem = redact_url(str(source))
            super().__init__(self.problem)
            return
        self.source = redact_url(str(source))
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


class UnknownNameError(BadInputError):
    """A name that is not registered: a backend, a metric, a key, a trajectory, a profile.
    Its message lists the known names and the closest one ("did you mean")."""


class BackendUnavailableError(BadInputError):
    """A perception backend cannot run here (missing weights, missing package): the message
    names what is missing and how to get it."""


class InvalidDataError(StreamevalError, ValueError):
    """Data that a kernel, decoder or message reader cannot use (a bad depth map, a pose track
    that is no rotation, a malformed wire message). A ``ValueError`` too, for callers that
    guard numeric code with ``except ValueError``."""


class ModelCallError(StreamevalError):
    """A call into an in-process model that did not come back with a frame (timeout, or the
    model raised): the episode ends incomplete with the reason."""


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, or nothing."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- raised by one part each (named for it), kept here so that the tree is one file ---


# streameval.core.events


class EpisodeNotStarted(StreamevalError, RuntimeError):
    """The source ended (or failed) before ``EpisodeStart``: there is no episode to finalize.

    Its own type, so that a caller that stopped the source itself (the dashboard's ``q``) can
    tell this case from a crash without reading meaning into any ``RuntimeError``.
    """


# streameval.core.registry


class UnknownBackendError(UnknownNameError, ValueError):
    """A backend name that is not registered for that job."""


# streameval.metrics.memory.global_memory


class BadViewError(InvalidDataError):
    """A view whose pose, intrinsics or confident depth is not finite."""


# streameval.metrics.registry


class UnknownMetricError(UnknownNameError, KeyError):
    """A metric name that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


# streameval.metrics.worldatlas.closed_loop_pairs


class HalfLifeUnavailable(InvalidDataError):
    """Why no half-life can be reported; ``code`` is a stable machine-readable category."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# streameval.metrics.worldatlas.keystroke


class KeystrokeInputError(InvalidDataError):
    """Poses and commanded keys that cannot be compared (lengths, shapes)."""


# streameval.metrics.worldatlas.point_cloud


class CloudError(InvalidDataError):
    """A point cloud too small to align or score."""


class IntrinsicsError(InvalidDataError):
    """Intrinsics that cannot project: an unsupported layout, or a zero/non-finite value."""


# streameval.metrics.worldatlas.pose_distance


class PoseTrackError(InvalidDataError):
    """A pose track that cannot be measured (wrong shape, too short, non-finite)."""


# streameval.metrics.worldatlas.scene_f1


class DepthInputError(InvalidDataError):
    """Depth, mask or intrinsics that cannot give a cloud for this track."""


# streameval.perception.perceiver


class FrameRejectedError(InvalidDataError):
    """A frame that cannot be analysed (wrong shape or dtype)."""


# streameval.scale.pool_messages


class PoolMessageError(InvalidDataError):
    """A pool message that fails validation (one line saying what is wrong)."""


# streameval.transports.clips


class ClipError(InvalidDataError):
    """A clip whose frames cannot be used; ``str()`` is one line naming the clip."""


# streameval.transports.exec.process


class ProgramExited(StreamevalError):
    """The program ended while we waited for it; ``returncode`` says how."""

    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode
        super().__init__(f"exited with code {returncode}")


# streameval.transports.host


class StartRefused(InvalidDataError):
    """A case start the served model cannot take; ``str()`` is the line the client reads."""


# streameval.transports.inprocess.driver


class BadFrameError(InvalidDataError):
    """A frame (or its pose, intrinsics, depth) breaks the input rules; ends the episode."""


# streameval.transports.inprocess.model_thread


class ModelCallTimeoutError(ModelCallError):
    """The model did not return in time; the call is abandoned, the thread with it."""


class ModelRaisedError(ModelCallError):
    """The model raised something that is not an ``Exception`` (``SystemExit(3)``)."""


# streameval.transports.ondemand


class GenerationFault(StreamevalError):
    """A chunk that cannot be had (the server's or program's failure, not the user's input,
    not a bug); ``str()`` is the episode's one-line reason."""


# streameval.transports.profiles


class UnknownProfileError(UnknownNameError):
    """A ``--profile`` name that is neither a built-in nor a ``.toml`` file."""


# streameval.transports.profiles.conditioning


class CaseRefused(StreamevalError, ConnectionError):
    """The server would not start this case; ``str()`` is its own words, one line."""


# streameval.transports.profiles.templates


class TemplateError(InvalidDataError):
    """A template that does not render; ``str()`` names the placeholder or value at fault."""


# streameval.transports.websocket.messages


class MessageProblem(InvalidDataError):
    """A message that cannot be used; ``str()`` is one line naming what is wrong."""


# streameval.protocol.keys


class UnknownKeyError(UnknownNameError, ValueError):
    """A key outside W S A D L R and '-' (no key)."""


# streameval.protocol.memory_loop


class UnknownTrajectoryError(UnknownNameError, ValueError):
    """A memory_loop trajectory name that does not exist."""


# streameval.protocol.suites


class UnknownActionError(UnknownNameError, ValueError):
    """An action id outside the worldmark suite."""


# streameval.protocol.wire


class WireError(InvalidDataError):
    """A message that cannot be accepted; ``str()`` is one line naming the problem."""


# streameval.replay.frames


class FrameReadError(InvalidDataError):
    """A frame that cannot be read; the message names the file and the frame index."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


# streameval.replay.sidecars


class DepthFrameError(InvalidDataError):
    """A depth frame that cannot be read (its mask ends early); names the file and frame."""


# streameval.worlds.procedural_world.config


class UnknownDefectError(UnknownNameError, ValueError):
    """A defect preset that does not exist; the message lists the known ones."""


class WorldConfigError(BadInputError, ValueError):
    """A ``WorldConfig`` field outside its range (``demo --seed -1``, say). A ``ValueError``
    too, as a dataclass's own checks are, for callers that catch that."""


# streameval.transports.bridge


class BridgeWorkerError(ModelCallError):
    """The bridge's worker (the model in its own interpreter) died, hung or answered out of
    protocol; the message carries its exit and its last words on stderr."""


# streameval.transports.browser


class CdpError(StreamevalError, ConnectionError):
    """The browser answered a DevTools call with an error, or went away (a ``ConnectionError``
    too: the session's end, as a transport's lost connection is)."""
