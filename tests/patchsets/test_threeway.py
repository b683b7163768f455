"""The 3-way fallback (issue 38 req 7): a patch whose anchors lead nowhere is merged from the base
text capture keeps, as ``git apply -3`` merges from the base blob; accepted only where the merge
is clean, lands in the fork's def/class (YAML: key path) and leaves a file that loads; recorded
so that ``verify`` finds it and ``revert`` restores the file byte for byte.

The files are real: ``verl/utils/dataset/rl_dataset.py`` of verl 884a7273123c (TinyZero's base),
of TinyZero (its edits), and of verl v0.3.0.post1, where upstream rewrote ``__getitem__`` around
TinyZero's edited line; and verl's ``ppo_trainer.yaml`` of 884a7273123c. All Apache-2.0, copied
verbatim into ``threeway_files``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.clirun import run
from tests.realparts import require

from patchctl.patchsets import bases, threeway

HERE = Path(__file__).parent / "threeway_files"
DS = "verl/utils/dataset/rl_dataset.py"
YAML = "verl/trainer/config/ppo_trainer.yaml"
GETITEM = "rl-dataset-getitem"


def _tree(tmp: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "verl" / "__init__.py").touch()
    return root


def _real(side: str, rel: str = DS) -> str:
    """A file as the fixture keeps it (``.txt``: no formatter or linter ever touches the real text)."""
    name = "rl_dataset.py.txt" if rel == DS else Path(rel).name
    return (HERE / side / name).read_text(encoding="utf-8")


def _capture(tmp: Path) -> Path:
    """TinyZero's edits of rl_dataset.py captured against its verl base."""
    base = _tree(tmp, "base", {DS: _real("base")})
    fork = _tree(tmp, "fork", {DS: _real("fork")})
    out = tmp / "ps"
    code, said = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(out))
    assert code == 0, said
    return out


@pytest.fixture(scope="module")
def tinyzero(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _capture(tmp_path_factory.mktemp("tinyzero"))


@pytest.fixture
def captured(tinyzero: Path, tmp_path: Path) -> Path:
    """A copy of the captured patchset of one test's own."""
    return Path(shutil.copytree(tinyzero, tmp_path / "ps"))


def _apply(target: Path, ps: Path, *more: str) -> tuple[int, dict[str, dict[str, str]]]:
    code, out = run("apply", "-t", str(target), "-p", str(ps), "--json", *more)
    return code, {r["patch"]: r for r in json.loads(out)["results"]}


def test_a_rewritten_function_takes_the_edit_by_a_3way_merge_verify_finds_it_revert_undoes_it(
    captured: Path, tmp_path: Path
) -> None:
    require("git")
    ps = captured
    target = _tree(tmp_path, "target", {DS: _real("target")})
    before = (target / DS).read_bytes()
    code, got = _apply(target, ps, "--conflicts=markers")
    assert got[GETITEM]["status"] == "applied", got[GETITEM]
    assert "3-way merge from its base text" in got[GETITEM]["reason"]
    text = (target / DS).read_text(encoding="utf-8")
    # the fork's line, in the method upstream rewrote, in place of upstream's chat-template call
    getitem = text[text.index("    def __getitem__") :]
    assert "prompt_with_chat_template = chat[0]['content']" in getitem
    assert "apply_chat_template(chat, add_generation_prompt=True, tokenize=False)" not in getitem
    code, out = run("verify", "-t", str(target), "-p", str(ps), "--json")
    checks = {c["patch"]: c for c in json.loads(out)["patches"]}
    assert checks[GETITEM]["status"] == "present", checks[GETITEM]
    code, out = run("revert", "-t", str(target), "-p", str(ps))
    assert code == 0, out
    assert (target / DS).read_bytes() == before
    # the fallback is what placed it: without the base texts the same patch is a conflict
    shutil.rmtree(ps / "bases")
    code, got = _apply(target, ps)
    assert code == 1
    assert got[GETITEM]["status"] == "conflict"
    assert (target / DS).read_bytes() == before


def test_a_region_upstream_changed_too_is_refused_and_nothing_written(captured: Path, tmp_path: Path) -> None:
    require("git")
    ps = captured
    ours = "self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)"
    changed = _real("target").replace(
        ours, ours.replace("tokenize=False", "tokenize=False, continue_final_message=False")
    )
    assert changed != _real("target")
    target = _tree(tmp_path, "target", {DS: changed})
    code, got = _apply(target, ps)
    assert code == 1
    assert got[GETITEM]["status"] == "conflict"
    assert "upstream changed the lines it edits too (the merge conflicts)" in got[GETITEM]["reason"]
    assert (target / DS).read_text(encoding="utf-8") == changed


def test_a_merge_that_lands_in_another_method_is_refused(captured: Path, tmp_path: Path) -> None:
    require("git")
    ps = captured
    renamed = _real("target").replace("    def __getitem__(self, item):", "    def _row(self, item):")
    assert renamed != _real("target")
    target = _tree(tmp_path, "target", {DS: renamed})
    _code, got = _apply(target, ps)
    assert got[GETITEM]["status"] in ("conflict", "not-applicable"), got[GETITEM]
    assert (
        "the merge puts the change in RLHFDataset._row, where the fork has it in RLHFDataset.__getitem__"
        in (got[GETITEM]["reason"])
    )
    assert (target / DS).read_text(encoding="utf-8") == renamed


DESCRIBE = "\n    def describe(self):  # Uky\n        return 'fork'  # Uky\n"


def test_a_clean_merge_that_leaves_a_method_defined_twice_is_refused(tmp_path: Path) -> None:
    """Upstream added ``describe`` further up and changed the header the fork's anchors name: the
    merge is clean, but the class would define ``describe`` twice (Python keeps the later)."""
    require("git")
    base_text = _real("base")
    base = _tree(tmp_path, "base", {DS: base_text})
    fork = _tree(tmp_path, "fork", {DS: base_text.rstrip("\n") + "\n" + DESCRIBE})
    ps = tmp_path / "ps"
    code, said = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(ps))
    assert code == 0, said
    upstream = base_text.replace(
        "    def __len__(self):\n", "    def describe(self):\n        return 'upstream'\n\n    def __len__(self):\n"
    ).replace("    def __getitem__(self, item):", "    def __getitem__(self, item, /):")
    target = _tree(tmp_path, "target", {DS: upstream})
    code, got = _apply(target, ps)
    (only,) = got.values()
    assert only["status"] == "conflict", only
    assert "the 3-way merge from its base text: the merged file would not load" in only["reason"]
    assert "describe" in only["reason"]
    assert (target / DS).read_text(encoding="utf-8") == upstream


