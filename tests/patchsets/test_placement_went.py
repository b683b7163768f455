"""Where a scope a commit took out of its file went (patchsets/placement/scopes.py ``went`` and
``renamed``), and the parts the walk leans on beside it (the table kept per text, the opcodes of
two texts), asserted on small texts.

The ``--repo`` walk follows a fork's edit into the def or class upstream moved it to: under its
own name (``find``, test_placement_scopes.py), else under a new name whose body is alike (verl's
``main_task`` became ``TaskRunner.run``; test_rename_verl.py on verl's real history, which needs
a mirror and minutes). Each test here fails on a bug the mutation run planted in that path
(``benchmarks/mutation.toml``, section history_scopes): a renamed scope missed or taken from the
wrong file, a def taken for a class, a two-line body followed, a found move reported as a rename,
the table kept for no text or for every text, an edit's region reaching past its last line.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

from patchctl.patchsets.placement import scopes
from patchctl.patchsets.placement.scopes import Went, edited, inner, renamed, went

#: a body of three non-blank lines: the fewest a scope under another name is followed with
BODY = "    total = load(config)\n    total += 1\n    return total\n"
OLD = "def main_task(config):\n" + BODY


def candidate(
    text: str, path: str = "trainer.py", before: frozenset[str] = frozenset()
) -> tuple[str, str, frozenset[str]]:
    return (path, text, before)


def test_a_scope_under_a_new_name_with_the_same_body_is_followed() -> None:
    text = "import os\n\n\nclass TaskRunner:\n    def run(self, config):\n" + "".join(
        "    " + ln for ln in BODY.splitlines(True)
    )
    found = renamed(OLD, [candidate("x = 1\n", "other.py"), candidate(text)])
    assert found is not None
    path, scope, score = found
    assert (path, scope.name, scope.start, scope.end, scope.indent, score) == (
        "trainer.py",
        "TaskRunner.run",
        5,
        8,
        "    ",
        1.0,
    )


def test_its_decorators_and_def_line_are_left_out_of_the_likeness() -> None:
    """They hold the name: three body lines alike and the two lines naming it unlike would be 0.6."""
    old = "@register('main_task')\n" + OLD
    found = renamed(old, [candidate("@register('run')\ndef run(config):\n" + BODY)])
    assert found is not None and (found[1].name, found[2]) == ("run", 1.0)
    assert inner(old) == BODY.splitlines(True)
    assert inner("@a\n@b\nasync def f():\n    pass\n") == ["    pass\n"]


def test_a_body_of_two_lines_is_not_followed_under_another_name() -> None:
    old = "def short(a):\n    a += 1\n\n    return a\n"  # two non-blank lines: alike to too many others
    assert renamed(old, [candidate("def other(a):\n    a += 1\n\n    return a\n")]) is None


def test_a_name_the_file_defined_before_is_another_scope_not_the_renamed_one() -> None:
    text = "def run(config):\n" + BODY
    assert renamed(OLD, [candidate(text, before=frozenset({"run"}))]) is None


def test_a_def_is_not_followed_into_a_class_of_the_same_body() -> None:
    assert renamed(OLD, [candidate("class Run:\n" + BODY)]) is None
    cls = "class Config:\n    a = 1\n    b = 2\n    c = 3\n"
    found = renamed(
        cls,
        [
            candidate("def config():\n    a = 1\n    b = 2\n    c = 3\n"),
            candidate("class Settings:\n    a = 1\n    b = 2\n    c = 3\n"),
        ],
    )
    assert found is not None and found[1].name == "Settings"


def test_a_body_exactly_as_alike_as_renamed_asks_is_followed() -> None:
    """4 lines of 4 in a body of 6: a ratio of 2 * 4 / 10, exactly RENAMED (0.8), the bound included."""
    old = "def f(a):\n    a += 1\n    a *= 2\n    a -= 3\n    return a\n"
    now = "def g(a):\n    a += 1\n    log(a)\n    a *= 2\n    a -= 3\n    log(a)\n    return a\n"
    found = renamed(old, [candidate(now)])
    assert found is not None and (found[1].name, found[2]) == ("g", scopes.RENAMED)
    below = "def g(a):\n    a += 1\n    log(a)\n    a *= 2\n    a -= 3\n    log(a)\n    log(a)\n    return a\n"
    assert renamed(old, [candidate(below)]) is None  # 8 / 11


def test_of_several_alike_the_most_alike_is_taken_and_of_equals_the_first() -> None:
    close = "def g(config):\n    total = load(config)\n    total += 1\n    log(total)\n    return total\n"  # 0.857
    same = "def h(config):\n" + BODY
    found = renamed(OLD, [candidate(same, "first.py"), candidate(close, "second.py")])
    assert found is not None and (found[0], found[2]) == ("first.py", 1.0)
    found = renamed(OLD, [candidate(close, "first.py"), candidate(same, "second.py"), candidate(same, "third.py")])
    assert found is not None and (found[0], found[2]) == ("second.py", 1.0)


def test_a_renamed_scope_of_many_alike_lines_is_followed() -> None:
    """difflib's autojunk would take the 250 repeated lines of the new body for junk, and the
    body for unlike."""
    old = "def h():\n" + "    x += 1\n" * 250 + "    return x\n"
    now = "def k():\n    y = 0\n" + "    x += 1\n" * 250 + "    z = 1\n    return x\n"
    found = renamed(old, [candidate(now)])
    assert found is not None and found[1].name == "k" and found[2] > 0.99


def test_went_names_a_move_under_its_own_name_before_asking_for_renames() -> None:
    old = "x = 1\n" + OLD
    scope = scopes.table(old)["main_task"]  # type: ignore[index]
    asked: list[bool] = []

    def before() -> list[tuple[str, str, frozenset[str]]]:
        asked.append(True)
        return [candidate("def run(config):\n" + BODY)]

    moved = went(old, scope, [("trainer.py", "y = 2\n" + OLD)], before)
    assert moved is not None and not asked
    assert (moved.path, moved.scope.name, moved.scope.start, moved.score, moved.renamed) == (
        "trainer.py",
        "main_task",
        2,
        1.0,
        False,
    )
    assert moved.why == ""
    moved = went(old, scope, [("trainer.py", "y = 2\n")], before)
    assert asked == [True]
    assert moved == Went("trainer.py", scopes.table("def run(config):\n" + BODY)["run"], 1.0, True)  # type: ignore[index]
    assert moved.why == " (renamed; its body 100% alike)"
    assert went(old, scope, [], list) is None


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> OrderedDict[str, object]:
    """The tables kept, fresh and for three texts."""
    fresh: OrderedDict[str, object] = OrderedDict()
    monkeypatch.setattr(scopes, "_TABLES", fresh)
    monkeypatch.setattr(scopes, "TABLES", 3)
    return fresh


def test_the_tables_of_the_last_texts_asked_are_kept_and_no_more(kept: OrderedDict[str, object]) -> None:
    """A walk asks the same blobs many times (each kept, not parsed again), and reads thousands
    (the oldest asked let go: a walk's memory stays bounded)."""
    texts = [f"def f{n}():\n    return {n}\n" for n in range(4)]
    first = scopes.table(texts[0])
    scopes.table(texts[1])
    scopes.table(texts[2])
    assert list(kept) == texts[:3]
    assert scopes.table(texts[0]) is first  # asked again: the kept table, and now the last asked
    scopes.table(texts[3])
    assert list(kept) == [texts[2], texts[0], texts[3]]
    assert scopes.table("def (:\n") is None and list(kept) == [texts[0], texts[3], "def (:\n"]


def test_an_edit_s_region_holds_its_own_lines_and_none_of_the_shared_ones_below() -> None:
    before = "a = 1\nb = 2\nc = 3\nd = 4\n"
    assert edited(before, "a = 1\nB = 2\nc = 3\nd = 4\n") == [scopes.Region(2, 2)]
    assert scopes.opcodes(before.splitlines(True), "a = 1\nB = 2\nc = 3\nd = 4\n".splitlines(True)) == [
        ("replace", 1, 2, 1, 2)
    ]


def test_edits_at_both_ends_of_many_alike_lines_are_two_regions() -> None:
    """difflib's autojunk would take the 300 alike lines for junk, and see one edit of the whole file."""
    before = "x = 0\n" + "pass\n" * 300 + "y = 0\n"
    after = "x = 1\n" + "pass\n" * 300 + "y = 1\n"
    assert edited(before, after) == [scopes.Region(1, 1), scopes.Region(302, 302)]
