"""The conflict workflow for every kind that can conflict (issue 27.6), on small forks built here:
capture, upstream changes the same piece, ``apply --conflicts=markers`` writes the 3-way view at
the kind's place, ``verify`` says it needs resolution, the user edits it, ``refresh`` records it,
``verify`` passes, the next version with the same conflict gets it replayed, and revert gives
upstream's bytes back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.clirun import run

BASE = {
    "verl/__init__.py": "",
    "verl/c.yaml": "trainer:\n  total_epochs: 3\n  project: a\nactor:\n  lr: 1\n",
    "requirements.txt": "numpy\npandas\nray\n",
    "README.md": "# T\n\nline a\nline b\nline c\nline d\n",
    "old.txt": "gone\n",
    "verl/moved.py": "x = 1\n",
}

#: kind -> (the fork's edit, upstream's edit, the file marked, upstream's text there, the
#: patch's original, its change, what the user resolves it to); an edit maps paths to text (None: deleted)
CASES = {
    "config-key": (
        {"verl/c.yaml": BASE["verl/c.yaml"].replace("epochs: 3", "epochs: 5")},
        {"verl/c.yaml": BASE["verl/c.yaml"].replace("epochs: 3", "epochs: 4")},
        "verl/c.yaml",
        "  total_epochs: 4\n",
        "  total_epochs: 3\n",
        "  total_epochs: 5\n",
        "  total_epochs: 6  # ours, past upstream's 4\n",
    ),
    "requirement": (
        {"requirements.txt": "numpy\npandas==2.0\nray\n"},
        {"requirements.txt": "numpy\npandas>=1.5\nray\n"},
        "requirements.txt",
        "pandas>=1.5\n",
        "pandas\n",
        "pandas==2.0\n",
        "pandas>=2.0\n",
    ),
    "text-hunk": (
        {"README.md": BASE["README.md"].replace("line b", "line B fork")},
        {"README.md": BASE["README.md"].replace("line b", "line b upstream")},
        "README.md",
        BASE["README.md"].replace("line b", "line b upstream"),
        BASE["README.md"],
        BASE["README.md"].replace("line b", "line B fork"),
        BASE["README.md"].replace("line b", "line B fork, upstream's too"),
    ),
    "add-file": (
        {"verl/added.txt": "ours\n"},
        {"verl/added.txt": "theirs\n"},
        "verl/added.txt",
        "theirs\n",
        "",
        "ours\n",
        "theirs\nours\n",
    ),
    "rename-file": (
        {"verl/moved.py": None, "verl/new/moved.py": "x = 1\n"},
        {"verl/new/moved.py": "y = 2\n"},
        "verl/new/moved.py",
        "y = 2\n",
        "",
        "x = 1\n",
        "y = 2\nx = 1\n",
    ),
    "delete-file": (
        {"old.txt": None},
        {"old.txt": "gone, but upstream edited it\n"},
        "old.txt",
        "gone, but upstream edited it\n",
        "",
        "",
        None,  # the user deletes it all the same
    ),
}


def build(root: Path, *edits: dict[str, str | None]) -> Path:
    files: dict[str, str | None] = dict(BASE)
    for edit in edits:
        files.update(edit)
    for rel, text in files.items():
        if text is not None:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def capture(
    tmp: Path, fork_edit: dict[str, str | None], kind: str, base_edit: dict[str, str | None] | None = None
) -> Path:
    base, fork = build(tmp / "base", base_edit or {}), build(tmp / "fork", base_edit or {}, fork_edit)
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp / "ps"))
    assert code == 0 and f" {kind} " in out, out
    manifest = tmp / "ps" / "patchset.toml"
    if kind == "delete-file":  # the default deletes a changed file all the same; this patch asks first
        text = manifest.read_text(encoding="utf-8")
        manifest.write_text(text.replace("[patch.params]\n", '[patch.params]\nif_changed = "conflict"\n'), "utf-8")
    return tmp / "ps"


def view(text: str) -> tuple[str, str, str, str]:
    """Upstream's side, the original, the change, and the file with the conflict cut out."""
    m = re.search(
        r"<<<<<<< upstream: [^\n]*\n(.*?)\|\|\|\|\|\|\| [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n", text, re.S
    )
    assert m is not None, text
    return m.group(1), m.group(2), m.group(3), text[: m.start()] + "\0" + text[m.end() :]


