"""capture's proof blames patches by name and cause: the engine's outcome, or where the text departs."""

from __future__ import annotations

from pathlib import Path

from patchctl.capture import proof
from patchctl.patchsets.loader import load_patchset
from patchctl.target import Target

BASE = "import os\n\nx = 1\n"
MANIFEST = """
[patchset]
name = "p"
tag = "Uky"

[[patch]]
id = "head"
title = "t"
why = "w"
kind = "prelude"
target = ["m.py"]
[patch.params]
block = "A = 1  # Uky"

[[patch]]
id = "rename"
title = "t"
why = "w"
kind = "keyword-rename"
target = ["m.py"]
[patch.params]
call = "f"
old_keyword = "a"
new_keyword = "b"
new_value = "1"
"""


def setup(tmp_path: Path) -> tuple[Target, object]:
    root = tmp_path / "base"
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")
    (root / "m.py").write_text(BASE)
    (tmp_path / "ps").mkdir()
    (tmp_path / "ps" / "patchset.toml").write_text(MANIFEST)
    return Target(root, None, str(root), None, False), load_patchset(tmp_path / "ps")


def test_a_patch_that_does_not_apply_is_blamed_with_the_engines_reason(tmp_path: Path) -> None:
    target, patchset = setup(tmp_path)
    head = "A = 1  # Uky\n\n" + BASE  # prelude leaves a blank line before the imports
    blamed = proof.blame(patchset, target, {"m.py": head}, {"head": ("m.py", head), "rename": ("m.py", BASE)})
    assert [(b.patch, b.cause) for b in blamed] == [
        ("rename", "applied to BASE it ends not-applicable: no call to f(...) in m.py")
    ]


def test_a_patch_that_writes_other_text_is_blamed_with_the_first_different_line(tmp_path: Path) -> None:
    target, patchset = setup(tmp_path)
    fork = "A = 2  # Uky\n" + BASE
    blamed = proof.blame(patchset, target, {"m.py": fork}, {"head": ("m.py", fork)})
    assert [(b.patch, b.path, b.cause) for b in blamed] == [
        ("head", "m.py", "applied alone to BASE it writes line 1 as 'A = 1  # Uky' where the fork has 'A = 2  # Uky'")
    ]


def test_a_proven_patchset_blames_nothing(tmp_path: Path) -> None:
    target, _patchset = setup(tmp_path)
    head = "A = 1  # Uky\n\n" + BASE  # prelude leaves a blank line before the imports
    (tmp_path / "ps" / "patchset.toml").write_text(MANIFEST.split('[[patch]]\nid = "rename"')[0])
    assert proof.blame(load_patchset(tmp_path / "ps"), target, {"m.py": head}, {"head": ("m.py", head)}) == []
