"""structural: before/after pairs for each way issue 10 found it confidently wrong.

Each pair is the smallest module that showed one failure class of the generated cases in
``tests/capture/test_structural_props.py``; the comment above each test says what the kind
answered before the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch, Presence

KIND = KINDS["structural"]
CTX = Context(Path("."), "m.py")


def patch(**params: Any) -> Patch:
    raw = {"scope": "fit", "indent": "    ", **params}
    return Patch("p", "t", "w", "Uky", "structural", ("m.py",), KIND.parse_params(raw, Path("."), Path("x"), "p"))


def round_trip(before: str, after: str, p: Patch) -> None:
    """Apply gives ``after``; check says missing before and present after; apply is idempotent;
    revert gives ``before`` back byte for byte."""
    assert KIND.check(before, p, CTX).presence is Presence.MISSING
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.CHANGED, edit.reason
    assert edit.text == after
    assert KIND.check(after, p, CTX).presence is Presence.PRESENT
    assert KIND.apply(after, p, CTX).status is EditStatus.UNCHANGED
    back = KIND.revert(after, p, Context(Path("."), "m.py", edit.undo))
    assert back.status is EditStatus.CHANGED and back.text == before


# was: conflict ("lines 4 hold other code"): only the nearest `self.sync()` below was tried as the end
def test_a_replaced_statement_that_reads_like_the_anchor_below_is_found() -> None:
    before = "def fit(self):\n    self.init()\n    self.sync()\n    self.sync()\n    return self.state\n"
    after = (
        "def fit(self):\n    self.init()\n    self.sync(blocking=True)  # Uky\n    self.sync()\n    return self.state\n"
    )
    round_trip(
        before,
        after,
        patch(
            above=["self.init()"],
            below=["self.sync()"],
            before="    self.sync()\n",
            after="    self.sync(blocking=True)  # Uky\n",
        ),
    )


# was: conflict: occurrence picked the second start's nearest end, an empty gap
def test_occurrence_picks_a_start_and_any_of_its_ends() -> None:
    block = "    self.init()\n    self.sync()\n    self.sync()\n"
    before = "def fit(self):\n" + block * 2
    after = "def fit(self):\n" + block + block.replace("    self.sync()\n", "    self.sync(blocking=True)  # Uky\n", 1)
    params = {
        "above": ["self.init()"],
        "below": ["self.sync()"],
        "before": "    self.sync()\n",
        "after": "    self.sync(blocking=True)  # Uky\n",
    }
    round_trip(before, after, patch(**params, occurrence=2))
    edit = KIND.apply(before, patch(**params), CTX)  # without it, both starts fit: never a guess
    assert edit.status is EditStatus.AMBIGUOUS
    assert "fits 2 places, lines 3 (unpatched), 6 (unpatched)" in edit.reason


# was: already-applied, check present: the empty gap before the first `self.sync()` has the
# same code as a tagged comment, and "the change's code is there" outranked "the original is there"
def test_deleting_a_statement_for_a_tagged_comment_is_not_already_there() -> None:
    before = "def fit(self):\n    self.sync()\n    self.sync()\n    return self.state\n"
    after = "def fit(self):\n    # Uky: one sync is enough\n    self.sync()\n    return self.state\n"
    round_trip(
        before, after, patch(below=["self.sync()"], before="    self.sync()\n", after="    # Uky: one sync is enough\n")
    )


def test_an_exact_original_outranks_a_copy_of_the_change_without_its_comment() -> None:
    """Inserting a copy of the statement below: BASE reads like the change with its tag
    stripped one statement further, but the exact empty gap is the place."""
    before = "def fit(self):\n    self.init()\n    self.sync()\n    self.sync()\n    return self.state\n"
    after = (
        "def fit(self):\n    self.init()\n    self.sync()  # Uky: once more\n    self.sync()\n    self.sync()\n"
        "    return self.state\n"
    )
    round_trip(
        before,
        after,
        patch(above=["self.init()"], below=["self.sync()"], before="", after="    self.sync()  # Uky: once more\n"),
    )


# was: already-applied, check present on the unpatched file (the example in issue 10)
def test_deleting_one_of_two_identical_adjacent_statements_is_ambiguous() -> None:
    before = "def fit(self):\n    self.init()\n    self.sync()\n    self.sync()\n"
    p = patch(above=["self.sync()"], before="    self.sync()\n", after="")
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.AMBIGUOUS
    assert "fits 2 places, lines 4 (unpatched), 5 (patched)" in edit.reason
    found = KIND.check(before, p, CTX)
    assert found.presence is Presence.MISSING and "fits 2 places" in found.reason
    assert KIND.revert(before, p, CTX).status is EditStatus.AMBIGUOUS
    # the anchors capture grows until they name one place: then it applies and round-trips
    round_trip(
        before,
        "def fit(self):\n    self.init()\n    self.sync()\n",
        patch(above=["self.init()", "self.sync()"], before="    self.sync()\n", after=""),
    )


# was: applied, but check then said missing and a second apply inserted it again
def test_a_change_that_makes_its_own_anchor_repeat_is_refused() -> None:
    before = "def fit(self):\n    self.init()\n    self.sync()\n    return self.state\n"
    p = patch(
        above=["self.init()"], below=["self.sync()"], before="", after="    self.sync()\n    self.log()  # Uky\n"
    )  # `capture --all` takes the untagged line too
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.AMBIGUOUS
    assert "after the change fits 2 places, lines 3 (unpatched), 3-4 (patched)" in edit.reason


def test_a_change_that_leaves_a_body_empty_is_a_conflict() -> None:
    """No fork holds such a body (it would not parse), so the property test never makes one."""
    edit = KIND.apply("def fit(self):\n    self.sync()\n", patch(before="    self.sync()\n", after="    # Uky\n"), CTX)
    assert edit.status is EditStatus.CONFLICT and "would not be valid Python" in edit.reason


# the audit of #18: revert wrote the manifest's text back instead of what the tree really had
def test_revert_restores_the_trees_own_spacing_and_comments_not_the_manifests() -> None:
    before = "def fit(self):\n    self.init()\n    self.sync( )  # wait for the workers\n    return self.state\n"
    after = "def fit(self):\n    self.init()\n    self.sync(blocking=True)  # Uky\n    return self.state\n"
    p = patch(
        above=["self.init()"],
        below=["return self.state"],
        before="    self.sync()\n",
        after="    self.sync(blocking=True)  # Uky\n",
    )
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.CHANGED and edit.text == after
    assert edit.undo == {"before": "    self.sync( )  # wait for the workers\n"}
    round_trip(before, after, p)
    # without the record's text (no record), the manifest's is all there is
    assert KIND.revert(after, p, CTX).text == before.replace("self.sync( )  # wait for the workers", "self.sync()")


def test_only_after_is_required_and_it_never_creates_its_target(tmp_path: Path) -> None:
    """A patch of a module's first statements names nothing but its text (mutation survivors:
    every optional param made required, creates_target flipped)."""
    from patchctl.patchsets.loader import load_patchset

    (tmp_path / "patchset.toml").write_text(
        '[patchset]\nname = "s"\ntag = "Uky"\n\n[[patch]]\nid = "p"\n'
        'title = "t"\nwhy = "w"\nkind = "structural"\ntarget = ["m.py"]\n'
        '[patch.params]\nafter = "import os  # Uky\\n"\n'
    )
    p = load_patchset(tmp_path).get("p")
    assert (
        p.params.mode,
        p.params.scope,
        p.params.above,
        p.params.below,
        p.params.indent,
        p.params.before,
        p.params.occurrence,
    ) == ("statements", "", (), (), "", "", None)
    assert KIND.creates_target is False


def two_line_module_patch() -> Patch:
    """A module-level patch that turns ``x = 1`` between ``import os`` and ``y = 2`` into two tagged lines."""
    return patch(
        scope="",
        indent="",
        above=["import os"],
        below=["y = 2"],
        before="x = 1\n",
        after="x = 3  # Uky\nz = 4  # Uky\n",
    )


def test_reasons_name_the_place_and_owned_lines_cover_the_whole_site() -> None:
    """Mutation survivors: the place named in every reason, the owned lines of a two-line change."""
    import pytest

    from patchctl.errors import ManifestError

    p = two_line_module_patch()
    before, after = "import os\nx = 1\ny = 2\n", "import os\nx = 3  # Uky\nz = 4  # Uky\ny = 2\n"
    assert KIND.check(before, p, CTX).reason == "the module after `import os`: not present"
    found = KIND.check(after, p, CTX)
    assert found.reason == "the module after `import os`: present at lines 2-3" and found.owned_lines == {2, 3}
    spaced = KIND.check(after.replace("x = 3", "x  =  3"), p, CTX)
    assert spaced.reason.endswith("present at lines 2-3 (same code; spacing or comments differ)")
    assert KIND.check(None, p, CTX).reason == "m.py does not exist"
    header = patch(mode="header", scope="fit", before="def fit(self):\n", after="def fit(self, n=1):  # Uky\n")
    assert KIND.check("def fit(self):\n    pass\n", header, CTX).reason.startswith("the header of fit")
    below_only = patch(scope="", indent="", below=["y = 2"], before="x = 1\n", after="x = 3  # Uky\n")
    assert KIND.check("x = 1\ny = 2\n", below_only, CTX).reason == "the module before `y = 2`: not present"
    with pytest.raises(ManifestError, match=r"params.occurrence"):
        KIND.parse_params({"after": "x\n", "occurrence": 0}, Path("."), Path("x"), "p")


def test_params_checks_and_their_boundaries() -> None:
    import pytest

    from patchctl.errors import ManifestError

    assert KIND.parse_params({"after": "x\n", "occurrence": 1}, Path("."), Path("x"), "p").occurrence == 1
    with pytest.raises(ManifestError, match=r"params.after"):
        KIND.parse_params({"before": "x\n", "after": "x\n"}, Path("."), Path("x"), "p")
    with pytest.raises(ManifestError, match=r"params.scope"):
        KIND.parse_params({"mode": "header", "after": "def f():\n"}, Path("."), Path("x"), "p")


def test_check_names_a_modified_change_an_absent_scope_and_two_fits() -> None:
    p = two_line_module_patch()
    edited = KIND.check("import os\nx = 5  # Uky\nz = 4  # Uky\ny = 2\n", p, CTX)
    assert edited.presence is Presence.MODIFIED and edited.owned_lines == {2, 3}
    assert edited.reason == "the module after `import os`: the tagged text at lines 2-3 differs from the patch"
    assert edited.detail == ("--- patch\n+++ m.py:2\n@@ -1,2 +1,2 @@\n-x = 3  # Uky\n+x = 5  # Uky\n z = 4  # Uky\n")
    assert KIND.apply(None, p, CTX).reason == "m.py does not exist"
    assert KIND.revert(None, p, CTX).reason == "m.py does not exist"
    assert (
        KIND.check("def g():\n    pass\n", patch(above=["a()"], before="b()\n", after="c()  # Uky\n"), CTX).reason
        == "no fit scope in m.py"
    )
    twice = KIND.check("import os\nx = 1\ny = 2\nimport os\nx = 1\ny = 2\n", p, CTX)
    assert twice.presence is Presence.MISSING and "fits 2 places, lines 2 (unpatched), 5 (unpatched)" in twice.reason


def test_apply_says_why_no_place_fits() -> None:
    p = patch(scope="", indent="", above=["import os"], below=["y = 2"], before="x = 1\n", after="x = 3  # Uky\n")
    gone = KIND.apply("import sys\nx = 1\n", p, CTX)
    assert gone.status is EditStatus.CONFLICT
    assert gone.reason.startswith("the module after `import os`: the module has no statement `import os`, `y = 2`")
    other = KIND.apply("import os\nx = 9\ny = 2\n", p, CTX)
    assert other.status is EditStatus.CONFLICT
    assert other.reason.startswith("the module after `import os`: line 2 holds other code than the patch expects")
    assert "-x = 1\n+x = 9\n" in other.detail


def test_a_deletion_needs_no_after(tmp_path: Path) -> None:
    from patchctl.patchsets.loader import load_patchset

    (tmp_path / "patchset.toml").write_text(
        '[patchset]\nname = "s"\ntag = "Uky"\n\n[[patch]]\nid = "p"\n'
        'title = "t"\nwhy = "w"\nkind = "structural"\ntarget = ["m.py"]\n'
        '[patch.params]\nabove = ["import os"]\nbefore = "x = 1\\n"\n'
    )
    assert load_patchset(tmp_path).get("p").params.after == ""