@pytest.mark.parametrize("kind", list(CASES))
def test_a_conflict_of_every_kind_is_marked_resolved_refreshed_and_replayed(kind: str, tmp_path: Path) -> None:
    fork_edit, up_edit, rel, upstream, ours, theirs, resolved = CASES[kind]
    ps = capture(tmp_path, fork_edit, kind)
    tree = build(tmp_path / "v1", up_edit)
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")
    (row,) = json.loads(out)["results"]
    assert code == 1 and row["status"] == "conflict-marked" and "patchctl refresh" in row["reason"], row
    up, orig, change, rest = view((tree / rel).read_text(encoding="utf-8"))
    assert (up, orig, change) == (upstream, ours, theirs)
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps))
    assert code == 1 and "needs resolution" in out

    if resolved is None:
        (tree / rel).unlink()
    else:
        (tree / rel).write_text(rest.replace("\0", resolved), encoding="utf-8")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 0 and "1 resolution(s) recorded" in out, out
    assert (resolved is None) == ("the file is deleted" in out) == (not (tree / rel).exists())
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps))
    assert code == 0, out

    again = build(tmp_path / "v2", up_edit, {"verl/other.py": "z = 3\n"})  # the next version: same conflict
    pristine = snapshot(again)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps), "--json")
    (row,) = json.loads(out)["results"]
    assert code == 0 and row["status"] == "applied" and "the resolution recorded on" in row["reason"], row
    if resolved is None:
        assert not (again / rel).exists()
    else:
        assert (again / rel).read_text(encoding="utf-8") == rest.replace("\0", resolved)
    assert run("verify", "--target", str(again), "--patchset", str(ps))[0] == 0
    code, out = run("revert", "--target", str(again), "--patchset", str(ps))
    assert code == 0 and snapshot(again) == pristine, out


def test_a_key_whose_parent_upstream_removed_is_marked_at_its_nearest_ancestor(tmp_path: Path) -> None:
    yaml = "trainer:\n  logger:\n    name: a\n  project: a\nactor:\n  lr: 1\n"
    fork = {"verl/c.yaml": yaml.replace("    name: a\n", "    name: a\n    level: 2\n")}
    ps = capture(tmp_path, fork, "config-key", {"verl/c.yaml": yaml})
    tree = build(tmp_path / "v1", {"verl/c.yaml": "trainer:\n  project: a\nactor:\n  lr: 1\n"})
    out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")[1]
    (row,) = json.loads(out)["results"]
    assert row["status"] == "conflict-marked" and "the end of key trainer" in row["reason"], row
    text = (tree / "verl/c.yaml").read_text(encoding="utf-8")
    assert (
        text.index("  project: a\n")
        < text.index("<<<<<<<")
        < text.index("  logger:\n    level: 2\n")
        < text.index("actor:")
    )
    _, _, change, rest = view(text)
    (tree / "verl/c.yaml").write_text(rest.replace("\0", change), encoding="utf-8")  # the fork's side taken
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    again = build(tmp_path / "v2", {"verl/c.yaml": "trainer:\n  project: a\nactor:\n  lr: 1\n"})
    pristine = snapshot(again)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps))
    assert code == 0 and "  logger:\n    level: 2\nactor:" in (again / "verl/c.yaml").read_text(encoding="utf-8"), out
    assert run("verify", "--target", str(again), "--patchset", str(ps))[0] == 0
    assert run("revert", "--target", str(again), "--patchset", str(ps))[0] == 0 and snapshot(again) == pristine


def test_a_hunk_nothing_matches_exactly_is_marked_at_the_most_alike_window(tmp_path: Path) -> None:
    fork_edit, _, rel, *_ = CASES["text-hunk"]
    ps = capture(tmp_path, fork_edit, "text-hunk")
    moved = "# T\n\nintro\n\nline a\nline b2\nline c2\nline d\n"
    tree = build(tmp_path / "v1", {"README.md": moved})
    out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")[1]
    (row,) = json.loads(out)["results"]
    assert row["status"] == "conflict-marked" and "of the hunk's 6 lines match" in row["reason"], row
    up, orig, change, _ = view((tree / rel).read_text(encoding="utf-8"))
    assert "line b2\n" in up and orig == BASE["README.md"] and "line B fork\n" in change


