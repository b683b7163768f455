"""keyword-value: before/after pairs, the round trip revert(apply(x)) == x, and the checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.errors import ManifestError, SourceSyntaxError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch, Presence

KIND = KINDS["keyword-value"]
CTX = Context(Path("."), "mod.py")


def patch(**params: object) -> Patch:
    raw = {
        "keyword": "attn_implementation",
        "calls": ["AutoConfig.from_pretrained"],
        "old_value": '"flash_attention_2"',
        "value": 'os.environ.get("ATTN", "sdpa")',
        **params,
    }
    parsed = KIND.parse_params({k: v for k, v in raw.items() if v is not None}, Path("."), Path("patchset.toml"), "p")
    return Patch("p", "t", "w", "compat", "keyword-value", ("mod.py",), parsed)


BEFORE = """import os

cfg = AutoConfig.from_pretrained(
    path,
    attn_implementation="flash_attention_2",
    trust_remote_code=True,
)
o = AutoConfig.from_pretrained(path, trust_remote_code=t, attn_implementation="flash_attention_2")
keep = AutoConfig.from_pretrained(path, attn_implementation="eager")
"""
AFTER = """import os

cfg = AutoConfig.from_pretrained(
    path,
    # attn_implementation="flash_attention_2",  # compat
    attn_implementation=os.environ.get("ATTN", "sdpa"),  # compat
    trust_remote_code=True,
)
# o = AutoConfig.from_pretrained(path, trust_remote_code=t, attn_implementation="flash_attention_2")  # compat
o = AutoConfig.from_pretrained(path, trust_remote_code=t, attn_implementation=os.environ.get("ATTN", "sdpa"))  # compat
keep = AutoConfig.from_pretrained(path, attn_implementation="eager")
"""


def test_set_on_own_line_and_shared_line() -> None:
    p = patch()
    edit = KIND.apply(BEFORE, p, CTX)
    assert edit.status is EditStatus.CHANGED, edit.reason
    assert edit.text == AFTER
    assert "lines 5, 8" in edit.reason.replace("line(s)", "lines")


def test_round_trip_and_check() -> None:
    p = patch()
    after = KIND.apply(BEFORE, p, CTX).text
    assert after is not None
    found = KIND.check(after, p, CTX)
    assert found.presence is Presence.PRESENT
    assert found.owned_lines == frozenset({5, 6, 9, 10})
    assert KIND.revert(after, p, CTX).text == BEFORE
    assert KIND.check(BEFORE, p, CTX).presence is Presence.MISSING


def test_remove_keeps_a_tagged_comment() -> None:
    p = patch(keyword="position_ids", calls=["self.module.generate"], action="remove", old_value=None, value=None)
    before = "out = self.module.generate(\n    input_ids=idx,\n    position_ids=position_ids,\n    do_sample=True,\n)\n"
    after = (
        "out = self.module.generate(\n    input_ids=idx,\n    # position_ids=position_ids,  # compat\n"
        "    do_sample=True,\n)\n"
    )
    edit = KIND.apply(before, p, CTX)
    assert edit.text == after
    assert KIND.check(after, p, CTX).presence is Presence.PRESENT
    assert KIND.revert(after, p, CTX).text == before


def test_remove_refuses_a_shared_line() -> None:
    p = patch(keyword="position_ids", calls=["gen"], action="remove", old_value=None, value=None)
    edit = KIND.apply("gen(a=1, position_ids=p)\n", p, CTX)
    assert edit.status is EditStatus.CONFLICT
    assert "shares its line" in edit.reason


def test_dict_display_entry() -> None:
    p = patch(keyword="num_return_sequences", calls=None, dicts=["kwargs"], old_value="self.config.n", value="1")
    before = (
        'if x:\n    kwargs = {"num_return_sequences": 1}\nelse:\n    kwargs = {\n        "do_sample": True,\n'
        '        "num_return_sequences": self.config.n,\n    }\n'
    )
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.CHANGED
    assert (
        '        # "num_return_sequences": self.config.n,  # compat\n        "num_return_sequences": 1,  # compat\n'
        in str(edit.text)
    )
    assert '    kwargs = {"num_return_sequences": 1}\n' in str(edit.text)  # old_value filters: untouched
    assert KIND.revert(str(edit.text), p, CTX).text == before


def test_parenthesised_dict_value() -> None:
    p = patch(keyword="n", calls=None, dicts=["kw"], old_value="(self.n)", value="1")
    before = 'kw = {\n    "n": (self.n),\n}\n'
    edit = KIND.apply(before, p, CTX)
    assert edit.text == 'kw = {\n    # "n": (self.n),  # compat\n    "n": 1,  # compat\n}\n'


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_line_endings_and_last_line_without_newline(newline: str) -> None:
    p = patch()
    before = newline.join(
        ["import os", "c = AutoConfig.from_pretrained(", '    attn_implementation="flash_attention_2")']
    )
    edit = KIND.apply(before, p, CTX)
    assert edit.status is EditStatus.CHANGED
    assert not str(edit.text).endswith(newline)
    assert KIND.revert(str(edit.text), p, CTX).text == before


def test_non_ascii_before_the_site() -> None:
    p = patch()
    before = 'x = AutoConfig.from_pretrained("模型", attn_implementation="flash_attention_2")\n'
    after = str(KIND.apply(before, p, CTX).text)
    assert 'from_pretrained("模型", attn_implementation=os.environ.get("ATTN", "sdpa"))  # compat' in after
    assert KIND.revert(after, p, CTX).text == before


def test_not_applicable_and_modified() -> None:
    p = patch()
    assert KIND.apply("x = 1\n", p, CTX).status is EditStatus.NOT_APPLICABLE
    after = str(KIND.apply(BEFORE, p, CTX).text)
    edited = after.replace('os.environ.get("ATTN", "sdpa"),  # compat', '"eager",  # compat')
    assert KIND.check(edited, p, CTX).presence is Presence.MODIFIED
    assert KIND.revert(edited, p, CTX).status is EditStatus.CONFLICT
    # a site left unpatched next to a patched one is not "present"
    lines = after.splitlines(keepends=True)
    half = "".join([*lines[:8], BEFORE.splitlines(keepends=True)[7], *lines[10:]])
    assert 'o = AutoConfig.from_pretrained(path, trust_remote_code=t, attn_implementation="flash' in half
    assert KIND.check(half, p, CTX).presence is Presence.MODIFIED


def test_syntax_error_names_the_file() -> None:
    with pytest.raises(SourceSyntaxError, match=r"mod.py:1"):
        KIND.apply("def (:\n", patch(), CTX)


def test_manifest_errors() -> None:
    with pytest.raises(ManifestError, match=r"params.calls"):
        KIND.parse_params({"keyword": "k", "value": "1"}, Path("."), Path("patchset.toml"), "p")
    with pytest.raises(ManifestError, match=r"params.value"):
        KIND.parse_params({"keyword": "k", "calls": ["f"]}, Path("."), Path("patchset.toml"), "p")
    with pytest.raises(ManifestError, match="not a Python expression"):
        KIND.parse_params({"keyword": "k", "calls": ["f"], "value": "1 +"}, Path("."), Path("patchset.toml"), "p")
