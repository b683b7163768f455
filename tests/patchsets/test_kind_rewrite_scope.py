"""keyword-rename and prelude let libcst see only part of a module (speed); the result must be
byte-identical to rewriting the whole module, wherever the call or the imports sit."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.calls import rewrite_call as _rewrite_call
from patchctl.patchsets.kinds.calls import sites as _sites
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import parse_ast, parse_module

RAW = {"call": "make", "old_keyword": "quiet", "new_keyword": "verbose", "new_value": "not args.quiet"}
CTX = Context(Path("."), "m.py")

CASES = {
    "module level": "x = make(\n    a=1,\n    quiet=args.quiet,\n)\n",
    "in a method, after other calls": (
        "class A:\n    def f(self):\n        make(a=0)\n        try:\n            y = make(\n"
        "                a=1,\n                quiet=args.quiet,  \n            )\n"
        "        except E:\n            pass\n"
    ),
    "decorated, CRLF": "@deco\ndef g():\r\n    return make(\r\n        quiet=args.quiet,\r\n    )\r\n",
    "shares a line": "import os; z = make(\n    quiet=args.quiet,\n)\n",
    "no final newline": "def h():\n    return make(\n        quiet=args.quiet,\n    )",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_statement_rewrite_equals_whole_module_rewrite(name: str) -> None:
    text = CASES[name]
    kind = KINDS["keyword-rename"]
    patch = Patch(
        "p", "t", "w", "Uky", "keyword-rename", ("m.py",), kind.parse_params(dict(RAW), Path("."), Path("x"), "p")
    )
    edit = kind.apply(text, patch, CTX)
    assert edit.status is EditStatus.CHANGED, edit.reason
    site = next(s for s in _sites(parse_ast(text, "m.py"), "make", "quiet") if s.keyword)
    problem: list[str] = []
    module = parse_module(text, "m.py")
    whole = _rewrite_call(module, "make", site.rank, lambda call: kind._forward(module, call, patch, problem)).code
    assert edit.text == whole
    assert kind.revert(edit.text, patch, CTX).text == text


def test_prelude_on_the_head_equals_the_whole_module() -> None:
    kind = KINDS["prelude"]
    patch = Patch(
        "p",
        "t",
        "w",
        "Uky",
        "prelude",
        ("m.py",),
        kind.parse_params({"block": "# Uky: first\nimport os  # Uky"}, Path("."), Path("x"), "p"),
    )
    text = '"""Doc."""\n# header\n\nfrom __future__ import annotations\n\nimport sys\n\n\ndef f():\n    return 1\n'
    edit = kind.apply(text, patch, CTX)
    assert edit.text == (
        '"""Doc."""\n# header\n\nfrom __future__ import annotations\n\n# Uky: first\nimport os  # Uky\n'
        "\nimport sys\n\n\ndef f():\n    return 1\n"
    )
    assert kind.revert(edit.text, patch, CTX).text == text
