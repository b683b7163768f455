"""A README's edits travel one hunk per patch (issue 38 requirement 2): on verl 0.6.1's real
README, one upstream change between the fork's edits used to conflict them all, as one text-hunk
spanning every edit whose context touched the next; ``git apply -3`` merges each of them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.clirun import run

EDITS = {  # README line (1-based) -> what the fork appends to it
    30: " Ours: the hybrid controller.  # Uky",
    32: " Ours: modular.  # Uky",
    36: " Ours: Qwen too.  # Uky",
    40: " Ours: faster.  # Uky",
}


def _commit(tree: Path) -> None:
    """Upstream's change as a commit: apply refuses a file with uncommitted changes."""
    env = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
    subprocess.run(["git", "-C", str(tree), "commit", "-qam", "upstream"], check=True, env={**os.environ, **env})


def _edited(text: str, edits: dict[int, str]) -> str:
    lines = text.splitlines(keepends=True)
    for n, tail in edits.items():
        lines[n - 1] = lines[n - 1].rstrip("\n") + tail + "\n"
    return "".join(lines)


def test_each_readme_hunk_is_its_own_patch_and_lands_beside_an_upstream_edit(release_tree, tmp_path: Path) -> None:
    base = release_tree("0.6.1")
    fork = shutil.copytree(base, tmp_path / "fork", symlinks=True)
    readme = (base / "README.md").read_text()
    (fork / "README.md").write_text(_edited(readme, EDITS))
    out = tmp_path / "ps"
    code, text = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--json")
    assert code == 0, text
    ids = [p["id"] for p in json.loads(text)["patches"]]
    assert ids == ["readme-hunk", "readme-hunk-2", "readme-hunk-3", "readme-hunk-4"]

    # upstream rewrites line 34, between the fork's second and third edits
    target = shutil.copytree(base, tmp_path / "upstream", symlinks=True)
    lines = readme.splitlines(keepends=True)
    assert lines[33].startswith("- **Flexible device mapping**")
    lines[33] = "- **Flexible device mapping**: upstream's new words.\n"
    (target / "README.md").write_text("".join(lines))
    _commit(target)
    code, text = run("apply", "--target", str(target), "--patchset", str(out), "--json")
    assert code == 0, text
    assert {r["patch"]: r["status"] for r in json.loads(text)["results"]} == dict.fromkeys(ids, "applied")
    want = _edited("".join(lines), EDITS)
    assert (target / "README.md").read_text() == want


def test_an_edit_upstream_rewrote_conflicts_alone(release_tree, tmp_path: Path) -> None:
    """Upstream rewrites the very line of one edit: that patch is a conflict naming the line, and
    the other edits still land (``--conflicts markers`` writes them beside the marked one)."""
    base = release_tree("0.6.1")
    fork = shutil.copytree(base, tmp_path / "fork", symlinks=True)
    readme = (base / "README.md").read_text()
    (fork / "README.md").write_text(_edited(readme, EDITS))
    out = tmp_path / "ps"
    assert run("capture", "--from", str(fork), "--base", str(base), "--out", str(out))[0] == 0
    target = shutil.copytree(base, tmp_path / "upstream", symlinks=True)
    lines = readme.splitlines(keepends=True)
    lines[31] = "- **Modular APIs**: upstream said it another way.\n"
    (target / "README.md").write_text("".join(lines))
    _commit(target)
    code, text = run("apply", "--target", str(target), "--patchset", str(out), "--dry-run", "--json")
    results = {r["patch"]: r for r in json.loads(text)["results"]}
    assert code != 0
    assert results["readme-hunk-2"]["status"] == "conflict"
    assert "README.md:32" in results["readme-hunk-2"]["reason"], results["readme-hunk-2"]
    code, text = run("apply", "--target", str(target), "--patchset", str(out), "--conflicts", "markers", "--json")
    results = {r["patch"]: r for r in json.loads(text)["results"]}
    assert {k: r["status"] for k, r in results.items()} == {
        "readme-hunk": "applied",
        "readme-hunk-2": "conflict-marked",
        "readme-hunk-3": "applied",
        "readme-hunk-4": "applied",
    }
    now = (target / "README.md").read_text()
    assert EDITS[30] in now and EDITS[36] in now and EDITS[40] in now
    assert now.count(">>>>>>> readme-hunk-2") == 1 and ">>>>>>> readme-hunk\n" not in now  # one marked region


def test_a_hunk_its_lines_do_not_pin_down_joins_its_neighbour(tmp_path: Path) -> None:
    """A Markdown list the fork edits, a few lines below another edit, where the list with its
    context occurs again further down: alone, apply would place it by its line number only, on
    a drifted upstream maybe in the copy. It joins the edit above, whose lines pin it down, and
    the patchset still gives the fork's file."""
    block = "- a\n- b\n- c\n- e\n- f\n- g\n"
    base_text = "# Steps\n\nStart here.\n\n" + block + "\n" + block + "\nThe end.\n"
    fork_text = base_text.replace("Start here.\n", "Start here, ours.\n", 1).replace("- c\n", "- c\n- d\n", 1)
    base = tmp_path / "base"
    fork = tmp_path / "fork"
    for root, text in ((base, base_text), (fork, fork_text)):
        (root / "verl").mkdir(parents=True)
        (root / "verl" / "__init__.py").write_text("")
        (root / "STEPS.md").write_text(text)
    out = tmp_path / "ps"
    code, text = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--all", "--json")
    assert code == 0, text
    doc = json.loads(text)
    assert [p["id"] for p in doc["patches"]] == ["steps-hunk"] and doc["outside"] == [], doc
    target = shutil.copytree(base, tmp_path / "target")
    assert run("apply", "--patchset", str(out), "--target", str(target))[0] == 0
    assert (target / "STEPS.md").read_text() == fork_text


def test_hunks_are_the_ones_git_diff_shows(tmp_path: Path) -> None:
    """A list with repeated lines, where difflib pairs a far blank line and bundles two edits
    that ``git diff`` (and so ``git apply -3``) keeps apart: capture follows git's hunks."""
    words = {"d": "- [ ] test", "b": "- [ ] build", "a": "- [ ] lint", "c": "- [ ] docs", "x": "", "y": "- [ ] ours"}

    def text(keys: str) -> str:
        return "".join(words[k] + "\n" for k in keys)

    base_text, fork_text = text("dddbaxcxcxxdcx"), text("dddbaycxxxxycx")
    base, fork = tmp_path / "base", tmp_path / "fork"
    for root, body in ((base, base_text), (fork, fork_text)):
        (root / "verl").mkdir(parents=True)
        (root / "verl" / "__init__.py").write_text("")
        (root / "TODO.md").write_text(body)
    out = tmp_path / "ps"
    code, got = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--all", "--json")
    assert code == 0, got
    seen = subprocess.run(
        ["git", "diff", "--no-index", "-U0", "base/TODO.md", "fork/TODO.md"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    starts = [int(h.split()[1].lstrip("-").split(",")[0]) for h in seen.splitlines() if h.startswith("@@")]
    assert len(starts) == 3
    assert len(json.loads(got)["patches"]) == 3
    target = shutil.copytree(base, tmp_path / "target")
    assert run("apply", "--patchset", str(out), "--target", str(target))[0] == 0
    assert (target / "TODO.md").read_text() == fork_text
