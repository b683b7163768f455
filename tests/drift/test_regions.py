"""The pure pieces of drift: which definition a call names, and what a signature change means."""

from __future__ import annotations

import ast

from patchctl.drift import regions

MODULE = """\
def generate(x):
    pass

class Manager:
    def generate(self, prompt, n=1):
        pass

    class Inner:
        def run(self):
            pass
"""


def test_only_what_the_call_names_is_resolved() -> None:
    tree = ast.parse(MODULE)
    assert regions.find_callee(tree, "generate") == "generate"
    assert regions.find_callee(tree, "Manager.generate") == "Manager.generate"
    assert regions.find_callee(tree, "Inner.run") == "Manager.Inner.run"
    # a call through a variable names no definition (it once matched Manager.generate)
    assert regions.find_callee(tree, "self.module.generate") is None
    assert regions.find_callee(tree, "module_class.generate") is None


def test_signature_flags() -> None:
    def sig(src: str) -> list[regions.Param] | None:
        return regions.signature(ast.parse(src).body[0])

    old = sig("def f(a, b=1, *, c=None): pass")
    assert regions.signature_flags("f", old, old) == []
    assert regions.signature_flags("f", old, sig("def f(a, b=2, *, c=None): pass")) == ["default changed: f(b=1 -> 2)"]
    assert regions.signature_flags("f", old, sig("def f(a, bb=1, *, c=None): pass")) == [
        "parameter renamed: f(b -> bb)"
    ]
    assert regions.signature_flags("f", old, sig("def f(a, b=1): pass")) == ["parameter removed: f(c)"]
    assert regions.signature_flags("f", old, sig("def f(a, b=1, *, c=None, d=3): pass")) == ["parameter added: f(d=3)"]
    assert regions.signature(ast.parse("class K:\n    def __init__(self, x=1): pass").body[0]) == [
        regions.Param("self", None),
        regions.Param("x", "1"),
    ]


def test_a_long_diff_is_trimmed_and_counted() -> None:
    old = "".join(f"{i}\n" for i in range(100))
    out = regions.trimmed_diff(old, "", "a", "b", limit=10)
    assert len(out.splitlines()) == 11 and out.endswith("... (93 more diff lines)\n")
