"""migrate against real sshd hosts on loopback: fan-out, increments, deletions, faults, verification."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

from migrate_fixtures import Site
from migrate_helpers import EXPECTED, git, make_repo

from patchctl import git as gitcli
from patchctl.migrate import HostStatus, MigrateResult, Options, migrate
from patchctl.migrate.fileset import HOST_FILES, collect
from patchctl.patchsets.loader import load_patchsets

UKY = load_patchsets(())
PATHS = '[clusters.loop.paths]\nDATA_DIR = "/data/fake_dataset"\nMODEL_PATH = "/models/Qwen2.5-VL-3B-Instruct"\n'


def files_under(root: Path) -> dict[str, bytes]:
    """The host's tree, less what migrate writes there itself."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and str(p.relative_to(root)) not in HOST_FILES
    }


def ok(result: MigrateResult) -> None:
    assert result.ok, [f"{h.host}: {h.reason}" for h in result.failed]


def statuses(result: MigrateResult) -> dict[str, str]:
    return {h.host: h.status.value for h in result.hosts}


def test_fan_out_then_incremental(site: Site, verl_tree: Path) -> None:
    cluster = site.cluster(PATHS)
    fs = collect(verl_tree, cluster, ("git_ignore.py",))
    first = migrate(cluster, verl_tree, UKY)
    assert statuses(first) == {"node1": "ok", "node2": "ok", "node3": "ok"}, [h.reason for h in first.hosts]
    assert all(h.verified and h.files_sent == len(fs.entries) for h in first.hosts)
    assert first.files == len(fs.entries) > 300
    expected = {p: (verl_tree / p).read_bytes() for p in fs.paths}
    for alias in ("node1", "node2", "node3"):
        root = site.root(alias)
        got = files_under(root)
        rendered = got.pop("git_ignore.py").decode()
        assert got == expected
        assert not (root / ".git").exists()
        assert f'VERL_ROOT = "{root}"' in rendered and 'DATA_DIR = "/data/fake_dataset"' in rendered
        assert "export VLLM_ATTENTION_BACKEND=FLASH_ATTN" in (root / ".patchctl" / "env.sh").read_text()
        prov = json.loads((root / ".patchctl" / "provenance.json").read_text())
        assert prov["commit"] == gitcli.head(verl_tree) and prov["verified"] is True
        assert "uky" in prov["patchsets"] and prov["upstream"]["version"] == "0.6.1"
        assert {p["patch"] for p in prov["patches"]} >= {"vllm-enable-log-requests", "triton-cuda-stubs"}
        assert "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py" in prov["changes_since_commit"]

    again = migrate(cluster, verl_tree, UKY)
    assert [(h.status, h.files_sent, h.verified) for h in again.hosts] == [(HostStatus.OK, 0, True)] * 3

    target = verl_tree / "verl" / "trainer" / "main_ppo.py"
    target.write_text(target.read_text() + "\n# local tweak\n")
    one = migrate(cluster, verl_tree, UKY)
    assert [(h.status, h.files_sent) for h in one.hosts] == [(HostStatus.OK, 1)] * 3
    assert (site.root("node2") / "verl" / "trainer" / "main_ppo.py").read_text().endswith("# local tweak\n")


def small_tree(tmp_path: Path, n: int = 6) -> Path:
    return make_repo(tmp_path / "src", {f"pkg/m{i}.py": f"x = {i}\n" for i in range(n)} | {"keep.py": "k\n"})


