"""Exceptions with a user-facing one-line message that names the bad input."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


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


class BadInputError(Exception):
    """Input the user gave us is wrong (exit status 2).

    ``source`` names the file, URL or message at fault; ``str(err)`` is one line:
    ``"<source>: <what is wrong>"``.
    """

    def __init__(self, source: object, problem: str) -> None:
        self.source = redact_url(str(source))
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


class BackendUnavailableError(Exception):
    """A perception backend cannot run here (missing weights, missing package)."""
