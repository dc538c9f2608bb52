"""Exceptions with a user-facing one-line message that names the bad input."""

from __future__ import annotations


class BadInputError(Exception):
    """Input the user gave us is wrong (exit status 2).

    ``source`` names the file, URL or message at fault; ``str(err)`` is one line:
    ``"<source>: <what is wrong>"``.
    """

    def __init__(self, source: object, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


class BackendUnavailableError(Exception):
    """A perception backend cannot run here (missing weights, missing package)."""
