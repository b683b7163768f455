"""prelude's text-level insertion (``kinds/preludeline.py``, issue 39's start-up time) must give
exactly what the libcst insertion gives wherever it answers: checked on every module of the
cached verl releases and on generated layouts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.patchsets.kinds import calls, preludeline
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.prelude import Prelude
from patchctl.patchsets.loader import builtin_dir, load_patchset

KIND = Prelude()
STUBS = load_patchset(builtin_dir() / "uky").get("triton-cuda-stubs")
BLOCKS = [
    STUBS.params.block,
    "import os\nos.environ.setdefault('X', '1')  # Uky\n",
    "# Uky: why\ntry:\n    import a\nexcept ImportError:\n    a = None\n\n\n",
    "if True:\n  x = 1  # two-space body\n",
]


def _libcst_only(monkeypatch: pytest.MonkeyPatch, text: str, patch: object, ctx: Context) -> object:
    with monkeypatch.context() as m:
        m.setattr(preludeline, "insert", lambda *a, **k: None)
        return KIND.apply(text, patch, ctx)  # type: ignore[arg-type]


def _patch(block: str) -> object:
    import dataclasses

    return dataclasses.replace(STUBS, params=dataclasses.replace(STUBS.params, block=block))


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.0", "0.6.1"])
def test_every_verl_module_gets_what_libcst_gives(
    version: str, release_tree: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = release_tree(version)
    taken = 0
    for path in sorted((root / "verl").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = str(path.relative_to(root))
        for block in BLOCKS[:2]:
            patch = _patch(block)
            fast = KIND.apply(text, patch, Context(root, rel))  # type: ignore[arg-type]
            slow = _libcst_only(monkeypatch, text, patch, Context(root, rel))
            assert fast == slow, rel
            taken += fast.status is EditStatus.CHANGED  # type: ignore[attr-defined]
    assert taken > 200  # the text path answered for most modules, not only the easy few


@pytest.mark.slow
def test_the_records_block_on_its_file_never_imports_libcst(
    release_tree: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = release_tree("0.6.1")
    rel = STUBS.target[0]
    text = (root / rel).read_text(encoding="utf-8")
    monkeypatch.setattr(calls, "rewrite_site", lambda *a, **k: pytest.fail("libcst"))
    import builtins

    real = builtins.__import__

    def guard(name: str, *args: object, **kwargs: object) -> object:
        assert not name.startswith("libcst"), "libcst was imported"
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", guard)
    assert KIND.apply(text, STUBS, Context(root, rel)).status is EditStatus.CHANGED


LINES = st.lists(st.sampled_from(["\n", "   \n", "# a comment\n", "#\n"]), max_size=4)


@settings(max_examples=int(os.environ.get("PATCHCTL_TEST_EXAMPLES", "300")), deadline=None)
@given(
    head=st.sampled_from(
        ['"""Doc."""\n', '"""Doc.\n\nMore.\n"""\n', "from __future__ import annotations\n", "X = 1\n"]
    ),
    above=LINES,
    gap=LINES,
    imp=st.sampled_from(["import os\n", "from a import (\n    b,\n)\n", "import os  # why\n", "import os; x = 1\n"]),
    block=st.sampled_from(BLOCKS),
)
def test_generated_layouts_agree(head: str, above: list[str], gap: list[str], imp: str, block: str) -> None:
    text = "".join(above) + head + "".join(gap) + imp + "\ny = 2\n"
    patch = _patch(block)
    fast = KIND.apply(text, patch, Context(Path("."), "m.py"))  # type: ignore[arg-type]
    original = preludeline.insert
    preludeline.insert = lambda *a, **k: None  # type: ignore[assignment]
    try:
        slow = KIND.apply(text, patch, Context(Path("."), "m.py"))  # type: ignore[arg-type]
    finally:
        preludeline.insert = original  # type: ignore[assignment]
    assert fast == slow