def _yaml_patchset(tmp: Path, base_text: str) -> Path:
    """A text-hunk that adds ``resume_mode`` to ``trainer:`` (as a patchset written before capture
    kept the hunk's parent key), and the base text it was made against."""
    ps = tmp / "ps"
    ps.mkdir()
    was = "  save_freq: -1\n  test_freq: -1\n  critic_warmup: 0\n"
    now = "  save_freq: -1\n  test_freq: -1\n  resume_mode: auto  # Uky\n  critic_warmup: 0\n"
    assert base_text.count(was) == 1
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "y"\ntag = "Uky"\n\n[[patch]]\nid = "resume"\ntitle = "resume"\nwhy = "resume runs"\n'
        f'kind = "text-hunk"\ntarget = ["{YAML}"]\n[patch.params]\nwas = """{was}"""\nnow = """{now}"""\nfuzz = 0\n',
        encoding="utf-8",
    )
    bases.write(ps, {YAML: base_text.encode()})
    return ps


def test_a_yaml_line_the_merge_puts_under_another_key_is_refused(tmp_path: Path) -> None:
    """Upstream opened a top-level ``ray_init:`` above the hunk and changed a context line: the
    merge is clean and the file loads, but the fork's key would sit under ``ray_init``."""
    require("git")
    base_text = _real("base", YAML)
    ps = _yaml_patchset(tmp_path, base_text)
    upstream = base_text.replace("  n_gpus_per_node: 8\n", "  n_gpus_per_node: 8\nray_init:\n").replace(
        "  save_freq: -1\n", "  save_freq: 10\n"
    )
    target = _tree(tmp_path, "target", {YAML: upstream})
    _code, got = _apply(target, ps)
    assert got["resume"]["status"] == "conflict", got["resume"]
    assert (
        "the merge puts 'resume_mode: auto  # Uky' under key ray_init, not where the fork has it"
        in got["resume"]["reason"]
    )
    assert (target / YAML).read_text(encoding="utf-8") == upstream


