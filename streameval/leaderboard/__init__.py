"""WorldMark's master table, shared by ``streameval table``, the dashboard and the report.

No OpenCV / PyAV / pipeline import: ``scores.json`` files are read by
``streameval.results.scores_file``; columns and their aggregations come from the metric registry
(``streameval.metrics.registry``). One module per concern:

- ``columns``: the registered column metrics and their aggregation (the formulas with bounds,
  docs/methods.md#model-aggregation-and-coverage, are registered beside the metrics:
  ``streameval.metrics.aggregation``);
- ``cells``: one model × column with status, coverage and bounds (docs/methods.md#statuses);
- ``table``: rows, exclusion, ranking, sorting, ``build_table`` / ``tabulate``;
- ``drilldown``: a model's episodes, an episode's segments;
- ``display``: two-decimal values, coverage, bounds, rank colours;
- ``formats``: the finished table drawn in each output format, one module per format family
  (terminal, Markdown, CSV, JSON, HTML), for the command line, the report and programs.
"""

from __future__ import annotations

from streameval.leaderboard.cells import (
    Cell,
    CellStatus,
    effective_result,
    episode_cell,
    model_cell,
)
from streameval.leaderboard.columns import (
    Column,
    aggregator_for,
    column_by_name,
    column_names,
    table_columns,
)
from streameval.leaderboard.display import cell_text, format_bounds, format_coverage
from streameval.leaderboard.drilldown import (
    EpisodeRow,
    SegmentRow,
    episode_segments,
    model_episodes,
)
from streameval.leaderboard.rounding import RANK_COLOURS, Rank, format_value, round_display
from streameval.leaderboard.table import (
    DEFAULT_MIN_EPISODES,
    INCLUDE_ALL,
    MIN_MODELS_TO_RANK,
    UNIFORM_FAILURE_MAX,
    Exclusion,
    ExclusionRule,
    MasterTable,
    ModelRow,
    build_table,
    exclusion_reasons,
    fails_uniformly,
    model_row,
    rank_rows,
    rank_values,
    sort_rows,
    tabulate,
)
from streameval.metrics.aggregation import Aggregate, Aggregator, episode_mean
from streameval.results.scores_file import EpisodeRecord, LoadedResults, load_episode, load_results

__all__ = [
    "DEFAULT_MIN_EPISODES",
    "INCLUDE_ALL",
    "MIN_MODELS_TO_RANK",
    "RANK_COLOURS",
    "UNIFORM_FAILURE_MAX",
    "Aggregate",
    "Aggregator",
    "Cell",
    "CellStatus",
    "Column",
    "EpisodeRecord",
    "EpisodeRow",
    "Exclusion",
    "ExclusionRule",
    "LoadedResults",
    "MasterTable",
    "ModelRow",
    "Rank",
    "SegmentRow",
    "aggregator_for",
    "build_table",
    "cell_text",
    "column_by_name",
    "column_names",
    "effective_result",
    "episode_cell",
    "episode_mean",
    "episode_segments",
    "exclusion_reasons",
    "fails_uniformly",
    "format_bounds",
    "format_coverage",
    "format_value",
    "load_episode",
    "load_results",
    "model_cell",
    "model_episodes",
    "model_row",
    "rank_rows",
    "rank_values",
    "round_display",
    "sort_rows",
    "table_columns",
    "tabulate",
]
