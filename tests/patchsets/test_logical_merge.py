"""The logical-line merge (:mod:`patchctl.patchsets.logical`) on small texts, one behaviour each:
what a fork's edit becomes in the merged file, byte for byte, where upstream reformatted or
changed the file around it. The real verl files and formatters are in test_threeway_format.py;
these are the edges that file does not reach (an edit at the very start or end of a file, a
header that only parses in a frame, a text that is not Python), each one a wrong merge a user
would find in their tree, found by benchmarks/mutation.py's ``logical`` section.
"""

from __future__ import annotations

import pytest

from patchctl.patchsets import logical

OLD = "import os\n\n\ndef f(x):\n    y = x + 1\n    return y\n"


def test_the_fork_s_edit_and_upstream_s_elsewhere_both_land() -> None:
    mine = OLD.replace("y = x + 1", "y = x + 2  # Uky")
    new = OLD.replace("import os\n", "import os\nimport sys\n") + "\n\ndef g():\n    return 1\n"
    assert logical.merge(mine, OLD, new) == new.replace("y = x + 1", "y = x + 2  # Uky")


def test_a_fork_that_drops_the_first_statement_drops_it_once() -> None:
    """The fork's side of the first chunk is empty: nothing of the fork's text is written there."""
    old = "import os\nimport sys\n\nX = 1\n"
    mine = "import sys\n\nX = 1\n"
    new = "import os\nimport sys\n\nX = 1\nY = 2\n"
    assert logical.merge(mine, old, new) == "import sys\n\nX = 1\nY = 2\n"


def test_upstream_dropping_the_first_statement_is_kept() -> None:
    old = "import os\nimport sys\n\nX = 1\n"
    mine = "import os\nimport sys\n\nX = 2\n"
    new = "import sys\n\nX = 1\n"
    assert logical.merge(mine, old, new) == "import sys\n\nX = 2\n"


def test_a_fork_that_drops_everything_leaves_an_empty_file() -> None:
    assert logical.merge("", "X = 1\n", "X = 1\n") == ""


def test_the_fork_s_last_line_without_a_newline_gets_the_target_s() -> None:
    old, new = "X = 1\nY = 1\n", "Z = 0\nX = 1\nY = 1\n"
    assert logical.merge("X = 1\nY = 2", old, new) == "Z = 0\nX = 1\nY = 2\n"
    # a target that ends without one is not given one
    assert logical.merge("X = 1\nY = 2", old.rstrip("\n"), new.rstrip("\n")) == "Z = 0\nX = 1\nY = 2"


def test_blank_lines_before_the_first_statement_are_the_target_s() -> None:
    mine = OLD.replace("y = x + 1", "y = x + 2")
    new = "\n\n" + OLD
    assert logical.merge(mine, OLD, new) == "\n\n" + mine


@pytest.mark.parametrize(
    "broken",
    [
        OLD.replace("return y", "return (y"),  # a bracket never closed: the tokenizer fails at the end
        OLD.replace("    return y", "  return y"),  # an unindent to no outer level: it fails between two lines
    ],
)
@pytest.mark.parametrize("which", ["old", "mine", "new"])
def test_a_text_that_is_not_python_is_no_merge(which: str, broken: str) -> None:
    texts = {"old": OLD, "mine": OLD.replace("x + 1", "x + 2"), "new": "import re\n" + OLD}
    texts[which] = broken
    assert logical.merge(texts["mine"], texts["old"], texts["new"]) is None


def test_both_sides_changing_a_statement_differently_is_a_conflict() -> None:
    assert logical.merge(OLD.replace("x + 1", "x + 2"), OLD, OLD.replace("x + 1", "x + 3")) is None
    # the same change on both sides is upstream's text
    assert logical.merge(OLD.replace("x + 1", "x + 2"), OLD, OLD.replace("x + 1", "(x + 2)")) == OLD.replace(
        "x + 1", "(x + 2)"
    )


def test_an_edit_upstream_only_reformatted_around_takes_the_fork_s_lines() -> None:
    """Upstream exploded the call and added a trailing comma; the fork changed the line after."""
    old = "def f(a, b):\n    g(a, b)\n    return a\n"
    mine = "def f(a, b):\n    g(a, b)\n    return b\n"
    new = "def f(a, b):\n    g(\n        a,\n        b,\n    )\n    return a\n"
    assert logical.merge(mine, old, new) == "def f(a, b):\n    g(\n        a,\n        b,\n    )\n    return b\n"


