"""placement.locate: one answer to "where does this edit go in this file, and why" (issue 38.9).

Each case is a small module and one structural edit; the answer says where (the lines), how (the
original exactly, or the same code spelt otherwise; ambiguous; none), why not (the clause a user
acts on), and where conflict markers would go. The structural kind, markers, matrix, drift and
the history walk all take their answer from here, so these are what each of them reports.
"""

from __future__ import annotations

import pytest

from patchctl.errors import SourceSyntaxError
from patchctl.patchsets.placement import Params, locate
from patchctl.patchsets.placement.candidate import Candidate

MODULE = "def fit(self):\n    self.init()\n    self.sync()\n    return self.state\n"


def edit(
    before: str,
    after: str,
    above: tuple[str, ...] = ("self.init()",),
    below: tuple[str, ...] = ("return self.state",),
    scope: str = "fit",
) -> Params:
    return Params("statements", scope, above, below, "    ", before, after)


def test_the_original_in_place_is_where_the_edit_goes_exactly() -> None:
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), MODULE, "m.py")
    assert found.where is not None and (found.where.first, found.where.last) == (3, 3)
    assert found.how == "before" and found.why == ""


def test_the_change_already_there_says_after() -> None:
    text = MODULE.replace("self.sync()", "self.sync(blocking=True)  # Uky")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert found.how == "after" and found.where is not None and found.where.first == 3


def test_the_same_code_spelt_otherwise_is_placed_as_reformatted() -> None:
    text = MODULE.replace("self.sync()", "self.sync(  )  # upstream's comment")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert found.how == "before-code" and found.where is not None and found.where.first == 3


def test_two_fitting_places_are_ambiguous_and_both_are_named() -> None:
    text = MODULE + "\n\ndef fit(self):\n    self.init()\n    self.sync()\n    return self.state\n"
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert found.where is None and found.how == "ambiguous"
    assert found.why == "fits 2 places, lines 3 (unpatched), 9 (unpatched)"


def test_an_anchor_upstream_removed_is_named_and_markers_go_beside_its_neighbour() -> None:
    text = MODULE.replace("    self.init()\n", "    self.setup_everything(1, 2)\n")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert found.where is None and found.how == "none"
    assert found.why == "fit has no statement `self.init()` (an anchor of the patch; by syntax, not spelling)"
    c = found.candidate
    assert isinstance(c, Candidate) and (c.first, c.last) == (3, 3), c
    assert "reads most like its anchor `return self.state`" in c.how


def test_other_code_where_the_anchors_lead_names_the_line_that_differs() -> None:
    text = MODULE.replace("self.sync()", "self.flush()")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert found.how == "none" and found.near and found.near[0].first == 3
    assert found.why == (
        "line 3 holds other code than the patch expects: line 3 reads `self.flush()` where the patch "
        "expects `self.sync()`"
    )
    c = found.candidate
    assert isinstance(c, Candidate) and (c.first, c.last) == (3, 3) and c.how == "where its anchors lead"


def test_other_code_at_several_places_lists_them_all() -> None:
    text = MODULE.replace("self.sync()", "self.flush()")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text + "\n\n" + text, "m.py")
    assert found.why.startswith("lines 3, 9 hold other code than the patch expects: line 3 reads `self.flush()`")


def test_tagged_text_unlike_either_side_is_named_for_verify() -> None:
    text = MODULE.replace("self.sync()", "self.sync(timeout=9)  # Uky")
    found = locate(edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n"), text, "m.py")
    assert [(s.first, s.last) for s in found.tagged_other("Uky")] == [(3, 3)]
    assert found.tagged_other("Fork") == []


def test_tagged_text_where_the_original_fits_is_not_named() -> None:
    # the nearest end (the first `self.sync()`) leaves the tagged line alone, "other"; the next end
    # takes it with the statement after it, the original: that place fits, so nothing is "modified"
    text = "def fit(self):\n    self.init()\n    self.note()  # Uky\n    self.sync()\n    self.sync()\n"
    original = "    self.note()  # Uky\n    self.sync()\n"
    p = edit(original, "    self.sync(blocking=True)  # Uky\n", below=("self.sync()",))
    found = locate(p, text, "m.py")
    assert found.how == "before" and found.where is not None and found.where.first == 3
    assert [s.match for s in found.near] == ["other"] and found.tagged_other("Uky") == []


def test_a_missing_scope_names_the_file() -> None:
    found = locate(edit("    self.sync()\n", "    self.sync(True)\n", scope="train"), MODULE, "verl/m.py")
    assert not found.exists and found.why == "verl/m.py has no train scope"


def test_a_file_that_is_not_python_is_an_error_naming_it_every_time() -> None:
    p = edit("    self.sync()\n", "    self.sync(True)\n")
    for _ in range(2):  # a failed parse is not remembered as an answer
        with pytest.raises(SourceSyntaxError, match=r"verl/broken\.py"):
            locate(p, "def fit(:\n", "verl/broken.py")


def test_one_edit_in_one_text_is_looked_up_once_whoever_asks() -> None:
    p = edit("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n")
    assert locate(p, MODULE, "m.py") is locate(p, MODULE, "m.py")
    assert locate(p, MODULE, "m.py") is not locate(p, MODULE + "\n", "m.py")
