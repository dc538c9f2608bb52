"""The Textual dashboard of streameval: live view of episodes being evaluated, leaderboard.

``run_dashboard(jobs, config, observers)`` runs a command's jobs under the dashboard and
returns the ``JobsReport`` when the user quits (``q``); the CLI calls it on a terminal unless
``--no-tui`` is given, as ``arun_dashboard`` on the run's own event loop (``runs.run``).
"""

from streameval.tui.app import DashboardApp, DashboardOptions, arun_dashboard, run_dashboard
from streameval.tui.observer import DashboardObserver

__all__ = [
    "DashboardApp",
    "DashboardObserver",
    "DashboardOptions",
    "arun_dashboard",
    "run_dashboard",
]