def test_a_fork_edit_of_a_line_upstream_reformatted_is_the_fork_s() -> None:
    """The fork changed the very line upstream only re-wrapped: the fork's line, not a conflict."""
    old = "def f(a, b):\n    g(a, b)\n"
    mine = "def f(a, b):\n    g(a, b, c=1)\n"
    new = "def f(a, b):\n    g(\n        a,\n        b,\n    )\n"
    assert logical.merge(mine, old, new) == mine


@pytest.mark.parametrize(
    ("header", "styled"),
    [
        ("elif (x == 1):", "elif x == 1:"),
        ("else:", "else :"),
        ("except (ValueError):", "except ValueError:"),
        ("finally:", "finally :"),
    ],
)
def test_a_clause_header_upstream_reformatted_is_no_conflict_with_the_fork_s_body_edit(
    header: str, styled: str
) -> None:
    """``elif``, ``else``, ``except`` and ``finally`` lines parse only after the statement they
    continue: keyed by their tree in that frame, upstream's redundant brackets are no change."""
    first = "try:\n    pass\n" if header.startswith(("except", "finally")) else "if x == 0:\n    pass\n"
    old = f"{first}{header}\n    y = 1\n    z = 1\n"
    mine = old.replace("z = 1", "z = 2")
    new = f"{first}{styled}\n    y = 1\n    z = 1\n"
    # upstream's header line and the fork's statement, where token keys would see both sides change
    # the same chunk (the header, the body line) and conflict
    assert logical.merge(mine, old, new) == new.replace("z = 1", "z = 2")
    mine2 = old.replace(header, header.replace(":", " :")).replace("y = 1", "y = 3")
    assert logical.merge(mine2, old, new) == new.replace("y = 1", "y = 3")


def test_a_case_header_upstream_reformatted_is_no_conflict() -> None:
    old = "match v:\n    case (1):\n        y = 1\n"
    mine = old.replace("y = 1", "y = 2")
    new = "match v:\n    case 1:\n        y = 1\n"
    assert logical.merge(mine, old, new) == new.replace("y = 1", "y = 2")
    # the header changed by the fork, reformatted by upstream: the fork's header
    mine2 = old.replace("case (1):", "case (2):")
    assert logical.merge(mine2, old, new) == mine2


def test_a_decorator_upstream_reformatted_is_no_conflict() -> None:
    old = "@dec(a,)\ndef f():\n    return 1\n"
    mine = "@dec(a)\ndef f():\n    return 1\n"  # a reformat only: nothing to add
    new = "@dec(a)\ndef f():\n    return 2\n"
    assert logical.merge(mine, old, new) == new
    mine2 = "@dec(b,)\ndef f():\n    return 1\n"
    assert (
        logical.merge(mine2, old, "@dec(\n    a,\n)\ndef f():\n    return 2\n") == "@dec(b,)\ndef f():\n    return 2\n"
    )


def test_a_comment_on_its_own_line_is_matched_by_its_words() -> None:
    old = "#setup\nX = 1\nY = 1\n"
    mine = "#setup\nX = 1\nY = 2\n"
    new = "# setup\nX = 1\nY = 1\n"
    assert logical.merge(mine, old, new) == "# setup\nX = 1\nY = 2\n"
    # a comment the fork changed is a change of its own
    assert logical.merge("# set up the run\nX = 1\nY = 1\n", old, "#setup\nX = 1\nY = 1\nZ = 1\n") == (
        "# set up the run\nX = 1\nY = 1\nZ = 1\n"
    )


def test_a_trailing_comment_the_fork_added_is_carried() -> None:
    """A comment after a statement belongs to the statement: the fork's ``# Uky`` tag on a line is
    an edit of that line (merged where upstream left the line alone)."""
    old = "X = 1\nY = 1\n"
    mine = "X = 1  # Uky: the fork's value\nY = 1\n"
    new = "X = 1\nY = 1\nZ = 1\n"
    assert logical.merge(mine, old, new) == "X = 1  # Uky: the fork's value\nY = 1\nZ = 1\n"


def test_a_comment_inside_a_statement_is_part_of_it() -> None:
    old = "X = [\n    1,\n]\nY = 1\n"
    mine = "X = [\n    1,  # Uky\n]\nY = 1\n"
    new = "X = [\n    1,\n]\nY = 1\nZ = 2\n"
    assert logical.merge(mine, old, new) == mine + "Z = 2\n"


