"""Display helpers shared by the CLI, the dashboard and the report, so they print a cell
alike: coverage ``k/N``, bounds ``[lower, upper]``, a case run's interval; the numbers inside
are rounded by ``leaderboard/rounding.py`` (docs/methods.md#scales-and-rounding)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streameval.leaderboard.rounding import format_value

if TYPE_CHECKING:
    from streameval.leaderboard.cells import Cell


def format_coverage(cell: Cell) -> str | None:
    """``k/N`` when fewer than the N episodes where the metric applies were measured (the
    not_applicable ones are outside its domain, not missing), else None."""
    return f"{cell.measured}/{cell.applicable}" if cell.measured < cell.applicable else None


def format_bounds(cell: Cell) -> str | None:
    """``[lower, upper]`` of a partial cell, else None."""
    if cell.lower is None or cell.upper is None:
        return None
    d = cell.decimals
    return f"[{format_value(cell.lower, d)}, {format_value(cell.upper, d)}]"


def format_interval(cell: Cell) -> str | None:
    """``[85.02, 89.40]  41/125 cases`` (``#2–3`` after it when ranked) for a cell with a case
    run's interval (``table --ci``), else None."""
    interval = cell.interval
    if interval is None:
        return None
    d = cell.decimals
    text = (
        f"[{format_value(interval.low, d)}, {format_value(interval.high, d)}]  "
        f"{interval.cases}/{interval.of} cases"
    )
    rank = interval.shared_rank
    return f"{text}  #{rank}" if rank else text


def cell_text(cell: Cell, *, coverage: bool = True, bounds: bool = True) -> str:
    """The cell as text: ``45.12``, ``45.12 (7/15)``, ``45.12 (14/15) [42.11, 48.78]``,
    ``n/a`` or ``missing`` (no value: never a 0 or 100 in its place)."""
    if cell.value is None:
        return "n/a" if cell.status == "not_applicable" else "missing"
    parts = [format_value(cell.value, cell.decimals)]
    cov = format_coverage(cell) if coverage else None
    if cov:
        parts.append(f"({cov})")
    bnd = format_bounds(cell) if bounds else None
    if bnd:
        parts.append(bnd)
    ci = format_interval(cell) if bounds else None
    if ci:
        parts.append(ci)
    return " ".join(parts)
