"""Finer patches from real forks (issue 38 requirement 2): each edit travels alone where it can.

The files are real, copied verbatim (all Apache-2.0):

- ``rewritten_readme``: Search-R1's README, the verl commit it was taken from, and verl
  v0.2.0.post2's README;
- ``blank_context_readme``: TinyZero's README, its verl base (884a7273123c), and verl
  v0.3.0.post1's README;
- ``import_run``: Search-R1's ``verl/trainer/ppo/ray_trainer.py``, its base, and verl
  v0.2.0.post2's (``.txt``: no formatter or linter ever touches the real text).

Each test is the case ``benchmarks/bench_forks.py`` showed ``git apply -3`` placing and
patchctl not, and checks patchctl now places it as git does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.clirun import run
from tests.realparts import require

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).parent
TRAINER = "verl/trainer/ppo/ray_trainer.py"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "verl").mkdir(exist_ok=True)
    (root / "verl" / "__init__.py").touch()
    return root


def _readme(folder: str, side: str) -> str:
    return (HERE / folder / side / "README.md").read_text(encoding="utf-8")


def _capture(tmp: Path, files: dict[str, dict[str, str]]) -> tuple[Path, dict[str, dict[str, object]]]:
    """The fork's edits captured against its base: the patchset and its patches by id."""
    base, fork = _tree(tmp / "base", files["base"]), _tree(tmp / "fork", files["fork"])
    out = tmp / "ps"
    code, said = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(out))
    assert code == 0, said
    assert "left out" not in said
    manifest = tomllib.loads((out / "patchset.toml").read_text(encoding="utf-8"))
    return out, {p["id"]: p for p in manifest["patch"]}


def _apply(target: Path, ps: Path, *more: str) -> tuple[int, dict[str, dict[str, str]]]:
    code, out = run("apply", "-t", str(target), "-p", str(ps), "--json", *more)
    return code, {r["patch"]: r for r in json.loads(out)["results"]}


def _outside_markers(text: str) -> str:
    """The file as upstream's side of each conflict leaves it: what was placed, not marked."""
    keep, inside = [], False
    for ln in text.splitlines(keepends=True):
        if ln.startswith("<<<<<<< "):
            inside = True
        elif ln.startswith(">>>>>>> "):
            inside = False
        elif not inside:
            keep.append(ln)
    return "".join(keep)


def test_a_rewritten_readme_travels_hunk_by_hunk_and_its_clean_hunks_land_beside_upstreams_rewording(
    tmp_path: Path,
) -> None:
    """Search-R1 rewrote verl's README nearly whole. Its 19 hunks used to travel as one patch (a
    later hunk's old text turned up in what an earlier one wrote), which conflicted on every
    release; git placed 10 of them on v0.2.0.post2. Now only the hunks apply would misplace are
    joined, and those upstream left alone land while the others are marked."""
    sides = {side: {"README.md": _readme("rewritten_readme", side)} for side in ("base", "fork")}
    ps, patches = _capture(tmp_path, sides)
    hunks = [pid for pid, p in patches.items() if p["kind"] == "text-hunk"]
    assert len(hunks) >= 14, hunks

    target = _tree(tmp_path / "target", {"README.md": _readme("rewritten_readme", "target")})
    code, results = _apply(target, ps, "--conflicts", "markers")
    assert code == 1  # the hunks upstream reworded too are marked, or named where no place is told
    landed = [pid for pid in hunks if results[pid]["status"] == "applied"]
    assert len(landed) >= 8, {pid: r["status"] for pid, r in results.items()}
    placed = _outside_markers((target / "README.md").read_text(encoding="utf-8"))
    fork = _readme("rewritten_readme", "fork")
    for line in (
        "## Links",
        "## Preliminary results",
        "## Use your own dataset",
        "We support different RL methods (e.g., PPO, GRPO, reinforce), different LLMs",
    ):
        assert line in fork
        assert line in placed, line


@pytest.fixture(scope="module")
def tinyzero(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, object]]]:
    tmp = tmp_path_factory.mktemp("tinyzero")
    return _capture(tmp, {side: {"README.md": _readme("blank_context_readme", side)} for side in ("base", "fork")})


def _inserted(patches: dict[str, dict[str, object]], first_line: str) -> str:
    """The id of the patch whose new text starts the paragraph ``first_line``."""
    found = [pid for pid, p in patches.items() if first_line in str(p["params"]["now"])]  # type: ignore[index]
    assert len(found) == 1, found
    return found[0]


