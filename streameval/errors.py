"""Exceptions with a user-facing one-line message that names the bad input."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def one_line(text: str) -> str:
    """Error messages are one line (docs/cli.md#bad-input): fold whatever a library told us
    (a traceback-like multi-line ``str(exc)``, a schema message) into single spaces."""
    return " ".join(text.split())


def redact_url(text: str) -> str:
    """``scheme://user:PASS@host…`` as ``scheme://user@host…``: a URL that carries credentials
    is named in error lines, logs and results without the password (the same form as
    ``MqttTarget.display``)."""
    if "://" not in text or "@" not in text:
        return text
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    if not password:
        return text
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}@{hostport}"))


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
