"""keyword-rename's text-level edit (``kinds/kwline.py``, issue 39's start-up time) must do exactly
what the libcst rewrite does wherever it answers, and leave every other shape to libcst."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.patchsets.kinds import calls, kwline
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.keyword_rename import KeywordRename
from patchctl.patchsets.loader import builtin_dir, load_patchset

KIND = KeywordRename()
RENAME = load_patchset(builtin_dir() / "uky").get("vllm-enable-log-requests")
CTX = Context(Path("."), "mod.py")
OLD = "disable_log_requests"


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """The edit with the text-level path, and with libcst alone."""
    fast = KIND.apply(text, RENAME, CTX)
    with monkeypatch.context() as m:
        m.setattr(kwline, "rename_on_its_line", lambda *a, **k: None)
        slow = KIND.apply(text, RENAME, CTX)
    return fast, slow


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.6.0", "0.6.1"])
def test_the_records_edit_on_real_releases_never_imports_libcst(
    version: str, release_tree: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = RENAME.target[0]
    text = (release_tree(version) / path).read_text(encoding="utf-8")
    ctx = Context(Path("."), path)
    with monkeypatch.context() as m:
        m.setattr(calls, "rewrite_site", lambda *a, **k: pytest.fail("libcst was used"))
        fast = KIND.apply(text, RENAME, ctx)
    assert fast.status is EditStatus.CHANGED
    with monkeypatch.context() as m:
        m.setattr(kwline, "rename_on_its_line", lambda *a, **k: None)
        slow = KIND.apply(text, RENAME, ctx)
    assert fast == slow


ARG = st.tuples(
    st.sampled_from(["=", " = ", "= ", " ="]),
    st.sampled_from(["engine_args.disable_log_requests", "engine_args . disable_log_requests"]),
    st.sampled_from(["", ",", " ,", ",)", ")"]),
    st.sampled_from(["", " ", "\t", "  # mine"]),
)


@settings(max_examples=int(__import__("os").environ.get("PATCHCTL_TEST_EXAMPLES", "300")), deadline=None)
@given(
    indent=st.sampled_from(["", "    ", "        ", "\t"]),
    opener=st.sampled_from(["(\n", "(  \n", "(  # why\n", "(a,\n", "(a, \n", "(\n\n", "(a, "]),
    arg=ARG,
    after=st.sampled_from(["", "    c=1,\n", "\n"]),
    eol=st.sampled_from(["\n", "\r\n"]),
)
def test_text_and_libcst_agree_wherever_the_text_path_answers(
    indent: str, opener: str, arg: tuple[str, str, str, str], after: str, eol: str
) -> None:
    equal, value, tail, trailing = arg
    body = f"{indent}    {OLD}{equal}{value}{tail}{trailing}{eol}"
    closer = "" if ")" in tail else f"{indent}){eol}"
    head = f"def f():\n{indent}x = AsyncLLM.from_vllm_config{opener}".replace("\n", eol)
    text = head + body + after.replace("\n", eol) + closer
    try:
        compile(text, "t.py", "exec")
    except SyntaxError:
        return
    fast = KIND.apply(text, RENAME, CTX)
    orig = kwline.rename_on_its_line
    kwline.rename_on_its_line = lambda *a, **k: None  # type: ignore[assignment]
    try:
        slow = KIND.apply(text, RENAME, CTX)
    finally:
        kwline.rename_on_its_line = orig  # type: ignore[assignment]
    assert fast == slow
