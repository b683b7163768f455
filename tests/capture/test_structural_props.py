"""Properties of the structural kind on generated modules: apply twice = apply once, and
revert after apply gives back the original bytes."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.patchsets.kinds import KINDS, structure
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.pyparse import split_lines
from patchctl.patchsets.model import Patch, Presence

KIND = KINDS["structural"]
CTX = Context(Path("."), "m.py")
statement = st.builds(lambda n, k: f"v{n} = {k}", st.integers(0, 3), st.integers(0, 3))


@st.composite
def case(draw: st.DrawFn) -> tuple[str, dict]:
    bodies = draw(st.lists(st.lists(statement, min_size=1, max_size=6), min_size=1, max_size=3))
    text = "import os\n\n\n" + "\n\n".join(
        f"def f{i}():\n" + "".join(f"    {s}\n" for s in body) for i, body in enumerate(bodies))
    i = draw(st.integers(0, len(bodies) - 1))
    n = len(bodies[i])
    above = draw(st.integers(-1, n - 1))
    below = draw(st.integers(above + 1, n))
    new = draw(st.lists(statement, max_size=3))
    lines = split_lines(text)
    node = structure.find_scopes(ast.parse(text), f"f{i}")[0]
    stmts = node.body  # type: ignore[attr-defined]
    w = structure.window(lines, node, above, below)
    assert w is not None
    after = "".join(f"    {s}  # Uky\n" for s in new)
    raw = {"scope": f"f{i}", "indent": "    ", "before": w.text(lines), "after": after,
           "above": [structure.head(lines, stmts[above])] if above >= 0 else [],
           "below": [structure.head(lines, stmts[below])] if below < n else []}
    return text, raw


@settings(max_examples=200, deadline=None)
@given(case())
def test_apply_is_idempotent_and_revert_restores_bytes(generated: tuple[str, dict]) -> None:
    text, raw = generated
    if raw["before"] == raw["after"]:
        return
    patch = Patch("p", "t", "w", "Uky", "structural", ("m.py",), KIND.parse_params(raw, Path("."), Path("x"), "p"))
    edit = KIND.apply(text, patch, CTX)
    if edit.status is not EditStatus.CHANGED:  # repeated neighbours may make a place ambiguous: never a guess
        assert edit.status in (EditStatus.AMBIGUOUS, EditStatus.UNCHANGED, EditStatus.CONFLICT), edit.reason
        return
    assert edit.text is not None
    ast.parse(edit.text)
    assert KIND.check(edit.text, patch, CTX).presence is Presence.PRESENT
    again = KIND.apply(edit.text, patch, CTX)
    assert again.status is EditStatus.UNCHANGED
    back = KIND.revert(edit.text, patch, Context(Path("."), "m.py", edit.undo))
    assert back.status is EditStatus.CHANGED and back.text == text


def test_header_mode_follows_a_method_to_a_new_indentation() -> None:
    raw = {"mode": "header", "scope": "A.f", "indent": "    ", "before": "    def f(self, x=1):\n",
           "after": "    def f(self, x=2):  # Uky\n"}
    patch = Patch("p", "t", "w", "Uky", "structural", ("m.py",), KIND.parse_params(raw, Path("."), Path("x"), "p"))
    nested = "if True:\n    class A:\n        def f(self, x=1):\n            return x\n"
    assert KIND.apply(nested, patch, CTX).status is EditStatus.NOT_APPLICABLE  # A is not at the top level here
    moved = "class A:\n    @property\n    def f(self, x=1):\n        return x\n"
    edit = KIND.apply(moved, patch, CTX)
    assert edit.text == "class A:\n    @property\n    def f(self, x=2):  # Uky\n        return x\n"
    wrapped = "class Outer:\n    class A:\n        def f(self, x=1):\n            return x\n"
    patch2 = Patch("p", "t", "w", "Uky", "structural", ("m.py",),
                   KIND.parse_params({**raw, "scope": "Outer.A.f"}, Path("."), Path("x"), "p"))
    assert KIND.apply(wrapped, patch2, CTX).text == wrapped.replace("x=1):", "x=2):  # Uky")
