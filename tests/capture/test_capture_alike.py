"""A fork-new file that only resembles a file the fork deleted is the fork's own file (issue 38,
requirement 6): an add-file with the likeness noted, which any upstream can take, not a move of
upstream's file, which cannot be made once upstream moves or rewrites it. A file the fork really
moved (its name kept, or its text nearly whole) is still a rename-file (capture/moves.py).

Search-R1's case, small: it deleted verl's ``examples/data_preprocess/gsm8k.py`` and wrote
``scripts/data_process/nq.py`` from it, about two thirds alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import run

OLD = "examples/data_preprocess/gsm8k.py"
NEW = "scripts/data_process/nq.py"
EXAMPLE = "".join(f"step_{i} = load('gsm8k', {i})\n" for i in range(12))
#: two thirds of the example kept, a third the fork's own: 67% alike by lines
OURS = "".join(f"step_{i} = load('gsm8k', {i})\n" for i in range(8)) + "".join(
    f"nq_{i} = search('nq', {i})\n" for i in range(4)
)


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"verl/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def capture(tmp_path: Path, fork_files: dict[str, str]) -> tuple[dict[str, dict[str, str]], str]:
    base = tree(tmp_path / "base", {OLD: EXAMPLE})
    fork = tree(tmp_path / "fork", fork_files)
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp_path / "ps"))
    assert code == 0, out
    listed = run("list", "--patchset", str(tmp_path / "ps"), "--json")[1]
    return {p["id"]: p for p in json.loads(listed)[0]["patches"]}, out


def test_a_file_only_like_one_the_fork_deleted_is_added_with_the_likeness_noted(tmp_path: Path) -> None:
    patches, out = capture(tmp_path, {NEW: OURS})
    kinds = {p["kind"]: p for p in patches.values()}
    assert sorted(kinds) == ["add-file", "delete-file"], patches  # the example's deletion is its own patch
    assert kinds["add-file"]["title"] == f"add {NEW} (67% like {OLD} of BASE, which FORK deleted) (untagged)"
    assert f"note: {NEW}: a new file (67% like {OLD} of BASE, which FORK deleted); captured as add-file" in out


def test_the_added_file_is_made_where_upstream_moved_its_example_away(tmp_path: Path) -> None:
    """verl 0.4.1 on: examples reorganised. The fork's file is made from the patchset all the same."""
    capture(tmp_path, {NEW: OURS})
    later = tree(tmp_path / "later", {"examples/data/gsm8k_rewritten.py": "x = 1\n"})
    code, out = run("apply", "--target", str(later), "--patchset", str(tmp_path / "ps"), "--json")
    rows = {r["patch"]: r["status"] for r in json.loads(out)["results"]}
    assert code == 0 and rows == {"nq": "applied", "delete-gsm8k-py": "already-applied"}, rows
    assert (later / NEW).read_text(encoding="utf-8") == OURS


def test_a_file_moved_under_its_own_name_is_still_a_move(tmp_path: Path) -> None:
    patches, _ = capture(tmp_path, {f"scripts/data_process/{Path(OLD).name}": OURS})
    assert next(p["kind"] for p in patches.values()) == "rename-file", patches


def test_a_file_renamed_and_kept_nearly_whole_is_still_a_move(tmp_path: Path) -> None:
    """11 of 12 lines kept (92%): the fork moved the example and edited a line."""
    patches, _ = capture(tmp_path, {NEW: EXAMPLE.replace("step_3 = load('gsm8k', 3)", "step_3 = load('nq', 3)")})
    assert next(p["kind"] for p in patches.values()) == "rename-file", patches
