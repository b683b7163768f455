"""capture on the edit shapes real forks have that used to abort it (issue 27, requirement 1).

Each fork is verl 0.6.1 with the hand edits of :mod:`tests.capture.forkmaker` plus one shape:
a blank line added or removed, whitespace changed, a statement deleted. Capture must write a
proven patchset for what it can express, exit 0, and say in its notes what it left out and
why; no message may name the scratch folder it works in.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from click.testing import CliRunner
from tests.capture.forkmaker import GSM8K, TRACKING, make_fork

from patchctl.cli.main import cli

#: the one-blank-line gap between two `if` statements of extract_solution
GAP = "        solution_str = solution_str[-_SOLUTION_CLIP_CHARS:]\n\n    if method"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, (result.stdout if "--json" in args and result.stdout else result.output)


def edit(tree: Path, rel: str, old: str, new: str) -> None:
    path = tree / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def fork_of(release_tree) -> Path:
    tree = release_tree("0.6.1")
    make_fork(tree)
    return tree


def test_blank_line_edits_are_skipped_with_a_note(release_tree, tmp_path: Path) -> None:
    fork = fork_of(release_tree)
    edit(fork, GSM8K, GAP, GAP.replace("\n\n", "\n"))  # a blank line removed
    edit(fork, TRACKING, "        self.logger = {}\n", "        self.logger = {}\n\n")  # one added
    edit(
        fork, TRACKING, '        if "trackio" in default_backend:\n', '        if "trackio" in default_backend:   \n'
    )  # trailing spaces
    code, out = run(
        "capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "p"), "--all", "--json"
    )
    assert code == 0, out
    doc = json.loads(out)
    assert doc["out"] == str(tmp_path / "p") and doc["left_out"] == []
    assert len([p for p in doc["patches"] if p["path"] in (GSM8K, TRACKING)]) == 4  # the hand edits
    skipped = [n for n in doc["notes"] if "only blank lines or trailing spaces" in n]
    assert {n.split(":")[0] for n in skipped} == {GSM8K, TRACKING} and len(skipped) == 3, doc["notes"]
    assert ".capture-" not in out
    code, out = run("verify", "--target", str(fork), "--patchset", str(tmp_path / "p"))
    assert code == 0, out


def test_a_deleted_statement_is_captured(release_tree, tmp_path: Path) -> None:
    fork = fork_of(release_tree)
    edit(fork, GSM8K, '    assert method in ["strict", "flexible"]\n\n', "")
    code, out = run(
        "capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "p"), "--all", "--json"
    )
    assert code == 0, out
    doc = json.loads(out)
    assert doc["left_out"] == [] and any(p["path"] == GSM8K and p["line"] == 20 for p in doc["patches"]), doc
    assert "assert method" not in (fork / GSM8K).read_text()
    pristine = tmp_path / "pristine"
    shutil.copytree(fork, pristine, symlinks=True)
    subprocess.run(["git", "-C", str(pristine), "checkout", "-q", "--", "."], check=True)
    code, out = run("apply", "--target", str(pristine), "--patchset", str(tmp_path / "p"))
    assert code == 0, out
    assert (pristine / GSM8K).read_text() == (fork / GSM8K).read_text()


def test_a_written_patchset_exits_0_and_names_what_it_left_out(release_tree, tmp_path: Path) -> None:
    fork = fork_of(release_tree)
    mine = fork / "verl/utils/tracking.py"
    mine.write_text(mine.read_text() + "def broken(:  # Uky\n")  # no kind carries what does not parse
    code, out = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(tmp_path / "p"))
    assert code == 0, out
    assert "left out: verl/utils/tracking.py" in out and "1 edit(s) left out" in out
    assert "proven byte-identical" not in out  # not everything the fork changed is re-created
    code, out = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--dry-run")
    assert code == 1, out  # nothing written: the left-out edit is the answer


def test_a_directory_base_is_named_by_commit_or_content(release_tree, tmp_path: Path) -> None:
    fork = fork_of(release_tree)
    base = tmp_path / "base"
    shutil.copytree(fork, base, symlinks=True)
    subprocess.run(["git", "-C", str(base), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(base), "clean", "-fdq"], check=True)
    (base / "verl" / "version" / "version").write_text("0.0.1\n")  # a stale version string
    subprocess.run(
        ["git", "-C", str(base), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "bump"], check=True
    )
    head = subprocess.run(
        ["git", "-C", str(base), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0, out
    assert f"commit {head[:12]}" in doc["base"] and "0.0.1" not in doc["base"], doc["base"]
    plain = tmp_path / "plain"
    shutil.copytree(base, plain, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    _, out = run("capture", "--from", str(fork), "--base", str(plain), "--dry-run", "--json")
    first = json.loads(out)["base"]
    assert "content sha256:" in first and "0.0.1" not in first, first
    (plain / "README.md").write_text("changed\n")
    _, out = run("capture", "--from", str(fork), "--base", str(plain), "--dry-run", "--json")
    assert json.loads(out)["base"] != first


def test_a_draft_the_loader_refuses_is_left_out_not_fatal(tmp_path: Path, monkeypatch) -> None:
    """A planted capture bug (a patch drafted with ``occurrence = 0``): that edit is left out
    with the loader's words, the other file's edit is written, and no message names the
    scratch folder."""
    from tests.capture.test_capture_refuses import capture

    from patchctl.capture import model

    table = model.Draft.table

    def broken(self, fork: str, base: str):
        doc = table(self, fork, base)
        if self.path == "bad.py":
            doc["params"] = {**doc["params"], "occurrence": 0}
        return doc

    monkeypatch.setattr(model.Draft, "table", broken)
    code, doc, human = capture(
        tmp_path,
        {"bad.py": "x = 1\n", "good.py": "y = 1\n"},
        {"bad.py": "x = 1\nz = 2  # Uky\n", "good.py": "y = 1\nw = 2  # Uky\n"},
    )
    assert code == 0, human
    assert [p["path"] for p in doc["patches"]] == ["good.py"]
    assert doc["left_out"][0]["path"] == "bad.py" and "params.occurrence" in doc["left_out"][0]["reason"]
    assert ".capture-" not in json.dumps(doc) + human


def test_an_error_never_names_the_removed_scratch_folder(tmp_path: Path, monkeypatch) -> None:
    from tests.capture.test_capture_refuses import run as run3
    from tests.capture.test_capture_refuses import tree

    from patchctl.capture import proof
    from patchctl.errors import PatchctlError

    def fails(where: Path):
        raise PatchctlError(f"{where / 'patchset.toml'}: cannot be read")

    monkeypatch.setattr(proof, "load_patchset", fails)
    base, fork = tree(tmp_path / "b", {"m.py": "x = 1\n"}), tree(tmp_path / "f", {"m.py": "x = 1\ny = 2  # Uky\n"})
    code, _, out = run3("capture", "--from", str(fork), "--base", str(base), "--out", str(tmp_path / "o"))
    assert code == 2 and "<capture's scratch folder, removed>/patchset/patchset.toml: cannot be read" in out, out
    assert ".o.capture-" not in out and not (tmp_path / "o").exists()
