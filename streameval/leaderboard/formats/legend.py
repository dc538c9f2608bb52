"""The notes every human-readable table format prints under the table: what the colours or
marks mean, how an interval reads, what a diagnostics row is (text and Markdown alike)."""

from __future__ import annotations

from streameval.leaderboard import MasterTable

LEGEND = (
    "per column: {best} best, {second} second, {worst} worst — ranked on the two-decimal values "
    "of official cells, needs at least 3 models; (k/N) = measured episodes / episodes where "
    "the metric applies, "
    "[lower, upper] = range if the missing episodes were measured"
)

CI_LEGEND = (
    "[low, high]  n/N cases = 95% anytime-valid interval on the column's value over all N "
    "cases, after n of them (a finished run: its value); #a–b = the ranks the model can still "
    "take given the intervals"
)


def has_intervals(table: MasterTable) -> bool:
    """Whether any cell carries a case run's interval (``table --ci``): then ``CI_LEGEND``."""
    return any(cell.interval is not None for row in table.rows for cell in row.cells.values())


DIAG_NOTE = (
    "mean over each model's measured episodes (k/N when not all), in the metric's own unit; "
    "not ranked: these have no better direction on a common scale"
)