def test_a_binary_conflict_says_why_it_gets_no_markers(tmp_path: Path) -> None:
    blob = {"verl/logo.png": None}
    base = build(tmp_path / "base")
    fork = build(tmp_path / "fork", blob)
    (fork / "verl/logo.png").write_bytes(b"\x89PNG\r\n\x00ours")
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp_path / "ps"))
    assert code == 0 and " blob " in out, out
    tree = build(tmp_path / "v1")
    (tree / "verl/logo.png").write_bytes(b"\x89PNG\r\n\x00theirs")
    pristine = snapshot(tree)
    for markers in (["--conflicts=markers"], []):  # the plain conflict's line (and so matrix's) says it too
        code, out = run("apply", "--target", str(tree), "--patchset", str(tmp_path / "ps"), *markers, "--json")
        (row,) = json.loads(out)["results"]
        assert code == 1 and row["status"] == "conflict", row
        assert row["reason"].count("no conflict markers: a binary file") == 1, row
    assert snapshot(tree) == pristine


def test_markers_left_in_the_file_fail_verify_and_refresh(tmp_path: Path) -> None:
    fork_edit, up_edit, *_ = CASES["config-key"]
    ps = capture(tmp_path, fork_edit, "config-key")
    tree = build(tmp_path / "v1", up_edit)
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "still has a conflict marker at line" in out
    (tree / ".patchctl" / "conflicts.json").unlink()  # the list dropped by hand, the markers left
    code, out = run("verify", "--target", str(tree), "--patchset", str(ps))
    assert code == 1 and "verify: FAILED" in out, out
    assert not (ps / "resolutions.toml").exists()


@pytest.mark.parametrize("where", ["../outside.yaml", ".git/config", "sub/../../outside"])
def test_a_conflict_list_naming_a_path_outside_the_tree_or_in_git_is_refused(tmp_path: Path, where: str) -> None:
    fork_edit, up_edit, *_ = CASES["config-key"]
    ps = capture(tmp_path, fork_edit, "config-key")
    tree = build(tmp_path / "v1", up_edit)
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    state = tree / ".patchctl" / "conflicts.json"
    doc = json.loads(state.read_text(encoding="utf-8"))
    doc["conflicts"][0]["path"] = where
    state.write_text(json.dumps(doc), encoding="utf-8")
    code, out = run("refresh", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and "the list of conflicts is damaged" in out, out
    assert (tree / ".git" / "config").read_text(encoding="utf-8") == "[core]\n"
    assert not (ps / "resolutions.toml").exists()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('path = "../../etc/passwd"', "unknown key"),
        ('path = ".git/hooks/pre-commit"', "unknown key"),
        ('patch = "../../etc"', "is no patch of the manifest"),
        ('after = ""', "only a delete-file's may be"),
    ],
)
def test_a_resolutions_file_naming_a_path_or_emptying_a_file_is_refused(tmp_path: Path, line: str, says: str) -> None:
    fork_edit, up_edit, rel, _, _, _, resolved = CASES["add-file"]
    ps = capture(tmp_path, fork_edit, "add-file")
    tree = build(tmp_path / "v1", up_edit)
    run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    (tree / rel).write_text(str(resolved), encoding="utf-8")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    file = ps / "resolutions.toml"
    text = file.read_text(encoding="utf-8")
    key = line.split(" = ")[0]
    text = re.sub(rf"^{key} = (?:'''.*?'''|\"[^\n]*\")\n", "", text, flags=re.S | re.M) if key != "path" else text
    file.write_text(text.replace("[[resolution]]\n", f"[[resolution]]\n{line}\n"), encoding="utf-8")
    again = build(tmp_path / "v2", up_edit)
    pristine = snapshot(again)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps))
    assert code == 2 and "resolutions.toml" in out and says in out, out
    assert snapshot(again) == pristine