def test_deletions_need_delete_stay_in_the_root_and_stop_above_the_maximum(site: Site, tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    aliases = ["node1"]
    ok(migrate(site.cluster(aliases=aliases), tree, ()))
    host_root = site.root("node1")
    (host_root / "checkpoints").mkdir()
    (host_root / "checkpoints" / "step1.pt").write_text("the host's own output")
    for i in range(3):
        git(tree, "rm", "-q", f"pkg/m{i}.py")
    (tree / "keep.py").write_text("changed\n")

    plain = migrate(site.cluster(aliases=aliases), tree, ())
    ok(plain)
    assert (host_root / "pkg" / "m0.py").exists()  # no --delete: nothing removed

    guarded = migrate(site.cluster("max_delete = 2\n", aliases), tree, (), Options(delete=True))
    (h,) = guarded.hosts
    assert h.status is HostStatus.FAILED and "would remove 3 files, more than max_delete = 2" in h.reason
    assert "clusters.loop.max_delete" in h.reason
    assert (host_root / "pkg" / "m0.py").exists()

    (tree / "keep.py").write_text("changed again, longer\n")
    deleting = migrate(site.cluster("max_delete = 3\n", aliases), tree, (), Options(delete=True))
    (h,) = deleting.hosts
    assert h.status is HostStatus.OK and h.deleted == ("pkg/m0.py", "pkg/m1.py", "pkg/m2.py") and h.files_sent == 1
    assert not (host_root / "pkg" / "m0.py").exists() and (host_root / "pkg" / "m3.py").exists()
    assert (host_root / "checkpoints" / "step1.pt").exists()  # never placed by migrate, never deleted


def test_an_unreachable_host_does_not_stop_the_others(site: Site, tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    result = migrate(site.cluster(aliases=["node1", site.loop.down_alias, "node3"]), tree, ())
    assert statuses(result) == {"node1": "ok", "node-down": "unreachable", "node3": "ok"}
    down = result.hosts[1]
    assert "ssh could not connect" in down.reason and "Connection refused" in down.reason
    assert f"check that `ssh -F {site.loop.ssh_config} node-down` logs in without a prompt" in down.reason
    assert not result.ok and [h.host for h in result.failed] == ["node-down"]


def test_a_host_stopped_mid_transfer_recovers_on_a_re_run(site: Site, tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    payload = os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(payload)
    cluster = site.cluster("bwlimit = 1024\ntimeout = 10\n", ["node1", "node2"])
    outcome: list[MigrateResult] = []
    worker = threading.Thread(target=lambda: outcome.append(migrate(cluster, tree, ())))
    worker.start()
    node2 = site.root("node2")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any("big.bin" in p.name for p in node2.rglob("*")):
        time.sleep(0.05)
    site.loop.host("node2").stop()
    worker.join(60)
    (result,) = outcome
    # rsync exits 12 or 255 as it happens to notice first; either way the host is lost, not broken
    assert statuses(result) == {"node1": "ok", "node2": "unreachable"}
    stopped = result.hosts[1]
    assert re.fullmatch(
        r"rsync exit (12|255): ssh could not reach the host any more \(it went down, or the network "
        r"dropped\); re-run migrate to resume",
        stopped.reason,
    ), stopped.reason
    assert not (node2 / "big.bin").exists()  # the partial data never became the final file

    site.loop.host("node2").start()
    rerun = migrate(cluster, tree, ())
    assert statuses(rerun) == {"node1": "ok", "node2": "ok"}
    assert hashlib.sha256((node2 / "big.bin").read_bytes()).digest() == hashlib.sha256(payload).digest()


def test_verification_repairs_a_file_altered_on_the_host_in_the_same_run(site: Site, verl_tree: Path) -> None:
    cluster = site.cluster(aliases=["node1", "node2"])
    ok(migrate(cluster, verl_tree, UKY))
    rel = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    victim = site.root("node1") / rel
    st = victim.stat()
    text = victim.read_text()
    altered = text.replace(
        "enable_log_requests=engine_args.enable_log_requests, # Uky",
        "enable_log_requests=engine_args.enable_log_requests, # Ukx",
    )
    assert altered != text and len(altered) == len(text)
    victim.write_text(altered)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and time unchanged: rsync's quick check misses it
    stale = site.root("node2") / "verl" / "old_hack.py"
    stale.write_text("import os  # Uky: a hand edit made on the cluster\n")

    result = migrate(cluster, verl_tree, UKY)
    node1, node2 = result.hosts
    # found by the check, re-sent by content, checked again: no --checksum re-run needed (#10)
    assert (node1.status, node1.files_sent, node1.verified, node1.mismatches) == (HostStatus.REPAIRED, 1, True, ())
    assert node1.repaired == (f"{rel}: content differs (sha256)",)
    assert node1.reason == "1 file(s) differed on the host after the transfer; re-sent by content and verified"
    assert victim.read_text() == (verl_tree / rel).read_text()
    assert json.loads((site.root("node1") / ".patchctl" / "provenance.json").read_text())["verified"] is True
    # a tagged file the source lacks is not the source's to fix: it stays a mismatch, with the way out
    assert (node2.status, node2.verified, node2.repaired) == (HostStatus.MISMATCH, False, ())
    assert node2.mismatches == (
        "verl/old_hack.py:1: tagged line on the host that the source lacks: "
        "import os  # Uky: a hand edit made on the cluster",
    )
    assert node2.reason == (
        "1 difference(s) on the host after the transfer; --delete removes files deleted at the "
        "source; other tagged files there are hand edits"
    )
    assert not result.ok and [h.host for h in result.failed] == ["node2"]

    stale.unlink()
    again = migrate(cluster, verl_tree, UKY)
    assert [(h.status, h.files_sent) for h in again.hosts] == [(HostStatus.OK, 0), (HostStatus.OK, 0)]


def test_the_host_gets_the_tree_as_git_sees_it(site: Site, gitignore_repo: Path) -> None:
    result = migrate(site.cluster(aliases=["node3"]), gitignore_repo, ())
    ok(result)
    assert set(files_under(site.root("node3"))) == EXPECTED


def test_dry_run_lists_changes_and_writes_nothing(site: Site, tmp_path: Path) -> None:
    tree = small_tree(tmp_path, 3)
    cluster = site.cluster(aliases=["node1"])
    (fresh,) = migrate(cluster, tree, (), Options(dry_run=True)).hosts
    assert fresh.status is HostStatus.PLANNED and "does not exist yet" in fresh.reason
    assert "send pkg/m0.py" in fresh.changes and fresh.files_sent == 4
    assert not site.root("node1").exists()

    ok(migrate(cluster, tree, ()))
    git(tree, "rm", "-q", "pkg/m0.py")
    (tree / "keep.py").write_text("new\n")
    before = files_under(site.root("node1"))
    (planned,) = migrate(cluster, tree, (), Options(dry_run=True, delete=True)).hosts
    assert planned.status is HostStatus.PLANNED
    assert planned.changes == ("send keep.py", "delete pkg/m0.py")
    assert files_under(site.root("node1")) == before
