"""Exit status of every command, and the one map from the error tree to it.

0 success; 2 bad input (one line naming the input; the other inputs still ran); 130 the user
stopped the run (``q`` in the dashboard, Ctrl-C: 128 + SIGINT, what shells report); 1 anything
else (the disk, a bug). ``streameval.errors`` says which exceptions are the user's.
"""

from __future__ import annotations

from streameval.errors import BadInputError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def exit_status(exc: BaseException) -> int:
    """The exit status for an exception that reached the command line."""
    if isinstance(exc, BadInputError):  # unknown names and missing backends included
        return EXIT_BAD_INPUT
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_FAILURE
