"""``--stop-when`` text into a typed rule, and one clear line for each bad text."""

from __future__ import annotations

import pytest

from streameval.errors import BadInputError
from streameval.metrics.stop_rule import VersusRule, WidthRule, parse_stop_when


def test_width_for_every_column() -> None:
    rule = parse_stop_when("width<=4")
    assert rule == WidthRule(columns=(), every=4.0)
    assert rule.width_for("direction_accuracy_trans") == 4.0
    assert rule.named_columns == ()


def test_width_for_named_columns() -> None:
    rule = parse_stop_when("direction_accuracy_trans:width<=4, local_memory : width <= 2.5")
    assert isinstance(rule, WidthRule)
    assert rule.columns == (("direction_accuracy_trans", 4.0), ("local_memory", 2.5))
    assert rule.every is None
    assert rule.width_for("local_memory") == 2.5
    assert rule.width_for("global_memory") is None
    assert rule.named_columns == ("direction_accuracy_trans", "local_memory")


def test_named_columns_beside_every_column() -> None:
    rule = parse_stop_when("width<=6,local_memory:width<=2")
    assert isinstance(rule, WidthRule)
    assert rule.width_for("local_memory") == 2.0
    assert rule.width_for("global_memory") == 6.0


def test_versus_a_baseline() -> None:
    assert parse_stop_when("vs=results/baseline") == VersusRule("results/baseline", 1.0)
    assert parse_stop_when(" vs=runs/a b ", margin=0.5) == VersusRule("runs/a b", 0.5)
    assert parse_stop_when("vs=r", margin=0) == VersusRule("r", 0.0)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "",
            "--stop-when: empty rule; expected 'width<=W', 'COLUMN:width<=W[,COLUMN:width<=W...]'"
            " or 'vs=DIR'",
        ),
        (
            "width<4",
            "--stop-when: 'width<4' in 'width<4' is not a rule; expected 'width<=W', "
            "'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'",
        ),
        (
            "stop soon",
            "--stop-when: 'stop soon' in 'stop soon' is not a rule; expected 'width<=W', "
            "'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'",
        ),
        (
            "width<=abc",
            "--stop-when: width in 'width<=abc' must be a positive number of points, got 'abc'",
        ),
        (
            "width<=0",
            "--stop-when: width in 'width<=0' must be a positive number of points, got '0'",
        ),
        (
            "width<=nan",
            "--stop-when: width in 'width<=nan' must be a positive number of points, got 'nan'",
        ),
        (
            "a:width<=-2",
            "--stop-when: width in 'a:width<=-2' must be a positive number of points, got '-2'",
        ),
        (
            "width<=4,",
            "--stop-when: 'width<=4,' has an empty clause; expected 'width<=W', "
            "'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'",
        ),
        (
            "width<=4,width<=2",
            "--stop-when: 'width<=4,width<=2' has two 'width<=' clauses for every column",
        ),
        (
            "a:width<=4,a:width<=2",
            "--stop-when: column 'a' is named twice in 'a:width<=4,a:width<=2'",
        ),
        (
            "9a:width<=4",
            "--stop-when: '9a' in '9a:width<=4' is not a column name; expected 'width<=W', "
            "'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'",
        ),
        (
            ":width<=4",
            "--stop-when: '' in ':width<=4' is not a column name; expected 'width<=W', "
            "'COLUMN:width<=W[,COLUMN:width<=W...]' or 'vs=DIR'",
        ),
        ("vs=", "--stop-when: 'vs=' needs the folder of a finished run, e.g. vs=results/base"),
    ],
)
def test_bad_text(text: str, line: str) -> None:
    with pytest.raises(BadInputError) as err:
        parse_stop_when(text)
    assert str(err.value) == line


@pytest.mark.parametrize("margin", [-1.0, float("nan"), float("inf")])
def test_bad_margin(margin: float) -> None:
    with pytest.raises(BadInputError, match=r"^--margin: must be a finite number of points >= 0"):
        parse_stop_when("vs=results/base", margin=margin)
