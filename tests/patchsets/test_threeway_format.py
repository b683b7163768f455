"""Formatting never decides for the 3-way fallback (issue 38 req 3): real fork edits merged into
real verl targets as released and as ``ruff format`` and ``black`` leave them.

``git merge-file`` merges physical lines: where a formatter re-wrapped the lines around a fork's
edit, it conflicts though nothing changed but layout. The fallback merges by logical lines
(:mod:`patchctl.patchsets.logical`), keyed by syntax tree, so every patch must get the same
outcome on the formatted target as on the original. The files are real (Apache-2.0, verbatim):

- TinyZero's ``rl_dataset.py`` edit, its verl base 884a7273123c and verl v0.3.0.post1, where
  upstream inserted a block after the line TinyZero replaced, a blank line between them
  (``threeway_files``, shared with ``test_threeway.py``);
- Search-R1's ``fsdp_sft_trainer.py`` (a14dc3a4ffc6), its verl base 19840945451e and verl
  v0.2.0.post2, where upstream took in the fork's LoRA block itself (``threeway_files/search-r1``);
- two files of verl v0.3.0.post1 for the keys alone (``threeway_files/verl-0.3.0.post1``).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.clirun import run
from tests.realparts import require

from patchctl.patchsets import logical
from patchctl.patchsets.engine import plan_apply
from patchctl.patchsets.loader import load_patchset
from patchctl.target import open_tree

HERE = Path(__file__).parent / "threeway_files"
BIN = Path(sys.executable).parent
FORMATTERS = {
    "ruff": [str(BIN / "ruff"), "format", "--isolated", "-"],
    "black": [str(BIN / "black"), "--quiet", "--line-length", "88", "-"],
}
#: fork -> (the file's path in verl, the fixture folder, the fixture file's name)
CASES = {
    "tinyzero": ("verl/utils/dataset/rl_dataset.py", HERE, "rl_dataset.py.txt"),
    "search-r1": ("verl/trainer/fsdp_sft_trainer.py", HERE / "search-r1", "fsdp_sft_trainer.py.txt"),
}
LORA = "self.model = get_peft_model(self.model, LoraConfig(**lora_config))"


def formatted(text: str, tool: str) -> str:
    return subprocess.run(FORMATTERS[tool], input=text, capture_output=True, text=True, check=True).stdout


def real(case: str, side: str) -> str:
    _, folder, name = CASES[case]
    return (folder / side / name).read_text(encoding="utf-8")


def tree(root: Path, rel: str, text: str) -> Path:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")
    (root / "verl" / "__init__.py").touch()
    return root


@pytest.fixture(scope="module", params=sorted(CASES))
def captured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The fork's edits of the case's file captured against its verl base (its own base texts kept)."""
    case = request.param
    rel = CASES[case][0]
    tmp = tmp_path_factory.mktemp(case)
    base, fork = tree(tmp / "base", rel, real(case, "base")), tree(tmp / "fork", rel, real(case, "fork"))
    code, said = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp / "ps"))
    assert code == 0, said
    return case, tmp / "ps"


def outcomes(target: Path, ps: Path) -> dict[str, tuple[str, str]]:
    """Each patch's outcome and reason as matrix plans it on ``target`` (apply writes nothing
    while any patch conflicts)."""
    plan = plan_apply(open_tree(target, target.name), [load_patchset(ps)])
    return {r.patch: (r.status.value, r.reason) for r in plan.results}


@pytest.mark.parametrize("tool", sorted(FORMATTERS))
def test_every_patch_gets_on_a_formatted_target_the_outcome_it_gets_on_the_original(
    captured: tuple[str, Path], tool: str, tmp_path: Path
) -> None:
    require("git")
    case, ps = captured
    rel = CASES[case][0]
    plain_tree = tree(tmp_path / "plain", rel, real(case, "target"))
    styled = formatted(real(case, "target"), tool)
    assert styled != real(case, "target")
    styled_tree = tree(tmp_path / tool, rel, styled)
    plain, got = outcomes(plain_tree, ps), outcomes(styled_tree, ps)
    assert {p: r[0] for p, r in got.items()} == {p: r[0] for p, r in plain.items()}
    merged = sorted(p for p, r in got.items() if "3-way merge" in r[1] and r[0] == "applied")
    if case == "tinyzero":
        # the fork's line replaced upstream's re-wrapped call; the block upstream inserted after a
        # blank line stays, in upstream's formatting
        assert merged == ["rl-dataset-getitem"], got
        assert "by logical lines" in got["rl-dataset-getitem"][1]
    else:
        # upstream carries the fork's LoRA block itself: already there, not written twice (as
        # git merge-file writes it into the original, separated from upstream's by a blank line)
        assert got["fsdp-build-model-optimizer"][0] == "already-applied", got["fsdp-build-model-optimizer"]
    only = [x for p, r in got.items() if r[0] in ("applied", "already-applied") for x in ("--only", p)]
    for root in (plain_tree, styled_tree):
        code, out = run("apply", "-t", str(root), "-p", str(ps), *only)
        assert code == 0, out
    text = (styled_tree / rel).read_text(encoding="utf-8")
    ast.parse(text)
    if case == "tinyzero":
        getitem = text[text.index("    def __getitem__") :]
        assert "prompt_with_chat_template = chat[0]['content']" in getitem
        assert "apply_chat_template(" not in getitem
        assert "is_multi_modal = self.image_key in row_dict" in getitem
    else:
        for t in (text, (plain_tree / rel).read_text(encoding="utf-8")):
            assert t.count("get_peft_model(self.model, LoraConfig(") == 1
    # what the merge placed in the formatted file, verify finds and revert takes back byte for byte
    code, out = run("verify", "-t", str(styled_tree), "-p", str(ps), "--json")
    checks = {c["patch"]: c["status"] for c in json.loads(out)["patches"]}
    assert all(checks[p] == "present" for p in merged), checks
    code, out = run("revert", "-t", str(styled_tree), "-p", str(ps))
    assert code == 0, out
    assert (styled_tree / rel).read_text(encoding="utf-8") == styled


