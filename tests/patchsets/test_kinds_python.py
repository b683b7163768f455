"""The Python codemods: before/after pairs and properties over generated modules."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.keyword_rename import KeywordRename
from patchctl.patchsets.kinds.keyword_rename import Params as KwParams
from patchctl.patchsets.kinds.prelude import Params as PreludeParams
from patchctl.patchsets.kinds.prelude import Prelude
from patchctl.patchsets.loader import builtin_dir, load_patchset
from patchctl.patchsets.model import Patch, Presence

UKY = load_patchset(builtin_dir() / "uky")
RENAME = UKY.get("vllm-enable-log-requests")
STUBS = UKY.get("triton-cuda-stubs")
CTX = Context(Path("."), "mod.py")


def test_keyword_rename_before_after() -> None:
    before = (
        "def start(engine_args, cfg):\n"
        "    client = AsyncLLM.from_vllm_config(\n"
        "        vllm_config=cfg,\n"
        "        disable_log_requests=engine_args.disable_log_requests,\n"
        "        disable_log_stats=engine_args.disable_log_stats,\n"
        "    )\n"
    )
    after = (
        "def start(engine_args, cfg):\n"
        "    client = AsyncLLM.from_vllm_config(\n"
        "        vllm_config=cfg,\n"
        "        # disable_log_requests=engine_args.disable_log_requests, # Uky\n"
        "        enable_log_requests=engine_args.enable_log_requests, # Uky\n"
        "        disable_log_stats=engine_args.disable_log_stats,\n"
        "    )\n"
    )
    edit = KeywordRename().apply(before, RENAME, CTX)
    assert edit.status is EditStatus.CHANGED and edit.text == after
    assert KeywordRename().check(after, RENAME, CTX).owned_lines == {4, 5}
    assert KeywordRename().revert(after, RENAME, CTX).text == before


def test_keyword_rename_owns_only_a_tagged_commented_out_old_keyword() -> None:
    """An untagged comment is the user's: reverting would turn it back into code (#18 audit)."""
    text = (
        "client = AsyncLLM.from_vllm_config(\n"
        "    vllm_config=cfg,\n"
        "    # disable_log_requests=engine_args.disable_log_requests,\n"
        "    enable_log_requests=engine_args.enable_log_requests, # Uky\n"
        ")\n"
    )
    found = KeywordRename().check(text, RENAME, CTX)
    assert found.presence is Presence.MODIFIED
    assert "the commented-out `disable_log_requests=...` line above it is missing" in found.reason
    edit = KeywordRename().revert(text, RENAME, CTX)
    assert edit.status is EditStatus.NOT_APPLICABLE and edit.text is None
    tagged = text.replace("engine_args.disable_log_requests,\n", "engine_args.disable_log_requests, # Uky\n")
    assert KeywordRename().check(tagged, RENAME, CTX).presence is Presence.PRESENT


def test_keyword_rename_last_argument_without_comma() -> None:
    before = "x = AsyncLLM.from_vllm_config(\n    c,\n    disable_log_requests=engine_args.disable_log_requests\n)\n"
    edit = KeywordRename().apply(before, RENAME, CTX)
    assert edit.text == (
        "x = AsyncLLM.from_vllm_config(\n    c,\n"
        "    # disable_log_requests=engine_args.disable_log_requests # Uky\n"
        "    enable_log_requests=engine_args.enable_log_requests # Uky\n)\n"
    )
    assert KeywordRename().revert(edit.text, RENAME, CTX).text == before


def test_keyword_rename_refuses_arguments_sharing_a_line() -> None:
    src = "x = AsyncLLM.from_vllm_config(c, disable_log_requests=engine_args.disable_log_requests)\n"
    edit = KeywordRename().apply(src, RENAME, CTX)
    assert edit.status is EditStatus.CONFLICT
    assert "shares a line with other arguments" in edit.reason


def test_prelude_before_after_with_future_import() -> None:
    before = '"""Doc."""\nfrom __future__ import annotations\n\nimport sys\n'
    edit = Prelude().apply(before, STUBS, CTX)
    block = STUBS.params.block
    assert edit.text == f'"""Doc."""\nfrom __future__ import annotations\n\n{block}\n\nimport sys\n'
    assert Prelude().revert(edit.text, STUBS, Context(Path("."), "mod.py", edit.undo)).text == before


