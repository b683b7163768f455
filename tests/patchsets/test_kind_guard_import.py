"""guard-import: before/after pairs, the round trip and the scope rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch, Presence

KIND = KINDS["guard-import"]
CTX = Context(Path("."), "mod.py")


def patch(**params: str) -> Patch:
    parsed = KIND.parse_params({"module": "flash_attn.bert_padding", **params}, Path("."), Path("patchset.toml"), "p")
    return Patch("p", "t", "w", "compat", "guard-import", ("mod.py",), parsed)


BEFORE = """import torch

if is_cuda_available:
    from flash_attn.bert_padding import pad_input, unpad_input
elif is_npu_available:
    from other import pad_input


def f():
    from flash_attn.bert_padding import pad_input  # inside a function: left alone
"""
AFTER = """import torch

if is_cuda_available:
    try:  # compat
        from flash_attn.bert_padding import pad_input, unpad_input  # compat
    except ImportError:  # compat
        pass  # compat
elif is_npu_available:
    from other import pad_input


def f():
    from flash_attn.bert_padding import pad_input  # inside a function: left alone
"""


def test_apply_check_revert() -> None:
    p = patch()
    edit = KIND.apply(BEFORE, p, CTX)
    assert edit.status is EditStatus.CHANGED, edit.reason
    assert edit.text == AFTER
    found = KIND.check(AFTER, p, CTX)
    assert found.presence is Presence.PRESENT
    assert found.owned_lines == frozenset({4, 5, 6, 7})
    assert KIND.revert(AFTER, p, CTX).text == BEFORE
    assert KIND.check(BEFORE, p, CTX).presence is Presence.MISSING


def test_top_level_import_with_fallback_and_no_final_newline() -> None:
    p = patch(fallback="pad_input = None\nunpad_input = None", exception="ModuleNotFoundError")
    before = "import os\nimport flash_attn.bert_padding"
    after = (
        "import os\ntry:  # compat\n    import flash_attn.bert_padding  # compat\n"
        "except ModuleNotFoundError:  # compat\n    pad_input = None  # compat\n    unpad_input = None  # compat"
    )
    edit = KIND.apply(before, p, CTX)
    assert edit.text == after
    assert KIND.check(after, p, CTX).presence is Presence.PRESENT
    assert KIND.revert(after, p, CTX).text == before


def test_already_guarded_upstream_is_not_applicable() -> None:
    text = "try:\n    from flash_attn.bert_padding import pad_input\nexcept ImportError:\n    pass\n"
    assert KIND.apply(text, patch(), CTX).status is EditStatus.NOT_APPLICABLE


def test_multi_line_import_is_a_conflict() -> None:
    text = "from flash_attn.bert_padding import (\n    pad_input,\n)\n"
    edit = KIND.apply(text, patch(), CTX)
    assert edit.status is EditStatus.CONFLICT
    assert "spans several lines" in edit.reason


def test_hand_edit_is_modified() -> None:
    """The tagged lines are there but do not survive the round trip: modified (linerewrite's
    contract), and revert refuses rather than leave the edit behind with the record gone."""
    edited = AFTER.replace("        pass  # compat", "        raise  # compat")
    assert KIND.check(edited, patch(), CTX).presence is Presence.MODIFIED
    assert KIND.revert(edited, patch(), CTX).status is EditStatus.CONFLICT


def test_tabs_are_kept() -> None:
    before = "if x:\n\tfrom flash_attn.bert_padding import pad_input\n"
    after = str(KIND.apply(before, patch(), CTX).text)
    assert "\ttry:  # compat\n\t\tfrom flash_attn" in after
    assert KIND.revert(after, patch(), CTX).text == before


def test_bad_fallback() -> None:
    with pytest.raises(ManifestError, match=r"params.fallback"):
        KIND.parse_params({"module": "m", "fallback": "    pass"}, Path("."), Path("patchset.toml"), "p")
    with pytest.raises(ManifestError, match="not valid Python"):
        KIND.parse_params({"module": "m", "fallback": "x ="}, Path("."), Path("patchset.toml"), "p")