#: every real file here: the cases' three sides, and two files of verl v0.3.0.post1 (yapf's
#: layout) with docstrings ruff and black pull onto one line and a ``#comment`` they re-space
REAL = sorted(
    [f"{case}/{side}" for case in CASES for side in ("base", "fork", "target")]
    + [f"verl-0.3.0.post1/{name}" for name in ("hdfs_io.py", "dp_critic.py")]
)


def real_file(name: str) -> str:
    case, side = name.split("/")
    if case in CASES:
        return real(case, side)
    return (HERE / case / f"{side}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("tool", sorted(FORMATTERS))
@pytest.mark.parametrize("name", REAL)
def test_the_units_of_a_formatted_file_have_the_original_keys(name: str, tool: str) -> None:
    """Backslash continuations turned into brackets, calls exploded with trailing commas, quotes,
    docstrings pulled onto one line, comments re-spaced: the keys are the same, unit for unit
    (blank lines apart: formatters add and drop them)."""
    text = real_file(name)
    before, after = logical.cut(text), logical.cut(formatted(text, tool))
    assert before is not None and after is not None
    assert len(after.lines) != len(before.lines)
    assert logical._solid(before.keys) == logical._solid(after.keys)


def test_a_fork_edit_that_is_only_a_reformat_adds_nothing() -> None:
    """The fork ran ``black`` over the file: merged into upstream's later version, by logical lines
    nothing is new (by physical lines, the whole reformat conflicts with upstream's changes)."""
    base, target = real("tinyzero", "base"), real("tinyzero", "target")
    mine = formatted(base, "black")
    assert logical.merge(mine, base, target) == target


def test_a_statement_both_sides_changed_differently_conflicts_however_formatted() -> None:
    """The fork edits an argument of the call upstream re-wrapped and changed too: a conflict, not
    either side's version."""
    old = real("tinyzero", "target")
    call = "self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)"
    assert call in old
    mine = old.replace(call, call.replace("tokenize=False", "tokenize=False, continue_final_message=True"))
    new = formatted(
        old.replace(call, call.replace("add_generation_prompt=True", "add_generation_prompt=False")), "ruff"
    )
    assert logical.merge(mine, old, new) is None
    # the same change on both sides is no conflict: upstream's text is kept
    assert logical.merge(mine, old, formatted(mine, "ruff")) == formatted(mine, "ruff")


def test_a_block_upstream_inserted_where_the_fork_inserts_it_is_not_written_twice() -> None:
    """Upstream took in the fork's LoRA block at the place the fork inserts it, with a line of its
    own after it: both sides inserted there, and upstream's insertion holds the fork's, so the
    block is upstream's already (git conflicts, or writes it twice: the PEFT model wrapped twice)."""
    old, mine = real("search-r1", "base"), real("search-r1", "fork")
    start = mine.index("            if self.config.model.get('lora_rank', 0) > 0:")
    block = mine[start : mine.index(LORA) + len(LORA) + 1] + "            self.model.config.use_cache = False\n"
    call = old.index("AutoModelForCausalLM.from_pretrained(")
    at = old.index("trust_remote_code=trust_remote_code)\n", call) + len("trust_remote_code=trust_remote_code)\n")
    new = old[:at] + block + old[at:]
    for target in (new, formatted(new, "black")):
        merged = logical.merge(mine, old, target)
        assert merged is not None
        assert merged.count(LORA) == 1
        assert "self.model.config.use_cache = False" in merged
        assert "is_lora=self.config.model.get('lora_rank', 0) > 0" in merged  # the fork's other edits


def test_a_statement_too_deep_for_the_syntax_tree_is_keyed_by_its_tokens() -> None:
    """Untrusted text: a sum of 2000 terms parses, but its tree is too deep to write out; one of
    20000 is too deep for the parser. The merge keys such lines by their tokens instead of
    failing with an internal error."""
    deep = "".join(f"x = 1{' + 1' * n}\n" for n in (2000, 20000))
    old = real("tinyzero", "target") + deep
    call = "add_generation_prompt=True, tokenize=False)"
    mine = old.replace(call, call.replace("tokenize=False", "tokenize=True"))
    new = "# upstream's line\n" + old
    assert logical.merge(mine, old, new) == "# upstream's line\n" + mine
