"""Issue 19 req. 9: small inconsistencies of the human-readable output, each pinned by a test."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from tests.faults.helpers import GIT_IDENT, make_patchset, make_tree

from patchctl.capture.hunks import why_from
from patchctl.cli.main import cli
from patchctl.patchsets.loader import builtin_names


def run(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, list(args))
    return done.exit_code, done.stdout, done.stderr


def test_list_shows_every_builtin_patchset() -> None:
    code, out, _ = run("list", "--json")
    assert code == 0
    assert [ps["patchset"] for ps in json.loads(out)] == builtin_names() and len(builtin_names()) > 1
    code, out, _ = run("list")
    assert all(f"\n{name}: " in "\n" + out for name in builtin_names())
    code, out, _ = run("list", "-p", "uky", "--json")  # -p still narrows it
    assert [ps["patchset"] for ps in json.loads(out)] == ["uky"]


def test_why_drops_the_closer_of_the_comment_the_tag_sits_in() -> None:
    lines = ["<!-- # Uky: how we run on the cluster -->\n", "/* # Uky: a style of ours */\n", "x = 1  # Uky: a --> b\n"]
    assert why_from(lines, [1], "Uky") == "how we run on the cluster"
    assert why_from(lines, [2], "Uky") == "a style of ours"
    assert why_from(lines, [3], "Uky") == "a --> b"  # no comment opened it: the arrow is the reason's own


def _fork(tmp_path: Path) -> tuple[Path, Path]:
    base, fork = tmp_path / "base", tmp_path / "fork"
    for root in (base, fork):
        (root / "verl").mkdir(parents=True)
        (root / "verl" / "__init__.py").write_text("x = 1\n")
    (fork / "docs").mkdir()
    (fork / "docs" / "uky.md").write_text("# Notes\n<!-- # Uky: how we run on the cluster -->\ntext\n")
    return base, fork


def test_capture_names_its_tag_column_and_writes_a_clean_why(tmp_path: Path) -> None:
    base, fork = _fork(tmp_path)
    out_dir = tmp_path / "out"
    code, out, err = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out_dir))
    assert code == 0, err
    header = next(line for line in out.splitlines() if "patch" in line and "kind" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["patch", "kind", "where (fork)", "tag"]
    assert "│ tagged" in out
    assert 'why = "how we run on the cluster"\n' in (out_dir / "patchset.toml").read_text()


def test_revert_ends_with_a_verdict_line(tmp_path: Path, monkeypatch) -> None:
    for k, v in GIT_IDENT.items():
        monkeypatch.setenv(k, v)
    tree = make_tree(tmp_path / "tree")
    code, out, _ = run("revert", "-t", str(tree))
    # nothing recorded: the verdict alone, naming the tree, no empty table above it
    assert (code, out.splitlines()) == (
        0,
        [f"revert: nothing to do, nothing of these patchsets is recorded as applied to {tree.resolve()}"],
    )
    ps = make_patchset(tmp_path / "ps", 2)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    code, out, _ = run("revert", "-t", str(tree), "-p", str(ps), "--dry-run")
    assert (code, out.splitlines()[-1]) == (0, "revert: ok (dry run), 3 patch(es) would be reverted")
    init = tree / "verl" / "__init__.py"
    edited = init.read_text()
    init.write_text(edited.replace('"FAULT_TEST", "1"', '"FAULT_TEST", "2"'))  # a hand edit of the patch
    code, _, err = run("revert", "-t", str(tree), "-p", str(ps))
    assert code == 1 and err.splitlines()[-1].startswith("revert: FAILED, nothing was written")
    init.write_text(edited)
    code, out, _ = run("revert", "-t", str(tree), "-p", str(ps))
    assert (code, out.splitlines()[-1]) == (0, "revert: ok, 3 patch(es) reverted, 4 file(s) written")
