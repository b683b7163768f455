"""The conflict workflow for every kind that can conflict (issue 27.6), on small forks built here
(:mod:`tests.patchsets.conflict_forks`): capture, upstream changes the same piece, ``apply
--conflicts=markers`` writes the 3-way view at the kind's place, ``verify`` says it needs
resolution, the user edits it, ``refresh`` records it, ``verify`` passes, the next version with
the same conflict gets it replayed, and revert gives upstream's bytes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.clirun import run
from tests.patchsets.conflict_forks import BASE, CASES, MANIFEST, build, capture, snapshot, view


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


SERVER = "engine = AsyncLLM.from_vllm_config(\n    vllm_config=cfg,\n    disable_log_requests={value},\n)\n"
SCRIPT = "set -x\nexport VLLM_USE_V1={value}\npython3 -m verl.trainer.main_ppo a=1\n"
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
    from patchctl.patchsets.placement import candidate
    from patchctl.patchsets.placement.places import Params

    text = "def f():\n    a = fetch_everything(1, 2, 3)\n    b = 2\n    return b\n"
    p = Params("statements", "f", ("x = totally_other()",), ("b = 2",), "    ", "", "    c = 3  # Uky\n", None, ())
    found = candidate.propose(text, p, "f.py")
    assert found is not None and (found.first, found.last) == (3, 2), found
    assert "before line 3, which reads most like its anchor `b = 2`" in found.how
