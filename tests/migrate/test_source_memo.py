"""migrate's source check, remembered (migrate/source_memo.py): an unchanged tree gets the last
answer without the check, and every input of that answer, changed, is noticed: a file of the tree
edited in place (size and mtime kept), a file the check looked for that appears, the patchsets
(as loaded, and their folders' files), the tree's version, patchctl's version, a file as young as
the check's clock, a damaged memo. On the patched verl 0.6.1 of the migrate tests."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from test_migrate_hashcache import same_size_same_mtime

from patchctl.migrate import source, source_memo, state
from patchctl.migrate.source import SourceCheck, check
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Patchset
from patchctl.target import open_tree

OK = SourceCheck(("uky",), True, True, ())


@pytest.fixture
def tree(verl_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    time.sleep(0.05)  # older than the first check's clock: its answer may be kept
    return verl_tree


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The trees the check itself ran on (a remembered answer runs none)."""
    ran: list[Path] = []
    real = source._check

    def counted(tree: object, patchsets: object) -> object:
        ran.append(tree.root)  # type: ignore[attr-defined]
        return real(tree, patchsets)  # type: ignore[arg-type]

    monkeypatch.setattr(source, "_check", counted)
    return ran


def uky() -> list[Patchset]:
    return load_patchsets(["uky"])


def test_an_unchanged_tree_gets_the_last_answer_without_the_check(tree: Path, checks: list[Path]) -> None:
    assert check(open_tree(tree), uky()) == OK
    assert check(open_tree(tree), uky()) == OK
    assert checks == [tree]  # the second answer was remembered


BREAK = "print('a local tweak')\n"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: (t / "test_components.py").open("a").write(BREAK), id="appended"),
        pytest.param(
            lambda t: same_size_same_mtime(
                t / "test_components.py", (t / "test_components.py").read_text().replace("import", "IMPORT", 1)
            ),
            id="same-size-and-mtime",
        ),
        pytest.param(lambda t: (t / "test_components.py").unlink(), id="removed"),
    ],
)
def test_a_file_the_check_read_changed_is_checked_again(
    tree: Path, checks: list[Path], change: Callable[[Path], object]
) -> None:
    assert check(open_tree(tree), uky()) == OK
    change(tree)
    again = check(open_tree(tree), uky())
    assert not again.ok and again.problems[0].startswith("test-components "), again
    assert len(checks) == 2


def test_a_file_the_check_looked_for_and_did_not_find_is_noticed_when_it_appears(
    tree: Path, checks: list[Path]
) -> None:
    """conflicts.json (apply --conflicts=markers' record) was missing: once there, verify fails."""
    assert check(open_tree(tree), uky()) == OK
    marked = {
        **dict.fromkeys(("upstream", "indent", "gap_sha", "next_sha"), ""),
        **{"patchset": "uky", "patch": "test-components", "path": "test_components.py"},
        **{"gap_lines": 0, "next_lines": 0},
    }
    (tree / ".patchctl" / "conflicts.json").write_text(json.dumps({"conflicts": [marked]}))
    again = check(open_tree(tree), uky())
    assert again.problems == ("test-components missing",), again


def test_other_patchsets_as_loaded_get_their_own_answer(tree: Path, checks: list[Path]) -> None:
    """The same folders, loaded otherwise (a patch left out): the answer is that patchset's."""
    (tree / "test_components.py").unlink()
    assert check(open_tree(tree), uky()).problems == ("test-components missing",)
    (full,) = uky()
    fewer = dataclasses.replace(full, patches=tuple(p for p in full.patches if p.id != "test-components"))
    assert check(open_tree(tree), [fewer]) == OK


def test_a_changed_file_of_a_patchset_s_folder_is_checked_again(tree: Path, tmp_path: Path, checks: list[Path]) -> None:
    """Kinds read files of their patchset's folder while they check (text-hunk's bases): any file
    there changed, the answer is worked out again."""
    kit = tmp_path / "kit" / "uky"
    shutil.copytree(Path(uky()[0].root), kit)
    time.sleep(0.05)
    sets = load_patchsets([str(kit)])
    first = check(open_tree(tree), sets)
    (kit / "files" / "notes.txt").write_text("a file a kind might read\n")
    assert check(open_tree(tree), sets) == first
    assert len(checks) == 2