def test_a_paragraph_inserted_between_blank_lines_is_placed_by_the_merge_as_git_places_it(
    tinyzero: tuple[Path, dict[str, dict[str, object]]], tmp_path: Path
) -> None:
    """TinyZero's "### Instruct Ablation" section sits between two blank lines: its own lines give
    nothing to find its place by, so it used to join the hunk beside it, which upstream reworded,
    and never landed. Now it travels alone, merge-only, and lands where ``git merge-file`` of the
    fork's one change puts it; verify finds it, revert gives the file back byte for byte."""
    require("git")
    ps, patches = tinyzero
    pid = _inserted(patches, "### Instruct Ablation")
    assert patches[pid]["params"]["merge_only"] is True  # type: ignore[index]
    target = _tree(tmp_path / "target", {"README.md": _readme("blank_context_readme", "target")})
    before = (target / "README.md").read_bytes()

    code, results = _apply(target, ps, "--only", pid)
    assert code == 0, results
    assert results[pid]["status"] == "applied"
    assert "3-way merge" in results[pid]["reason"]

    # git's own 3-way merge of this one change, from the same base, into the same release
    base, fork = _readme("blank_context_readme", "base"), _readme("blank_context_readme", "fork")
    params = patches[pid]["params"]
    line = int(params["line"])  # type: ignore[index]
    lines = base.splitlines(keepends=True)
    was = str(params["was"])  # type: ignore[index]
    n = len(was.splitlines(keepends=True))
    assert "".join(lines[line - 1 : line - 1 + n]) == was
    mine = "".join([*lines[: line - 1], str(params["now"]), *lines[line - 1 + n :]])  # type: ignore[index]
    assert "### Instruct Ablation" in fork
    files = {}
    for name, text in (("mine", mine), ("base", base), ("theirs", before.decode("utf-8"))):
        files[name] = tmp_path / name
        files[name].write_text(text, encoding="utf-8")
    git = subprocess.run(
        ["git", "merge-file", "-p", str(files["mine"]), str(files["base"]), str(files["theirs"])],
        capture_output=True,
        check=True,
    )
    assert (target / "README.md").read_bytes() == git.stdout

    _, out = run("verify", "-t", str(target), "-p", str(ps), "--json")
    assert {r["patch"]: r["status"] for r in json.loads(out)["patches"]}[pid] == "present"
    code, out = run("revert", "-t", str(target), "-p", str(ps), "--only", pid)
    assert code == 0, out
    assert (target / "README.md").read_bytes() == before


def test_a_merge_only_hunk_without_its_base_text_conflicts_and_says_why(
    tinyzero: tuple[Path, dict[str, dict[str, object]]], tmp_path: Path
) -> None:
    """Without the base text (a patchset copied without ``bases/``) nothing could say where the
    paragraph goes: it is a conflict naming that, never a guess at the nearest blank lines."""
    ps, patches = tinyzero
    pid = _inserted(patches, "### Instruct Ablation")
    bare = Path(shutil.copytree(ps, tmp_path / "ps"))
    shutil.rmtree(bare / "bases")
    target = _tree(tmp_path / "target", {"README.md": _readme("blank_context_readme", "target")})
    before = (target / "README.md").read_bytes()
    code, results = _apply(target, bare, "--only", pid)
    assert code == 1
    assert results[pid]["status"] == "conflict"
    assert "only blank lines around it" in results[pid]["reason"]
    assert (target / "README.md").read_bytes() == before


def _trainer(side: str) -> str:
    return (HERE / "import_run" / side / "ray_trainer.py.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def search_r1(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, object]]]:
    tmp = tmp_path_factory.mktemp("search_r1")
    return _capture(tmp, {side: {TRAINER: _trainer(side)} for side in ("base", "fork")})


def test_an_import_run_lands_as_a_block_where_upstream_added_an_import_above_it(
    search_r1: tuple[Path, dict[str, dict[str, object]]], tmp_path: Path
) -> None:
    """Search-R1 adds ``import re``, ``import json`` and ``from collections import defaultdict``
    after the stdlib imports; v0.2.0.post2 added ``from copy import deepcopy`` right above them.
    One patch per import, they used to be set-added one by one at the end of the module's
    imports; now the first lands where the 3-way merge puts it and the others follow it: the
    block as the fork wrote it, where git puts it."""
    require("git")
    ps, patches = search_r1
    ids = [pid for pid, p in patches.items() if pid.startswith("ray-trainer-module")][:3]
    target = _tree(tmp_path / "target", {TRAINER: _trainer("target")})
    code, results = _apply(target, ps, *(x for pid in ids for x in ("--only", pid)))
    assert code == 0, results
    assert [results[pid]["status"] for pid in ids] == ["applied"] * 3
    text = (target / TRAINER).read_text(encoding="utf-8")
    block = (
        "from typing import Type, Dict\nfrom copy import deepcopy\n\n"
        "import re\nimport json\nfrom collections import defaultdict\n\nimport numpy as np\n"
    )
    assert block in text


def test_an_edit_reading_a_name_the_base_function_binds_does_not_need_the_edit_that_reassigns_it(
    search_r1: tuple[Path, dict[str, dict[str, object]]],
) -> None:
    """In Search-R1's ``fit``, one edit turns ``batch``'s tensors to long, another (under
    ``update_actor``) reassigns ``batch`` from ``_create_loss_mask``. ``batch`` is ``fit``'s own
    local in verl already: the first needs nothing of the second, and is no longer held back
    whenever the second conflicts (it was, on every release from v0.4.1)."""
    _, patches = search_r1

    def holding(snippet: str) -> str:
        found = [pid for pid, p in patches.items() if snippet in str(p["params"].get("after", ""))]  # type: ignore[attr-defined]
        assert len(found) == 1, found
        return found[0]

    longs = holding("batch.batch[key] = batch.batch[key].long()")
    masks = holding("batch, metrics = self._create_loss_mask(batch, metrics)")
    assert masks not in patches[longs].get("needs", [])
    # a name the fork itself introduces still links: the mask call needs the method it calls
    assert patches[masks].get("needs")
