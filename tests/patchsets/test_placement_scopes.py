"""Which def or class an edit falls in (patchsets/placement/scopes.py), asserted on small texts.

The history walk follows a scope through upstream's commits by these answers, and the 3-way
check compares them; the scope table is placement's (one finder, anchors.definitions, over one
parse per text, as the structural kind's scopes). Each test fails on a bug the mutation run
planted (issue 41 req 8): a scope's indentation read off the wrong line, defs inside an ``if`` or
``try`` missed, an edit on a scope's first or last line counted outside it, an inserted line's
indentation misread, a broken text said to define nothing; and on the walk reading another scope
than apply placed an edit in.
"""

from __future__ import annotations

import ast
import itertools
import re

import pytest

from patchctl.patchsets.placement import Params, locate
from patchctl.patchsets.placement.anchors import definitions, find_scopes
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.patchsets.placement.scopes import at_line, enclosing, find, has, splice, table

F = "def f(a):\n    return a\n"


def test_a_text_that_is_not_python_has_no_scopes_and_still_counts_as_defining_the_name() -> None:
    assert table("def (:\n") is None
    assert has("def (:\n", "f") and not has(None, "f") and not has(F, "g")


def test_each_scope_has_the_indentation_of_its_own_def_line_also_on_the_texts_last_line() -> None:
    found = table("class A:\n    def f(self):\n        pass\n")
    assert found is not None and (found["A"].indent, found["A.f"].indent) == ("", "    ")
    last = table("class B:\n    def g(self): pass")
    assert last is not None and last["B.g"].indent == "    "


def test_defs_inside_an_if_or_a_try_at_module_level_are_scopes() -> None:
    found = table(
        "if True:\n    def g():\n        pass\ntry:\n    class C:\n        pass\nexcept ImportError:\n    pass\n"
    )
    assert found is not None and {"g", "C"} <= set(found)


def test_an_edit_on_a_scopes_first_or_last_line_is_inside_it() -> None:
    assert enclosing(F, F.replace("def f(a):", "def f(a, b):")) == "f"
    assert enclosing(F, F.replace("return a", "return -a")) == "f"


def test_a_line_inserted_right_after_the_def_line_or_indented_after_its_end_is_inside_it() -> None:
    assert enclosing(F, "def f(a):\n    a += 1\n    return a\n") == "f"
    assert enclosing(F, F + "    print(a)\n") == "f"


def test_a_module_level_line_inserted_after_a_scope_is_outside_it() -> None:
    assert enclosing(F, F + "x = 2\n") is None


def test_a_blank_line_inserted_inside_a_body_is_inside_it() -> None:
    before = "def f(a):\n    a += 1\n    return a\n"
    assert enclosing(before, "def f(a):\n    a += 1\n\n    return a\n") == "f"


def test_no_change_is_in_no_scope() -> None:
    assert enclosing(F, F) is None


def test_an_edit_below_a_long_run_of_alike_lines_is_found_in_its_own_scope() -> None:
    """difflib's autojunk would drop the 300 alike lines as junk, and the edit would seem to span both scopes."""
    before = "def f():\n" + "    pass\n" * 300 + "def g():\n    return 1\n"
    assert enclosing(before, before.replace("return 1", "return 2")) == "g"


H = "def h():\n    a = 1\n    return a\n"


def test_a_moved_scope_is_found_when_half_its_lines_are_alike_and_not_below() -> None:
    half = "def h():\n    x = 1\n    y = 2\n    z = 3\n    return a\n"  # 2 of 3 + 5 lines alike: a ratio of 0.5
    found = find(H, "h", [("a.py", half)])
    assert found is not None and found[0] == "a.py" and found[2] == 0.5
    assert find(H, "h", [("b.py", "def h():\n    return [n for n in range(9)]\n")]) is None


def test_of_two_equally_alike_candidates_the_first_is_taken() -> None:
    found = find(H, "h", [("first.py", H), ("second.py", "x = 0\n" + H)])
    assert found is not None and (found[0], found[2]) == ("first.py", 1.0)


def test_an_edit_in_the_last_method_of_a_class_is_in_the_method_not_the_class() -> None:
    before = "class A:\n    def f(self):\n        return 1\n"
    assert enclosing(before, before.replace("return 1", "return 2")) == "A.f"