def test_prelude_not_applicable_without_imports() -> None:
    edit = Prelude().apply("x = 1\n", STUBS, CTX)
    assert edit.status is EditStatus.NOT_APPLICABLE
    assert "no top-level import" in edit.reason


# -- properties over generated modules --------------------------------------------------------

names = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])
indents = st.sampled_from(["    ", "  ", "\t"])


@st.composite
def modules_with_call(draw: st.DrawFn) -> str:
    indent = draw(indents)
    depth = draw(st.integers(1, 3))
    others = draw(st.lists(names, min_size=0, max_size=4, unique=True))
    pos = draw(st.integers(0, len(others)))
    args = [f"{n}={n}_value," for n in others]
    args.insert(pos, "disable_log_requests=engine_args.disable_log_requests,")
    trailing_comma = draw(st.booleans())
    if not trailing_comma and pos == len(args) - 1:
        args[-1] = args[-1].rstrip(",")
    head = draw(st.sampled_from(["", '"""Module."""\n', "# header\n\n"]))
    lines = [head + "import os\n", "\n"]
    prefix = ""
    for d in range(depth):
        lines.append(f"{prefix}def f{d}(engine_args):\n")
        prefix += indent
    lines.append(f"{prefix}client = AsyncLLM.from_vllm_config(\n")
    lines += [f"{prefix}{indent}{a}\n" for a in args]
    lines.append(f"{prefix})\n")
    lines.append(f"{prefix}return client\n")
    return "".join(lines)


@settings(max_examples=60, deadline=None)
@given(modules_with_call())
def test_keyword_rename_properties(src: str) -> None:
    kind = KeywordRename()
    edit = kind.apply(src, RENAME, CTX)
    assert edit.status is EditStatus.CHANGED
    ast.parse(edit.text)  # output parses
    assert kind.check(edit.text, RENAME, CTX).presence is Presence.PRESENT
    assert kind.apply(edit.text, RENAME, CTX).status is EditStatus.NOT_APPLICABLE  # nothing left to rename
    assert kind.revert(edit.text, RENAME, CTX).text == src


@st.composite
def modules_with_imports(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append("# Copyright header\n# more header\n")
        parts.append("\n" * draw(st.integers(0, 2)))
    if draw(st.booleans()):
        parts.append('"""Docstring\n\nspanning lines.\n"""\n')
        parts.append("\n" * draw(st.integers(0, 2)))
    if draw(st.booleans()):
        parts.append("from __future__ import annotations\n")
        parts.append("\n" * draw(st.integers(0, 2)))
    if draw(st.booleans()):
        parts.append("# a comment on the import\n")
    for n in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
        parts.append(f"import {n}\n")
    if draw(st.booleans()):
        parts.append("\n\ndef main():\n    return 1\n")
    return "".join(parts)


@settings(max_examples=80, deadline=None)
@given(modules_with_imports())
def test_prelude_properties(src: str) -> None:
    kind = Prelude()
    edit = kind.apply(src, STUBS, CTX)
    assert edit.status is EditStatus.CHANGED
    ast.parse(edit.text)
    found = kind.check(edit.text, STUBS, CTX)
    assert found.presence is Presence.PRESENT
    block_lines = STUBS.params.block.splitlines()
    lines = edit.text.splitlines()
    first = min(found.owned_lines)
    assert lines[first - 1 : first - 1 + len(block_lines)] == block_lines  # byte-exact block
    assert lines[first - 1 + len(block_lines)] == ""  # one blank line after
    if first > 1:
        assert lines[first - 2] == ""  # and one before
    assert kind.revert(edit.text, STUBS, Context(Path("."), "mod.py", edit.undo)).text == src


def _patch(kind: str, params: object) -> Patch:
    return Patch("p", "t", "w", "Uky", kind, ("mod.py",), params)


def test_prelude_params_from_other_blocks() -> None:
    patch = _patch("prelude", PreludeParams("# Uky: hello\nimport sys  # Uky"))
    edit = Prelude().apply('"""D."""\nimport os\n', patch, CTX)
    assert edit.text == '"""D."""\n\n# Uky: hello\nimport sys  # Uky\n\nimport os\n'


def test_keyword_rename_old_value_conflict() -> None:
    patch = _patch("keyword-rename", KwParams("f", "a", "b", "1", "0"))
    edit = KeywordRename().apply("f(\n    a=2,\n)\n", patch, CTX)
    assert edit.status is EditStatus.CONFLICT
    assert "a=2, the patch expects a=0" in edit.reason