def test_the_same_yaml_edit_merges_where_the_key_path_holds(tmp_path: Path) -> None:
    require("git")
    base_text = _real("base", YAML)
    ps = _yaml_patchset(tmp_path, base_text)
    upstream = base_text.replace("  save_freq: -1\n", "  save_freq: 10\n")
    target = _tree(tmp_path, "target", {YAML: upstream})
    _code, got = _apply(target, ps)
    assert got["resume"]["status"] == "applied", got["resume"]
    assert "  save_freq: 10\n  test_freq: -1\n  resume_mode: auto  # Uky\n" in (target / YAML).read_text()


@pytest.mark.parametrize(
    "mine_edit, new_edit",
    [
        # apart: upstream's change far from the fork's (the in-process merge)
        (("tokenize=False)", "tokenize=False)  # Uky"), ("import torch\n", "import torch\nimport math\n")),
        # close by: two lines apart (git merge-file decides)
        (
            ("tokenize=False)", "tokenize=False)  # Uky"),
            ("        is_multi_modal", "        # mm\n        is_multi_modal"),
        ),
        # the same line on both sides: a conflict
        (("tokenize=False)", "tokenize=False)  # Uky"), ("tokenize=False)", "tokenize=True)")),
    ],
)
def test_merge_agrees_with_git_merge_file(
    tmp_path: Path, mine_edit: tuple[str, str], new_edit: tuple[str, str]
) -> None:
    require("git")
    old = _real("target")
    mine, new = old.replace(*mine_edit, 1), old.replace(*new_edit, 1)
    assert mine != old and new != old
    for i, text in enumerate((mine, old, new)):
        (tmp_path / str(i)).write_text(text, encoding="utf-8")
    git = subprocess.run(["git", "merge-file", "-p", "-q", "0", "1", "2"], cwd=tmp_path, capture_output=True, text=True)
    assert threeway.merge(mine, old, new) == (git.stdout if git.returncode == 0 else None)


# -- the base texts are untrusted input --------------------------------------------------------


def _tampered(ps: Path) -> tuple[Path, Path, Path]:
    index = ps / "bases" / "index.toml"
    (sha,) = [p.name for p in (ps / "bases").iterdir() if p.name != "index.toml"]
    return ps, index, ps / "bases" / sha


def test_a_base_text_that_does_not_match_its_sha256_stops_the_run(captured: Path, tmp_path: Path) -> None:
    ps, _, blob = _tampered(captured)
    blob.write_text(blob.read_text() + "import os; os.system('x')\n")
    target = _tree(tmp_path, "target", {DS: _real("target")})
    code, out = run("apply", "-t", str(target), "-p", str(ps))
    assert code == 2
    assert "bases/index.toml" in out and "does not hold the text its name's sha256 says" in out
    assert (target / DS).read_text(encoding="utf-8") == _real("target")


def test_an_index_naming_a_path_outside_the_tree_is_refused(captured: Path, tmp_path: Path) -> None:
    ps, index, _blob = _tampered(captured)
    index.write_text(index.read_text().replace(f'"{DS}"', '"../../etc/passwd"'))
    code, out = run("verify", "-t", str(_tree(tmp_path, "target", {DS: _real("target")})), "-p", str(ps))
    assert code == 2
    assert "is not a plain relative path inside the tree" in out


def test_a_base_text_that_is_a_link_is_refused(captured: Path, tmp_path: Path) -> None:
    ps, _, blob = _tampered(captured)
    real = tmp_path / "elsewhere"
    real.write_bytes(blob.read_bytes())  # the same bytes: only the link is wrong
    blob.unlink()
    os.symlink(real, blob)
    code, out = run("verify", "-t", str(_tree(tmp_path, "target", {DS: _real("target")})), "-p", str(ps))
    assert code == 2
    assert "which is not a regular file" in out


def test_an_oversized_base_text_is_refused(captured: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ps, _, blob = _tampered(captured)
    monkeypatch.setattr(bases, "MAX_BYTES", blob.stat().st_size - 1)
    code, out = run("verify", "-t", str(_tree(tmp_path, "target", {DS: _real("target")})), "-p", str(ps))
    assert code == 2
    assert "more than" in out


def test_capture_writes_the_same_base_texts_twice(tinyzero: Path, tmp_path: Path) -> None:
    one, two = tinyzero, _capture(tmp_path)

    def listing(ps: Path) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((ps / "bases").iterdir())}

    assert listing(one) == listing(two)
    assert hashlib.sha256(_real("base").encode()).hexdigest() in listing(one)