def test_a_scope_of_many_alike_lines_is_found_again_whole() -> None:
    """difflib's autojunk would take the 250 repeated lines for junk and see the body, a line added
    at each end, as unlike."""
    old = "def h():\n" + "    x += 1\n" * 250 + "    return x\n"
    now = "def h():\n    y = 0\n" + "    x += 1\n" * 250 + "    z = 1\n    return x\n"
    found = find(old, "h", [("a.py", "import os\n" + now)])
    assert found is not None and found[2] > 0.99


def test_a_splice_keeps_every_line_around_the_scope() -> None:
    text = "x = 1\n" + F + "y = 2\n"
    f = table(text)["f"]  # type: ignore[index]
    assert splice(text, f, "def f(a):\n    return -a\n") == "x = 1\ndef f(a):\n    return -a\ny = 2\n"


def test_a_line_is_named_by_the_scope_from_its_first_line_to_its_last() -> None:
    text = "x = 1\n" + F + "y = 2\n"
    assert [at_line(text, n) for n in (1, 2, 3, 4)] == [None, "f", "f", None]


def test_lines_are_counted_as_the_tree_counts_them_so_a_form_feed_moves_no_scope() -> None:
    """str.splitlines ends a line at a form feed, Python's tokenizer does not: read by the former,
    the def after it had the comment's tail for its indentation and its body started a line early."""
    text = "x = 1  # a\x0c b\n    \ndef f(a):\n    return a\n"
    f = table(text)["f"]  # type: ignore[index]
    assert (f.start, f.end, f.indent) == (3, 4, "")
    assert splice(text, f, "def f(a):\n    return -a\n") == "x = 1  # a\x0c b\n    \ndef f(a):\n    return -a\n"


#: defs a patch's scope names, a def inside an ``if`` (no such scope), and a method and a nested
#: class's method of one name
TRAINER = """\
import os

if os.name == "nt":

    def fit():
        return 0


class Trainer:
    @property
    def name(self):
        return "t"

    def fit(self):
        self.init()
        self.sync()
        return self.state

    class Inner:
        def fit(self):
            self.init()
            self.sync()
            return self.state
"""


@pytest.mark.parametrize(("scope", "indent"), [("Trainer.fit", "        "), ("Trainer.Inner.fit", "            ")])
def test_the_walk_reads_the_scope_apply_placed_the_edit_in(scope: str, indent: str) -> None:
    """One scope finder (issue 38 req 9): the structural kind places an edit by its scope
    (placement.locate), and the history walk and the 3-way check read which scope an edit sits
    in off the text it made (scopes.enclosing). Both answers come from anchors.definitions: a
    finder that named scopes otherwise for one of them would fail here."""
    before, after = f"{indent}self.sync()\n", f"{indent}self.sync(True)\n"
    p = Params("statements", scope, ("self.init()",), ("return self.state",), indent, before, after)
    found = locate(p, TRAINER, "trainer.py")
    assert found.where is not None, found.why
    src = TRAINER.splitlines(keepends=True)
    patched = "".join(src[: found.where.first - 1]) + p.after + "".join(src[found.where.last :])
    assert enclosing(TRAINER, patched, "trainer.py") == scope
    assert has(patched, scope, "trainer.py")
    held = table(TRAINER, "trainer.py")[scope]  # type: ignore[index]
    assert held.start < found.where.first <= found.where.last <= held.end


def test_a_def_inside_an_if_is_in_the_walks_table_but_names_no_patch_scope() -> None:
    """The walk follows an edit in any def (its table holds the one inside the ``if``); a patch's
    scope names only definitions nested in definitions, as capture writes them."""
    tree = ast.parse(TRAINER)
    assert [d.name for d in definitions(tree)] == [
        "fit",
        "Trainer",
        "Trainer.name",
        "Trainer.fit",
        "Trainer.Inner",
        "Trainer.Inner.fit",
    ]
    assert find_scopes(tree, "fit") == [] and table(TRAINER)["fit"].start == 5  # type: ignore[index]
    assert [n.lineno for n in find_scopes(tree, "Trainer.fit")] == [14]  # type: ignore[attr-defined]


def test_lines_split_where_the_tokenizer_splits_for_every_short_text_of_line_breaks() -> None:
    """split_lines takes str.splitlines's answer when it split at line feeds only (its fast way):
    every text of up to four characters among the breaks Python's tokenizer knows and those only
    str.splitlines knows gives the regular expression's lines."""
    alphabet = ["a", "\n", "\r", "\r\n", "\f", "\v", "\x1c", "\x85", "\u2028"]
    for n in range(5):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            assert split_lines(text) == re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text), repr(text)