def test_another_verl_version_or_patchctl_is_checked_again(
    tree: Path, checks: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert check(open_tree(tree), uky()) == OK
    monkeypatch.setattr(source_memo, "__version__", "0.0.0+other")
    assert check(open_tree(tree), uky()) == OK
    version = tree / "verl" / "version" / "version"
    version.write_text("0.7.0\n")
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == 3


def test_an_answer_read_from_a_file_as_young_as_the_clock_is_not_kept(tree: Path, checks: list[Path]) -> None:
    """A file changed within the clock's tick may keep every stat field: its answer is not trusted."""
    young = tree / "test_components.py"
    later = time.time_ns() + 60 * 10**9
    os.utime(young, ns=(later, later))
    assert check(open_tree(tree), uky()) == OK
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: b"{not json",
        lambda doc: json.dumps({"format": 1, "context": doc["context"]}).encode(),
        lambda doc: b"[]",
        lambda doc: json.dumps({**doc, "tree": {}}).encode(),
        lambda doc: json.dumps({**doc, "answer": {"ok": "yes"}}).encode(),
        lambda doc: json.dumps({**doc, "format": 0}).encode(),
        lambda doc: json.dumps({**doc, "answer": {**doc["answer"], "problems": "uky"}}).encode(),
    ],
    ids=[
        "garbage",
        "fields-missing",
        "not-an-object",
        "tree-not-a-list",
        "answer-of-another-shape",
        "old-format",
        "problems-not-a-list",
    ],
)
def test_a_damaged_memo_is_none(tree: Path, checks: list[Path], damage: Callable[[dict[str, object]], bytes]) -> None:
    (tree / "test_components.py").unlink()
    first = check(open_tree(tree), uky())
    memo = source_memo.memo_file(tree, ["uky"])
    memo.write_bytes(damage(json.loads(memo.read_bytes())))
    assert check(open_tree(tree), uky()) == first
    assert len(checks) == 2


def test_an_upgraded_judging_package_is_checked_again(
    tree: Path, checks: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML and packaging judge whether a changed file still loads: a memo from before an
    upgrade of one is none (a stand-in package here, found on the path, never imported)."""
    site = tmp_path / "site"
    (site / "pcjudge").mkdir(parents=True)
    init = site / "pcjudge" / "__init__.py"
    init.write_text("__version__ = '1.0'\n")
    old = time.time() - 60
    os.utime(init, (old, old))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(source_memo, "JUDGES", ("pcjudge",))
    assert check(open_tree(tree), uky()) == OK
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == 1
    init.unlink()
    init.write_text("__version__ = '2.0'\n")  # pip replaces the file: another inode, size and mtime
    os.utime(init, (old + 1, old + 1))
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == 2


def _padded(doc: dict[str, object], size: int) -> bytes:
    """``doc`` as JSON of exactly ``size`` bytes: a field of padding first, so that any byte cut off
    leaves no JSON at all."""
    head, rest = '{"pad": "', '", ' + json.dumps(doc)[1:]
    return (head + "x" * (size - len(head) - len(rest)) + rest).encode()


@pytest.mark.parametrize(("over", "checked"), [(0, 1), (1, 2)], ids=["at-the-limit", "one-byte-over"])
def test_a_memo_past_its_size_limit_is_none(tree: Path, checks: list[Path], over: int, checked: int) -> None:
    """A memo of LIMIT bytes is read whole and used; one byte more and it is none (never parsed)."""
    assert check(open_tree(tree), uky()) == OK
    memo = source_memo.memo_file(tree, ["uky"])
    memo.write_bytes(_padded(json.loads(memo.read_bytes()), source_memo.LIMIT + over))
    assert memo.stat().st_size == source_memo.LIMIT + over
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == checked


def test_python_s_bytecode_in_a_patchset_s_folder_is_not_a_change(
    tree: Path, tmp_path: Path, checks: list[Path]
) -> None:
    """__pycache__ comes and goes with whoever imports a patchset's Python: no kind reads it."""
    kit = tmp_path / "kit" / "uky"
    shutil.copytree(Path(uky()[0].root), kit)
    time.sleep(0.05)
    sets = load_patchsets([str(kit)])
    assert check(open_tree(tree), sets) == OK
    (kit / "__pycache__").mkdir()
    (kit / "__pycache__" / "hooks.cpython-311.pyc").write_bytes(b"\x00" * 16)
    assert check(open_tree(tree), sets) == OK
    assert len(checks) == 1


def test_a_judging_package_not_installed_or_without_a_spec_leaves_the_memo_working(
    tree: Path, checks: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML missing, or a module put in sys.modules without a spec (find_spec raises then): the
    memo is kept and used as for an installed one."""
    monkeypatch.setitem(sys.modules, "pcjudge_nospec", types.ModuleType("pcjudge_nospec"))
    monkeypatch.setattr(source_memo, "JUDGES", ("pcjudge_nospec", "pcjudge_absent"))
    assert check(open_tree(tree), uky()) == OK
    assert check(open_tree(tree), uky()) == OK
    assert len(checks) == 1


def test_a_file_whose_inode_changed_in_the_clock_s_tick_is_too_young_to_keep(tree: Path) -> None:
    """A chmod (or a rename over the file) leaves its mtime old and moves its ctime: a file whose
    ctime is the very tick of the clock read before the check keeps the answer out; a tick later, in."""
    target, t = tree / "test_components.py", open_tree(tree)
    old = target.stat().st_mtime_ns - 10**9  # an mtime well before the chmod's ctime, on any clock
    os.utime(target, ns=(old, old))
    os.chmod(target, 0o600)
    st = target.stat()
    assert st.st_mtime_ns < st.st_ctime_ns
    answer = OK.to_json()
    source_memo.keep(t.root, t.version, uky(), ["test_components.py"], st.st_ctime_ns, answer)
    assert source_memo.recall(t.root, t.version, uky()) is None
    source_memo.keep(t.root, t.version, uky(), ["test_components.py"], st.st_ctime_ns + 1, answer)
    assert source_memo.recall(t.root, t.version, uky()) == answer