def test_a_statement_moved_into_a_block_is_a_change() -> None:
    """The depth is part of a line's key: the same statement one block deeper is not the same."""
    old = "if a:\n    x = 1\ny = 1\n"
    mine = "if a:\n    x = 1\n    y = 1\n"
    new = "w = 0\nif a:\n    x = 1\ny = 1\n"
    assert logical.merge(mine, old, new) == "w = 0\nif a:\n    x = 1\n    y = 1\n"


def test_a_docstring_upstream_pulled_onto_one_line_is_no_change() -> None:
    old = 'def f():\n    """\n    Do it.\n    """\n    x = 0\n    return 1\n'
    mine = old.replace("return 1", "return 2")
    new = 'def f():\n    """Do it."""\n    x = 0\n    return 1\n'
    assert logical.merge(mine, old, new) == new.replace("return 1", "return 2")
    # a docstring whose words changed is a change: the fork's edit of it conflicts with upstream's
    assert logical.merge(old.replace("Do it.", "Do it now."), old, new.replace("Do it.", "Do it twice.")) is None


def test_a_blank_line_added_between_two_changes_is_no_conflict() -> None:
    """Upstream's formatter added a blank line inside the chunk the fork changed: blank lines alone
    are no conflict, the fork's lines are taken."""
    old = "def f():\n    a = 1\n    b = 1\n"
    mine = "def f():\n    a = 1\n    b = 2\n"
    new = "def f():\n\n    a = 1\n    b = 1\n"
    assert logical.merge(mine, old, new) == "def f():\n\n    a = 1\n    b = 2\n"


def test_upstream_s_insertion_holding_the_fork_s_is_written_once() -> None:
    old = "def f():\n    a = 1\n    return a\n"
    mine = "def f():\n    a = 1\n    a += 1\n    return a\n"
    new = "def f():\n    a = 1\n    log(a)\n    a += 1\n    check(a)\n    return a\n"
    assert logical.merge(mine, old, new) == new
    # upstream inserted other statements there: a conflict, not the fork's written beside them
    other = "def f():\n    a = 1\n    log(a)\n    return a\n"
    assert logical.merge(mine, old, other) is None
    # the fork also dropped a statement there: not upstream's already
    mine2 = "def f():\n    a += 1\n    return a\n"
    new2 = "def f():\n    b = 0\n    a += 1\n    return a\n"
    assert logical.merge(mine2, old, new2) is None


def test_the_fork_s_run_must_be_contiguous_in_upstream_s_insertion() -> None:
    old = "def f():\n    a = 1\n    return a\n"
    mine = "def f():\n    a = 1\n    a += 1\n    a *= 2\n    return a\n"
    apart = "def f():\n    a = 1\n    a += 1\n    log(a)\n    a *= 2\n    return a\n"
    assert logical.merge(mine, old, apart) is None
    at_end = "def f():\n    a = 1\n    log(a)\n    a += 1\n    a *= 2\n    return a\n"
    assert logical.merge(mine, old, at_end) == at_end


def test_units_span_their_physical_lines() -> None:
    text = "\n# head\nx = (\n    1\n)\n\n\ny = 2  # note\n"
    units = logical.cut(text)
    assert units is not None
    assert units.head == 1
    assert units.spans == ((1, 2), (2, 5), (5, 7), (7, 8))
    assert units.keys[0] == ("#", "head")
    assert units.keys[2] == logical.BLANK
    assert units.keys[3][3] == ("note",)
    assert units.text(1, 3) == "x = (\n    1\n)\n\n\n"
    assert logical.cut("\n\n") == logical.Units(("\n", "\n"), (), (), 2)


def test_a_fork_edit_of_a_line_too_deep_for_a_tree_is_kept() -> None:
    """Lines keyed by their tokens (too deep for the syntax tree) still differ by their tokens: the
    fork's edit of one is an edit, carried into the target, not taken for the base's line."""
    deep = "x = 1" + " + 1" * 20000 + "\n"
    old = "import os\n" + deep + "y = 2\n"
    mine = "import os\n" + deep.replace("x = 1", "x = 2", 1) + "y = 2\n"
    new = "import re\n" + old
    assert logical.merge(mine, old, new) == "import re\n" + mine