SERVER = "engine = AsyncLLM.from_vllm_config(\n    vllm_config=cfg,\n    disable_log_requests={value},\n)\n"
SCRIPT = "set -x\nexport VLLM_USE_V1={value}\npython3 -m verl.trainer.main_ppo a=1\n"
MANIFEST = """[patchset]
name = "ps"
tag = "Uky"

[[patch]]
id = "{id}"
title = "t"
why = "w"
kind = "{kind}"
target = ["{target}"]

[patch.params]
{params}
"""
#: kind -> (file, upstream's text, the manifest's params, the change marked, what the user resolves it to)
BY_SYNTAX = {
    "keyword-rename": (
        "verl/server.py",
        SERVER.format(value="args.quiet"),
        'call = "AsyncLLM.from_vllm_config"\nold_keyword = "disable_log_requests"\n'
        'new_keyword = "enable_log_requests"\nold_value = "args.disable_log_requests"\n'
        'new_value = "args.enable_log_requests"',
        "    # disable_log_requests=args.disable_log_requests, # Uky\n"
        "    enable_log_requests=args.enable_log_requests, # Uky\n",
        "    # disable_log_requests=args.quiet, # Uky\n    enable_log_requests=not args.quiet, # Uky\n",
    ),
    "shell-env": (
        "run.sh",
        SCRIPT.format(value="0"),
        'env = ["VLLM_USE_V1=1"]',
        "export VLLM_USE_V1=1  # Uky\n",
        "export VLLM_USE_V1=0  # Uky: upstream's 0 kept, tagged\n",
    ),
}


@pytest.mark.parametrize("kind", list(BY_SYNTAX))
def test_a_value_conflict_of_a_by_syntax_kind_is_marked_and_replayed(kind: str, tmp_path: Path) -> None:
    rel, upstream, params, change, resolved = BY_SYNTAX[kind]
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(MANIFEST.format(id="p", kind=kind, target=rel, params=params), encoding="utf-8")
    tree = build(tmp_path / "v1", {rel: upstream})
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers", "--json")
    (row,) = json.loads(out)["results"]
    assert code == 1 and row["status"] == "conflict-marked", row
    _, _, theirs, rest = view((tree / rel).read_text(encoding="utf-8"))
    assert theirs == change
    (tree / rel).write_text(rest.replace("\0", resolved), encoding="utf-8")
    assert run("refresh", "--target", str(tree), "--patchset", str(ps))[0] == 0
    assert run("verify", "--target", str(tree), "--patchset", str(ps))[0] == 0
    again = build(tmp_path / "v2", {rel: upstream, "verl/other.py": "z = 3\n"})
    pristine = snapshot(again)
    code, out = run("apply", "--target", str(again), "--patchset", str(ps))
    assert code == 0 and resolved in (again / rel).read_text(encoding="utf-8"), out
    assert run("revert", "--target", str(again), "--patchset", str(ps))[0] == 0 and snapshot(again) == pristine


def test_a_structural_place_comes_from_the_anchor_below_when_the_one_above_is_gone() -> None:
    from patchctl.patchsets.kinds import candidate
    from patchctl.patchsets.kinds.places import Params

    text = "def f():\n    a = fetch_everything(1, 2, 3)\n    b = 2\n    return b\n"
    p = Params("statements", "f", ("x = totally_other()",), ("b = 2",), "    ", "", "    c = 3  # Uky\n", None, ())
    found = candidate.propose(text, p, "f.py")
    assert found is not None and (found.first, found.last) == (3, 2), found
    assert "before line 3, which reads most like its anchor `b = 2`" in found.how


@pytest.mark.parametrize(("last", "conflict_at_end"), [("ray", False), ("pandas", True)])
def test_a_file_without_a_final_line_break_keeps_it_unless_a_marker_follows(
    tmp_path: Path, last: str, conflict_at_end: bool
) -> None:
    reqs = "numpy\npandas\nray" if last == "ray" else "numpy\nray\npandas"
    ps = tmp_path / "ps"
    ps.mkdir()
    params = 'package = "pandas"\nwas = "pandas"\nnow = "pandas==2.0"'
    manifest = MANIFEST.format(id="requirements-pandas", kind="requirement", target="requirements.txt", params=params)
    (ps / "patchset.toml").write_text(manifest, encoding="utf-8")
    tree = build(tmp_path / "v1", {"requirements.txt": reqs.replace("pandas", "pandas>=1.5")})
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--conflicts=markers")
    assert code == 1 and "conflict-marked" in out, out
    text = (tree / "requirements.txt").read_text(encoding="utf-8")
    assert text.endswith(">>>>>>> requirements-pandas: the patch's change\n") == conflict_at_end, text
    assert text.endswith("\n") == conflict_at_end
    assert "pandas>=1.5\n||||||| " in text  # no marker joins a line
