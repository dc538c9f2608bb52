"""Human-readable results: ``report.html`` per episode and ``index.html`` per results folder.

Self-contained HTML (plots and thumbnails embedded as PNG data URIs, no script, no network),
so a report can be mailed, attached to an issue or opened years later. Plots come from
matplotlib (Agg backend, imported only here).
"""

from streameval.report.episode import write_episode_report
from streameval.report.index import write_index

__all__ = ["write_episode_report", "write_index"]
