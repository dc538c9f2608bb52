"""``--sets``, ``--images``, ``--actions`` and the seeded case order (``cases/select.py``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from streameval.cases import case_order, index_cases, load_cases, select_cases
from streameval.cases.select import ORDER_RULE, parse_id_list
from streameval.errors import BadInputError


def names(cases: object) -> list[str]:
    return [c.key for c in cases]  # type: ignore[attr-defined]


def test_sets_images_and_actions_narrow_the_cases(arena: Path) -> None:
    cases = load_cases(arena, sets="first_view/real", images="0-1", actions="1,6,5")
    assert names(cases) == ["first_view/real/000_001", "first_view/real/000_006",
                            "first_view/real/001_005"]  # fmt: skip
    assert all(c.image_sha256 for c in cases)  # the selected images were read


def test_a_view_names_all_its_sets(arena: Path) -> None:
    every = index_cases(arena)
    assert select_cases(every, sets="third_view").sets == ("third_view/style",)
    both = select_cases(every, sets=" third_view/style , first_view/ ")
    assert set(both.sets) == {"third_view/style", "first_view/real"} and len(both) == len(every)


def test_only_the_selected_images_are_read(arena: Path) -> None:
    (arena / "first_view" / "real" / "002.jpg").write_bytes(b"broken")
    assert len(load_cases(arena, images="0,1")) == 8  # 002.jpg is never opened
    with pytest.raises(BadInputError, match=r"002\.jpg: not a JPEG or PNG image"):
        load_cases(arena)


def test_id_lists() -> None:
    assert parse_id_list("0-4,7", "--images", low=0) == (0, 1, 2, 3, 4, 7)
    assert parse_id_list(" 7 , 2-3,3", "--images", low=0) == (2, 3, 7)
    assert parse_id_list("15", "--actions", low=1, high=15) == (15,)


@pytest.mark.parametrize(
    ("flag", "text", "problem"),
    [
        ("--images", "4-2", "range '4-2' runs backwards"),
        ("--images", "a", "'a' is not a number or a range like 0-4"),
        ("--images", "", "'' is not a number or a range like 0-4"),
        ("--images", "1,,2", "'' is not a number or a range like 0-4"),
        ("--images", "-1", "'-1' is not a number or a range like 0-4"),
        ("--images", "99999999", "'99999999' is not a number or a range like 0-4"),
        ("--actions", "16", "16 is outside 1-15"),
        ("--actions", "0-3", "0 is outside 1-15"),
        ("--actions", "1.5", "'1.5' is not a number or a range like 0-4"),
    ],
)
def test_bad_id_lists(arena: Path, flag: str, text: str, problem: str) -> None:
    option = {"--images": "images", "--actions": "actions"}[flag]
    with pytest.raises(BadInputError) as err:
        load_cases(arena, **{option: text})
    assert str(err.value) == f"{flag}: {problem}"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"sets": "first_view/rael"},
         "--sets names 'first_view/rael', which this case set lacks (its sets: first_view/real, "
         "third_view/style); did you mean 'first_view/real'?"),
        ({"sets": "second_view"},
         "--sets names 'second_view', which this case set lacks (its sets: first_view/real, "
         "third_view/style)"),
        ({"images": "2-3"}, "--images 3 is beyond set first_view/real (images 000-002)"),
        ({"sets": "third_view", "images": "5"},
         "--images 5 is beyond set third_view/style (images 000-002)"),
        ({"actions": "13"}, "--actions 13: no selected case has action 13"),
        ({"sets": "third_view", "actions": "2"}, "--actions 2: no selected case has action 2"),
        # an empty selection is always named by the option that emptied it
        ({"images": "1", "actions": "1"}, "--actions 1: no selected case has action 1"),
    ],
)  # fmt: skip
def test_what_the_folder_lacks_is_one_line(
    arena: Path, options: dict[str, str], problem: str
) -> None:
    with pytest.raises(BadInputError) as err:
        load_cases(arena, **options)
    assert str(err.value) == f"{arena}: {problem}"


def test_images_on_a_manifest(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"case": "a", "actions": 1}) + "\n")
    assert len(load_cases(path, actions="1")) == 1
    with pytest.raises(BadInputError) as err:
        load_cases(path, images="0")
    assert str(err.value) == (
        f"{path}: --images selects an arena_inputs folder's images by number; "
        "choose a manifest's cases with --sets and --actions"
    )


def test_the_seeded_order_is_a_recorded_function_of_the_seed(arena: Path) -> None:
    cases = index_cases(arena).cases
    listed, record = case_order(cases, None)
    assert listed == cases and record == {"seed": None, "rule": "as listed", "order": names(cases)}
    first, record = case_order(cases, 7)
    again, _ = case_order(tuple(reversed(cases)), 7)
    assert first == again  # the order depends on the seed and the cases, not their listing
    assert sorted(names(first)) == sorted(names(cases)) and names(first) != names(cases)
    assert record == {"seed": 7, "rule": ORDER_RULE, "order": names(first)}
    assert names(case_order(cases, 8)[0]) != names(first)
    # a subset (a resumed run, a narrower selection) keeps the relative order of the full run
    subset = [c for c in cases if c.set == "third_view/style"]
    assert names(case_order(subset, 7)[0]) == [k for k in names(first) if k.startswith("third")]


def test_the_order_is_pinned(arena: Path) -> None:
    # sha256 of "<seed>/<set>/<name>": the same on every machine and numpy version
    cases = index_cases(arena).cases
    order = names(case_order(cases, 0)[0])
    assert order == sorted(names(cases), key=lambda k: hashlib.sha256(f"0/{k}".encode()).digest())
    assert order[:3] == [
        "first_view/real/000_006", "third_view/style/000_001", "third_view/style/001_003",
    ]  # fmt: skip
