"""The uky patchset on real verl source releases: outcomes, idempotence, round trip, git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import RELEASES, git, snapshot

from patchctl.cli.main import cli

EXPECTED = {
    "vllm-enable-log-requests": {
        "0.4.1": "not-applicable",
        "0.5.0": "not-applicable",
        "0.6.0": "applied",
        "0.6.1": "applied",
        "0.7.0": "superseded-upstream",
    },
    "triton-cuda-stubs": {v: "applied" for v in RELEASES},
}
CODE_PATCHES = ("--only", "vllm-enable-log-requests", "--only", "triton-cuda-stubs")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def apply_json(tree: Path, *extra: str) -> dict:
    code, out = run("apply", "--target", str(tree), "--json", *extra)
    assert code == 0, out
    return json.loads(out)


@pytest.mark.parametrize("version", RELEASES)
def test_outcome_table(release_tree, version: str) -> None:
    tree = release_tree(version)
    doc = apply_json(tree, *CODE_PATCHES)
    got = {r["patch"]: r["status"] for r in doc["results"]}
    assert got == {pid: table[version] for pid, table in EXPECTED.items()}
    for r in doc["results"]:
        assert r["reason"], r  # every outcome says why


@pytest.mark.parametrize("version", RELEASES)
def test_second_apply_writes_nothing_and_revert_restores_bytes(release_tree, version: str) -> None:
    tree = release_tree(version)
    before = snapshot(tree)
    apply_json(tree)
    patched = snapshot(tree)
    again = apply_json(tree)
    assert again["written"] == []
    assert {r["status"] for r in again["results"]} <= {"already-applied", "not-applicable", "superseded-upstream"}
    assert snapshot(tree) == patched
    code, out = run("verify", "--target", str(tree))
    assert code == 0, out
    code, out = run("revert", "--target", str(tree))
    assert code == 0, out
    assert snapshot(tree) == before
    assert git(tree, "status", "--porcelain") == ""


def test_fork_layout_on_0_6_1(release_tree) -> None:
    """The record's exact lines, at the record's place (lines 29-36 of vllm_rollout_spmd.py)."""
    tree = release_tree("0.6.1")
    apply_json(tree)
    rollout = tree / "verl/workers/rollout/vllm_rollout"
    spmd = (rollout / "vllm_rollout_spmd.py").read_text().splitlines()
    assert spmd[28] == "# Uky: Fix Triton compilation issues BEFORE any vLLM imports"
    assert spmd[35] == '        os.environ["LD_LIBRARY_PATH"] = f"{cuda_stubs}:{current_ld_path}"'
    assert spmd[27] == "" and spmd[36] == "" and spmd[37].startswith("import ")
    server = (rollout / "vllm_async_server.py").read_text()
    assert (
        "            usage_context=usage_context,\n"
        "            # disable_log_requests=engine_args.disable_log_requests, # Uky\n"
        "            enable_log_requests=engine_args.enable_log_requests, # Uky\n"
        "            disable_log_stats=engine_args.disable_log_stats,\n"
    ) in server


def test_0_7_0_block_goes_into_package_init(release_tree) -> None:
    tree = release_tree("0.7.0")
    doc = apply_json(tree, *CODE_PATCHES)
    stubs = next(r for r in doc["results"] if r["patch"] == "triton-cuda-stubs")
    assert stubs["path"] == "verl/workers/rollout/vllm_rollout/__init__.py"
    init = (tree / stubs["path"]).read_text()
    assert init.index("cuda_stubs =") < init.index("from .vllm_rollout import")


def test_dry_run_prints_diff_and_writes_nothing(release_tree) -> None:
    tree = release_tree("0.6.1")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--dry-run", "--diff", *CODE_PATCHES)
    assert code == 0
    assert "+            enable_log_requests=engine_args.enable_log_requests, # Uky" in out
    assert "--- a/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py" in out
    assert snapshot(tree) == before


def test_record_names_patches_upstream_and_hashes(release_tree) -> None:
    tree = release_tree("0.6.1")
    head = git(tree, "rev-parse", "HEAD").strip()
    apply_json(tree, *CODE_PATCHES)
    record = json.loads((tree / ".patchctl/applied.json").read_text())
    assert record["upstream"] == {"version": "0.6.1", "commit": head}
    assert "uky" in record["patchsets"]
    ids = {p["patch"] for p in record["patches"]}
    assert ids == {"vllm-enable-log-requests", "triton-cuda-stubs"}
    assert all(len(p["sha256_before"]) == 64 and len(p["sha256_after"]) == 64 for p in record["patches"])


def test_refuses_dirty_files_unless_forced(release_tree) -> None:
    tree = release_tree("0.6.1")
    target = tree / "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    target.write_text(target.read_text() + "\n# local experiment\n")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), *CODE_PATCHES)
    assert code == 2
    assert (
        "uncommitted changes in files a patch would change: "
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py" in out
    )
    assert snapshot(tree) == before
    code, out = run("apply", "--target", str(tree), "--force", *CODE_PATCHES)
    assert code == 0, out


def test_commit_makes_a_branch_and_one_commit(release_tree) -> None:
    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree), "--commit", *CODE_PATCHES)
    assert code == 0, out
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "patchctl/uky"
    message = git(tree, "log", "-1", "--format=%B")
    assert "vllm-enable-log-requests" in message and "triton-cuda-stubs" in message
    assert git(tree, "status", "--porcelain") == ""
    assert int(git(tree, "rev-list", "--count", "HEAD").strip()) == 2


def test_conflict_leaves_every_file_untouched(release_tree) -> None:
    tree = release_tree("0.6.1")
    server = tree / "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    server.write_text(
        server.read_text().replace(
            "disable_log_requests=engine_args.disable_log_requests,", "disable_log_requests=True,"
        )
    )
    git(tree, "commit", "-qam", "local change")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--json", *CODE_PATCHES)
    assert code == 1
    doc = json.loads(out)
    status = {r["patch"]: r["status"] for r in doc["results"]}
    assert status == {"vllm-enable-log-requests": "conflict", "triton-cuda-stubs": "held-back"}
    assert "disable_log_requests=True" in doc["results"][0]["reason"]
    assert doc["written"] == []
    assert snapshot(tree) == before


def test_ambiguous_lists_every_match(release_tree) -> None:
    tree = release_tree("0.6.1")
    server = tree / "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    text = server.read_text()
    call = text[text.index("        engine_client = AsyncLLM.from_vllm_config(") :]
    call = call[: call.index(")\n") + 2]
    server.write_text(text.replace(call, call + call))
    git(tree, "commit", "-qam", "duplicate the call")
    code, out = run("apply", "--target", str(tree), "--json", "--only", "vllm-enable-log-requests")
    assert code == 1
    result = json.loads(out)["results"][0]
    assert result["status"] == "ambiguous"
    assert "at lines 329, 335" in result["reason"]


def test_modified_patch_is_reported_by_verify(release_tree) -> None:
    tree = release_tree("0.6.1")
    apply_json(tree, *CODE_PATCHES)
    spmd = tree / "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
    spmd.write_text(spmd.read_text().replace("if os.path.exists(cuda_stubs):", "if os.path.isdir(cuda_stubs):"))
    code, out = run("verify", "--target", str(tree), "--json")
    assert code == 1
    doc = json.loads(out)
    status = {p["patch"]: p["status"] for p in doc["patches"]}
    assert status["triton-cuda-stubs"] == "modified"
    assert "+if os.path.isdir(cuda_stubs):" in doc["patches"][1]["detail"]


def test_verify_lists_hand_edits_no_patch_accounts_for(release_tree) -> None:
    tree = release_tree("0.6.1")
    apply_json(tree)
    trainer = tree / "verl/trainer/main_ppo.py"
    trainer.write_text(trainer.read_text() + "\nMY_FLAG = True  # Uky - local experiment\n")
    code, out = run("verify", "--target", str(tree), "--json")
    assert code == 0, out  # hand edits are reported, not failures
    doc = json.loads(out)
    assert [h["path"] for h in doc["tags"]["unaccounted"]] == ["verl/trainer/main_ppo.py"]
    assert doc["tags"]["accounted"] > 10
    code, out = run("verify", "--target", str(tree), "--strict")
    assert code == 1
    assert "stray tag  verl/trainer/main_ppo.py:" in out


def test_verify_reports_missing_after_manual_removal(release_tree) -> None:
    tree = release_tree("0.6.1")
    apply_json(tree, *CODE_PATCHES)
    git(tree, "checkout", "--", "verl/workers/rollout/vllm_rollout/vllm_async_server.py")
    code, out = run("verify", "--target", str(tree), "--json")
    assert code == 1
    status = {p["patch"]: p["status"] for p in json.loads(out)["patches"]}
    assert status["vllm-enable-log-requests"] == "missing"
