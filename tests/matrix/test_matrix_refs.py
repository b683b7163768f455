"""`patchctl matrix --repo`: git refs of a real local checkout, conflicts, ambiguity, exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import git
from tests.matrix.matrix_helpers import SERVER, commit_all, commit_release, invoke, listing

CALL = "        engine_client = AsyncLLM.from_vllm_config("


def test_refs_of_a_local_checkout(verl_repo: Callable[[], Path], tmp_path: Path) -> None:
    repo = verl_repo()
    commit_release(repo, "0.6.0", "v0.6.0", tmp_path)
    commit_release(repo, "0.6.1", "v0.6.1", tmp_path)
    head = git(repo, "rev-parse", "HEAD").strip()
    before = listing(repo)

    result = invoke("matrix", "--repo", str(repo), "--versions", "v0.6.0,main,verl==0.7.0", "--json")

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(c["label"], c["kind"], c["version"]) for c in doc["versions"]] == [
        ("v0.6.0", "ref", "0.6.0"),
        ("main", "ref", "0.6.1"),
        ("0.7.0", "release", "0.7.0"),
    ]
    assert doc["versions"][0]["commit"] == git(repo, "rev-parse", "v0.6.0").strip()
    assert doc["versions"][1]["commit"] == head
    cells = {(c["patch"], c["version"]): c["status"] for c in doc["cells"]}
    assert [cells["vllm-enable-log-requests", v] for v in ("v0.6.0", "main", "0.7.0")] == [
        "applied",
        "applied",
        "superseded-upstream",
    ]
    assert [cells["triton-cuda-stubs", v] for v in ("v0.6.0", "main", "0.7.0")] == ["applied"] * 3
    assert doc["first_superseded"]["vllm-enable-log-requests"] == "0.7.0"
    # the checkout is read, never written: same files, same .git, no worktree, clean status
    assert listing(repo) == before
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD").strip() == head


def _conflict_repo(verl_repo: Callable[[], Path], tmp_path: Path) -> Path:
    """Tags: base (verl 0.6.1), conflict (the keyword's value changed), ambiguous (the call twice)."""
    repo = verl_repo()
    commit_release(repo, "0.6.1", "base", tmp_path)
    server = repo / SERVER
    pristine = server.read_text()
    server.write_text(
        pristine.replace("disable_log_requests=engine_args.disable_log_requests,", "disable_log_requests=True,")
    )
    commit_all(repo, "local change", "conflict")
    call = pristine[pristine.index(CALL) :]
    call = call[: call.index(")\n") + 2]
    server.write_text(pristine.replace(call, call + call))
    commit_all(repo, "duplicate the call", "ambiguous")
    return repo


def test_conflict_and_ambiguous_fail_the_matrix(verl_repo: Callable[[], Path], tmp_path: Path) -> None:
    repo = _conflict_repo(verl_repo, tmp_path)

    result = invoke("matrix", "--repo", str(repo), "--versions", "base,conflict,ambiguous", "--json")

    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    cells = {(c["patch"], c["version"]): c for c in doc["cells"]}
    assert [cells["vllm-enable-log-requests", v]["status"] for v in ("base", "conflict", "ambiguous")] == [
        "applied",
        "conflict",
        "ambiguous",
    ]
    assert "disable_log_requests=True" in cells["vllm-enable-log-requests", "conflict"]["reason"]
    assert "at lines 329, 335" in cells["vllm-enable-log-requests", "ambiguous"]["reason"]
    assert doc["problems"]["vllm-enable-log-requests"] == ["conflict", "ambiguous"]
    assert doc["problems"]["triton-cuda-stubs"] == []
    assert doc["ok"] is False
    # all-or-nothing inside each scratch copy: a failed column writes nothing there
    assert [c["written"] for c in doc["versions"]][1:] == [0, 0]


def test_table_lists_each_problem_cell(verl_repo: Callable[[], Path], tmp_path: Path) -> None:
    repo = _conflict_repo(verl_repo, tmp_path)

    result = invoke("matrix", "--repo", str(repo), "--versions", "base,conflict")

    assert result.exit_code == 1
    row = next(ln for ln in result.stdout.splitlines() if "vllm-enable-log-requests" in ln and "│" in ln)
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "vllm-enable-log-requests",
        "applied",
        "conflict",
        "-",
        "conflict",
    ]
    assert (
        f"vllm-enable-log-requests on conflict: conflict in {SERVER}: line 329: disable_log_requests=True, "
        "the patch expects disable_log_requests=engine_args.disable_log_requests"
    ) in result.stdout
    assert result.stderr == "matrix: 1 cell(s) conflict or ambiguous\n"


def test_unknown_ref(verl_repo: Callable[[], Path], tmp_path: Path) -> None:
    repo = verl_repo()
    commit_release(repo, "0.6.1", "v0.6.1", tmp_path)
    result = invoke("matrix", "--repo", str(repo), "--versions", "v0.6.1,v9.9", "--json")
    assert result.exit_code == 2
    assert json.loads(result.output) == {  # with --json the error is JSON too (#19)
        "code": 2,
        "error": f"--versions v9.9: no such commit, branch or tag in {repo.resolve()}; "
        f"list them with `git -C {repo.resolve()} tag` and `git -C {repo.resolve()} branch -a`",
        "hint": f"list them with `git -C {repo.resolve()} tag` and `git -C {repo.resolve()} branch -a`",
    }


def test_ref_that_is_not_verl(verl_repo: Callable[[], Path]) -> None:
    repo = verl_repo()
    (repo / "README.md").write_text("not verl\n")
    commit_all(repo, "readme", "docs")
    sha = git(repo, "rev-parse", "docs").strip()
    result = invoke("matrix", "--repo", str(repo), "--versions", "docs")
    assert result.exit_code == 2
    assert result.output == (
        f"error: --versions docs: {repo.resolve()} at {sha[:12]} is not a verl tree "
        "(no verl/__init__.py); pass refs of a verl checkout\n"
    )


def test_repo_that_is_not_a_repository(tmp_path: Path) -> None:
    result = invoke("matrix", "--repo", str(tmp_path), "--versions", "main")
    assert result.exit_code == 2
    assert result.output == f"error: --repo {tmp_path}: not a git repository; pass the root of a verl git checkout\n"


def test_syntax_error_names_the_column_and_file(verl_repo: Callable[[], Path], tmp_path: Path) -> None:
    repo = verl_repo()
    commit_release(repo, "0.6.1", "base", tmp_path)
    server = repo / SERVER
    server.write_text(server.read_text() + "\ndef broken(:\n")
    commit_all(repo, "break it", "broken")
    result = invoke("matrix", "--repo", str(repo), "--versions", "base,broken")
    assert result.exit_code == 2
    assert result.output.startswith(f"error: matrix column broken: {SERVER}:")
    assert "/patchctl-matrix-" not in result.output  # no path into the deleted scratch copy
