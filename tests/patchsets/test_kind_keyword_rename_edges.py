"""keyword-rename's refusals and edges: each test here failed on a mutant that the before/after
pairs and properties of test_kinds_python.py let through (#18, req. 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.keyword_rename import KeywordRename
from patchctl.patchsets.loader import builtin_dir, load_patchset
from patchctl.patchsets.model import Presence

KIND = KeywordRename()
RENAME = load_patchset(builtin_dir() / "uky").get("vllm-enable-log-requests")
CTX = Context(Path("."), "mod.py")
OLD = "disable_log_requests=engine_args.disable_log_requests"
NEW = "enable_log_requests=engine_args.enable_log_requests"


def call(*args: str) -> str:
    return "x = AsyncLLM.from_vllm_config(\n" + "".join(f"    {a}\n" for a in args) + ")\n"


PARAMS = {"call": "f", "old_keyword": "a", "new_keyword": "b", "new_value": "1"}


@pytest.mark.parametrize("missing", ["call", "old_keyword", "new_keyword", "new_value"])
def test_each_required_param_is_a_manifest_error(tmp_path: Path, missing: str) -> None:
    params = "".join(f'{k} = "{v}"\n' for k, v in PARAMS.items() if k != missing)
    (tmp_path / "patchset.toml").write_text(
        '[patchset]\nname = "s"\ntag = "Uky"\n\n[[patch]]\nid = "p"\ntitle = "t"\nwhy = "w"\n'
        f'kind = "keyword-rename"\ntarget = ["m.py"]\n[patch.params]\n{params}'
    )
    with pytest.raises(ManifestError, match=f"params.{missing}"):
        load_patchset(tmp_path)


def test_a_new_value_that_is_not_an_expression_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="new_value"):
        KIND.parse_params({**PARAMS, "new_value": "engine_args."}, tmp_path, tmp_path / "patchset.toml", "p")


def test_it_never_creates_its_target() -> None:
    assert KeywordRename.creates_target is False


def test_a_missing_file_is_missing_everywhere() -> None:
    assert KIND.check(None, RENAME, CTX).presence is Presence.MISSING
    assert KIND.apply(None, RENAME, CTX).status is EditStatus.NOT_APPLICABLE
    assert KIND.revert(None, RENAME, CTX).reason == "mod.py does not exist"


def test_no_call_at_all_is_named() -> None:
    edit = KIND.apply("x = 1\n", RENAME, CTX)
    assert (edit.status, edit.reason) == (
        EditStatus.NOT_APPLICABLE,
        "no call to AsyncLLM.from_vllm_config(...) in mod.py",
    )


def test_upstreams_own_untagged_new_keyword_is_not_the_patch() -> None:
    assert KIND.check(call("c,", NEW + ","), RENAME, CTX).presence is Presence.MISSING


def test_a_tagged_new_keyword_with_another_value_is_modified_and_says_so() -> None:
    text = call("c,", f"# {OLD}, # Uky", "enable_log_requests=True, # Uky")
    found = KIND.check(text, RENAME, CTX)
    assert found.presence is Presence.MODIFIED
    assert found.reason.endswith("enable_log_requests=True (expected engine_args.enable_log_requests)")
    # both of the patch's lines are still its own: verify listed the commented original as a stray tag
    assert found.owned_lines == {3, 4}


def test_a_modified_rename_without_its_commented_original_owns_only_its_line() -> None:
    text = call("c,", "# something else, # Uky", "enable_log_requests=True, # Uky")
    assert KIND.check(text, RENAME, CTX).owned_lines == {4}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (OLD + ")", "shares a line with other arguments"),
        (OLD + ",  # mine", "carries a comment (# mine)"),
    ],
)
def test_apply_refuses_a_keyword_it_cannot_rewrite_alone(line: str, why: str) -> None:
    text = "x = AsyncLLM.from_vllm_config(\n    c,\n    " + line + "\n" + ("" if line.endswith(")") else ")\n")
    edit = KIND.apply(text, RENAME, CTX)
    assert edit.status is EditStatus.CONFLICT and why in edit.reason and edit.text is None


def test_revert_of_two_patched_calls_is_ambiguous() -> None:
    one = call("c,", f"# {OLD}, # Uky", f"{NEW}, # Uky")
    edit = KIND.revert(one + one, RENAME, CTX)
    assert edit.status is EditStatus.AMBIGUOUS and "lines 1, 6" in edit.reason


def test_revert_refuses_a_comma_the_two_lines_disagree_on() -> None:
    edit = KIND.revert(call("c,", f"# {OLD}, # Uky", f"{NEW} # Uky"), RENAME, CTX)
    assert edit.status is EditStatus.CONFLICT and "disagree on a trailing comma" in edit.reason


@pytest.mark.parametrize(
    "before",
    [
        call("c,", "# the user's own note", OLD + ","),
        call("c,", OLD + ",  "),  # trailing spaces
    ],
)
def test_the_round_trip_keeps_the_users_lines_and_spacing(before: str) -> None:
    edit = KIND.apply(before, RENAME, CTX)
    assert edit.status is EditStatus.CHANGED
    assert KIND.revert(edit.text, RENAME, CTX).text == before
