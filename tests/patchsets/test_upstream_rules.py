"""Upstream rules: ``call-keyword`` looks at the call a keyword-rename edits, not at the whole file (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import RELEASES

from patchctl.errors import ManifestError
from patchctl.patchsets import upstream
from patchctl.patchsets.loader import load_patchset, load_patchsets

VLLM = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
ENGINE = "verl/workers/engine/fsdp/transformer_impl.py"
RULE = upstream.make_rule(
    {
        "kind": "call-keyword",
        "call": "AsyncLLM.from_vllm_config",
        "old_keyword": "disable_log_requests",
        "new_keyword": "enable_log_requests",
    }
)
DTYPE = upstream.make_rule(
    {"kind": "call-keyword", "call": "auto_class.from_pretrained", "old_keyword": "torch_dtype", "new_keyword": "dtype"}
)


def find(rule: upstream.UpstreamRule, text: str) -> str | None:
    return upstream.find(rule, "m.py", lambda rel: text if rel == "m.py" else None, "Uky")


@pytest.mark.parametrize(
    "text",
    [
        "e = AsyncLLM.from_vllm_config(c, enable_log_requests=True)\n",
        "e = AsyncLLM.from_vllm_config(c, **{'enable_log_requests': True})\n",
        "e = AsyncLLM.from_vllm_config(c, **dict(enable_log_requests=True))\n",
        "def run():\n    kw = {'enable_log_requests': True}\n    e = AsyncLLM.from_vllm_config(c, **kw)\n",
        "def run():\n    kw = {}\n    if ok:\n        kw['enable_log_requests'] = True\n"
        "    AsyncLLM.from_vllm_config(c, **kw)\n",
        "def run():\n    kw = {}\n    kw.update(enable_log_requests=True)\n    AsyncLLM.from_vllm_config(c, **kw)\n",
        "def run():\n    kw = {}\n    kw |= {'enable_log_requests': True}\n    AsyncLLM.from_vllm_config(c, **kw)\n",
        "def run():\n    kw = {}\n    kw.setdefault('enable_log_requests', True)\n"
        "    AsyncLLM.from_vllm_config(c, **kw)\n",
    ],
)
def test_the_call_passing_the_new_keyword_is_superseded(text: str) -> None:
    said = find(RULE, text)
    assert said is not None and said.startswith("upstream's AsyncLLM.from_vllm_config(...) at m.py:")
    assert "no disable_log_requests=" in said


@pytest.mark.parametrize(
    "text, why",
    [
        (
            "e = AsyncLLM.from_vllm_config(c)\nenable_log_requests = True\nf(enable_log_requests=1)\n",
            "the name elsewhere in the file is not the call",
        ),
        (
            "e = AsyncLLM.from_vllm_config(c, disable_log_requests=d, enable_log_requests=e)\n",
            "the call still passes the old keyword",
        ),
        (
            "AsyncLLM.from_vllm_config(c, enable_log_requests=e)\n"
            "AsyncLLM.from_vllm_config(c, disable_log_requests=d)\n",
            "another call of the callee still passes the old keyword: the patch has work to do there",
        ),
        (
            "e = AsyncLLM.from_vllm_config(\n    c,\n    enable_log_requests=e, # Uky\n)\n",
            "a tagged keyword is the fork's, not upstream's",
        ),
        (
            "def a():\n    kw = {'enable_log_requests': True}\n\ndef b(**kw):\n"
            "    AsyncLLM.from_vllm_config(c, **kw)\n",
            "a dict built in another function is not this call's",
        ),
        (
            "def a():\n    kw = {'enable_log_requests': True}\n\nkw = {}\nAsyncLLM.from_vllm_config(c, **kw)\n",
            "nor is one a function builds for a call at module level",
        ),
        (
            "def run():\n    kw = {'disable_log_requests': True}\n"
            "    AsyncLLM.from_vllm_config(c, enable_log_requests=e, **kw)\n",
            "the old keyword through **kwargs still counts as passed",
        ),
        ("x = 1\n", "no call at all"),
        ("def broken(:\n", "a file that does not parse says nothing"),
    ],
)
def test_not_superseded(text: str, why: str) -> None:
    assert find(RULE, text) is None, why


@pytest.mark.parametrize("version", RELEASES)
def test_builtin_rule_on_the_releases(release_cache: Path, version: str) -> None:
    """Only 0.7.0 passes enable_log_requests, and it does so through a kwargs dict beside the call."""
    from patchctl import releases

    tree = releases.materialize(version)
    said = upstream.find(RULE, VLLM, lambda rel: (tree / rel).read_text(), "Uky")
    if version == "0.7.0":
        assert said == (
            f"upstream's AsyncLLM.from_vllm_config(...) at {VLLM}:418 passes enable_log_requests= "
            "through **kwargs (built at line 414) and no disable_log_requests=; the patch is not needed"
        )
    else:
        assert said is None


def test_builtin_patch_uses_the_call_rule() -> None:
    patch = next(p for p in load_patchsets(["uky"])[0].patches if p.id == "vllm-enable-log-requests")
    assert patch.upstream == RULE


@pytest.mark.parametrize("version", ["0.6.1", "0.7.0"])
def test_an_unrelated_use_of_the_new_name_is_not_the_call(release_cache: Path, version: str) -> None:
    """The issue's case on a real file: `dtype=torch.int32` elsewhere in transformer_impl.py made the
    old name rule say superseded; the call itself still passes torch_dtype=."""
    from patchctl import releases

    text = (releases.materialize(version) / ENGINE).read_text()
    names = upstream.make_rule({"kind": "python-name", "names": ["dtype"]})
    assert "upstream already uses dtype" in (upstream.find(names, ENGINE, lambda rel: text, "Uky") or "")
    assert upstream.find(DTYPE, ENGINE, lambda rel: text, "Uky") is None
    changed = text.replace("                torch_dtype=torch_dtype,\n", "                dtype=torch_dtype,\n")
    said = upstream.find(DTYPE, ENGINE, lambda rel: changed, "Uky")
    assert said is not None and "auto_class.from_pretrained(...)" in said and "passes dtype= (line" in said


MANIFEST = """
[patchset]
name = "rules"
tag = "Uky"

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
[patch.upstream]
"""


@pytest.mark.parametrize(
    "upstream_table, message",
    [
        (
            'kind = "call-keyword"\ncall = "f"\nold_keyword = "a"\n',
            "key 'patch[0].upstream.new_keyword': missing for call-keyword; write new_keyword = ...",
        ),
        ('kind = "call"\n', "key 'patch[0].upstream.kind'"),
    ],
)
def test_manifest_errors_name_the_key(tmp_path: Path, upstream_table: str, message: str) -> None:
    (tmp_path / "patchset.toml").write_text(MANIFEST + upstream_table)
    with pytest.raises(ManifestError) as info:
        load_patchset(tmp_path)
    assert message in str(info.value)


def test_unknown_kind_lists_call_keyword(tmp_path: Path) -> None:
    (tmp_path / "patchset.toml").write_text(MANIFEST + 'kind = "call"\n')
    with pytest.raises(ManifestError, match="call-keyword, none, python-name, regex"):
        load_patchset(tmp_path)


REGEX = upstream.make_rule({"kind": "regex", "pattern": r"enable_log_requests\s*="})
NAME = upstream.make_rule({"kind": "python-name", "names": ["enable_log_requests"]})


@pytest.mark.parametrize("end", ["\n", ""], ids=["newline", "no-newline"])
@pytest.mark.parametrize("rule", [REGEX, NAME, RULE], ids=["regex", "python-name", "call-keyword"])
def test_a_tagged_first_or_last_line_is_the_forks(rule: upstream.UpstreamRule, end: str) -> None:
    """The tag is looked up on every line, the file's first and last included (#18 audit: an
    off-by-one there made the fork's own tagged line count as upstream's)."""
    line = "e = AsyncLLM.from_vllm_config(c, enable_log_requests=True)  # Uky"
    assert find(rule, f"import os\nx = 1\n{line}{end}") is None
    assert find(rule, f"{line}\nimport os\n") is None
    untagged = line.removesuffix("  # Uky")
    said = find(rule, f"import os\nx = 1\n{untagged}{end}")
    assert said is not None and "m.py:3" in said, said


@pytest.mark.parametrize(
    "text, line",
    [
        ("import os\nflag = enable_log_requests\n", 2),
        ("import os\nflag = cfg.enable_log_requests\n", 2),
        ("import os\nf(enable_log_requests=True)\n", 2),
        ("import os\nflag = cfg['enable_log_requests']\n", 2),
        ("x = enable_log_requests  # Uky\ny = 1\nz = enable_log_requests\n", 3),
    ],
)
def test_python_name_finds_each_way_of_naming(text: str, line: int) -> None:
    """A name, an attribute, a keyword and a string key each say upstream has the change, at the
    first untagged line (what `apply` shows as the patch's reason)."""
    assert find(NAME, text) == f"upstream already uses enable_log_requests (m.py:{line}); the patch is not needed"


def test_python_name_reports_the_first_line_of_any_name() -> None:
    """With several names the earliest line is the one shown, whichever name it holds."""
    names = upstream.make_rule({"kind": "python-name", "names": ["zeta", "alpha"]})
    assert find(names, "a = 1\nb = zeta\nc = alpha\n") == "upstream already uses zeta (m.py:2); the patch is not needed"


def test_kind_none_never_says_superseded() -> None:
    """`kind = "none"` (upstream never has it) answers None even for a file using the new name."""
    none = upstream.make_rule({"kind": "none"})
    assert find(none, "e = AsyncLLM.from_vllm_config(c, enable_log_requests=True)\n") is None


def test_a_one_line_function_builds_its_calls_kwargs() -> None:
    """A call on its function's `def` line still belongs to that function's **kwargs."""
    said = find(RULE, "def run(): kw = {'enable_log_requests': True}; AsyncLLM.from_vllm_config(c, **kw)\n")
    assert said is not None and "through **kw (built at line 1)" in said


@pytest.mark.parametrize(
    "merged", ["{'x': 1} | {'enable_log_requests': True}", "{'enable_log_requests': True} | {'x': 1}"]
)
def test_a_merged_dict_passes_a_key_either_side_holds(merged: str) -> None:
    said = find(RULE, f"e = AsyncLLM.from_vllm_config(c, **({merged}))\n")
    assert said is not None and "passes enable_log_requests= through ** (line 1)" in said
