"""migrate tells the truth about the source (issue 19 req. 8): verify before sending, --host,
and a dry run that summarises a first migrate. Real sshd and rsync on loopback."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from migrate_fixtures import Site
from migrate_helpers import make_repo, migrate_argv

from patchctl.cli.main import cli
from patchctl.migrate.source import check
from patchctl.patchsets.loader import load_patchsets
from patchctl.target import open_tree


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, ["migrate", *args])
    return done.exit_code, done.stdout, done.stderr


def _hand_edit(tree: Path) -> str:
    """Change a file a patch shipped, as a user editing the tree by hand would."""
    report = check(open_tree(tree), load_patchsets(["uky"]))
    assert report.ok and report.patched  # the fixture is the patched tree: the edit alone fails it
    with (tree / "test_components.py").open("a") as f:
        f.write("print('a local tweak')\n")
    return "test-components"


def test_a_hand_edited_patch_is_refused_before_any_host(site: Site, verl_tree: Path) -> None:
    config = site.config(aliases=["node1"])
    patch = _hand_edit(verl_tree)
    code, _, err = invoke("loop", "--target", str(verl_tree), "--config", str(config))
    assert code == 1
    assert re.fullmatch(
        rf"error: {verl_tree}: the tree fails patchctl verify \(uky: {patch} modified\); "
        rf"`patchctl verify --target {verl_tree}` shows how it differs: fix it \(patchctl apply\), "
        r"or pass --allow-unverified to send it as it is\n",
        err,
    ), err
    assert not site.root("node1").exists()

    code, out, err = invoke("loop", "--target", str(verl_tree), "--config", str(config), "--dry-run")
    assert (
        code == 0 and f"warning: {verl_tree} fails patchctl verify" in err
    )  # a plan changes nothing: told, not refused
    assert out.endswith(f"the source FAILS patchctl verify (uky: {patch} modified), would be sent as it is\n")

    code, out, err = invoke("loop", "--target", str(verl_tree), "--config", str(config), "--allow-unverified")
    assert code == 0, err
    assert f"warning: {verl_tree} fails patchctl verify (uky: {patch} " in err
    assert re.search(
        rf"migrate loop: 1/1 hosts ok and verified; the source FAILS patchctl verify \(uky: {patch} "
        r"\w+\), sent as it is\n\Z",
        out,
    ), out


def test_a_verified_source_says_so_in_the_last_line_and_json(site: Site, verl_tree: Path) -> None:
    config = site.config(aliases=["node1"])
    code, out, err = invoke("loop", "--target", str(verl_tree), "--config", str(config), "--json")
    assert code == 0, err
    assert json.loads(out)["source_verify"] == {"patchsets": ["uky"], "ok": True, "patched": True, "problems": []}
    code, out, err = invoke("loop", "--target", str(verl_tree), "--config", str(config))
    assert code == 0 and err == ""
    assert out.endswith("migrate loop: 1/1 hosts ok and verified; the source passes patchctl verify (uky)\n")


def test_an_unpatched_tree_is_sent_with_a_warning(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n"})
    code, out, err = invoke("loop", "--target", str(tree), "--config", str(site.config(aliases=["node1"])))
    assert code == 0
    assert f"warning: {tree} carries none of the patches (uky: patchctl verify fails); it is sent as it is" in err
    assert out.endswith("1/1 hosts ok and verified; the source carries none of the patches (uky), sent as it is\n")


def test_host_re_runs_a_subset_and_a_typo_gets_did_you_mean(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n"})
    config = site.config(aliases=["node1", "node2", "node3"])
    code, out, err = invoke(
        "loop", "--target", str(tree), "--config", str(config), "--host", "node3", "--host", "node1", "--json"
    )
    assert code == 0, err
    assert [h["host"] for h in json.loads(out)["hosts"]] == ["node1", "node3"]  # the cluster's order
    assert not site.root("node2").exists() and site.root("node3").is_dir()

    code, out, err = invoke("loop", "--target", str(tree), "--config", str(config), "--host", "nod2")
    assert (code, err) == (
        2,  # a usage error (#19: exit codes)
        "error: --host nod2: cluster 'loop' has no such host; did you mean 'node2'? its hosts: node1, node2, node3\n",
    )
    assert not site.root("node2").exists()


def test_a_first_dry_run_is_a_summary_and_list_shows_every_file(site: Site, tmp_path: Path) -> None:
    files = {
        "verl/__init__.py": "a = 1\n",
        **{f"verl/m{i}.py": "x" * 1000 for i in range(30)},
        **{f"docs/d{i}.md": "y" * 10 for i in range(5)},
        "setup.py": "",
    }
    tree = make_repo(tmp_path / "src", files)
    config = site.config(aliases=["node1", "node2"])
    code, out, _ = invoke("loop", "--target", str(tree), "--config", str(config), "--dry-run")
    assert code == 0
    for host in ("node1", "node2"):
        assert f"\n{host}: would send 37 file(s) (30.1 kB), delete 0, render 2\n" in out
    assert re.search(
        r"\n  verl/ +31 file\(s\) +30.0 kB\n  docs/ +5 file\(s\) +50 B\n  \(top level\) +1 file\(s\) +0 B\n"
        r"  \(--list shows all 39 items\)\n",
        out,
    ), out
    assert "send verl/m7.py" not in out and len(out.splitlines()) < 30

    code, out, _ = invoke("loop", "--target", str(tree), "--config", str(config), "--dry-run", "--list")
    assert code == 0 and out.count("  send verl/m7.py\n") == 2 and "--list shows" not in out
    assert not site.root("node1").exists()


def test_a_first_transfer_shows_progress_on_a_terminal_only(site: Site, tmp_path: Path) -> None:
    from tests.cli.ptyrun import run_on_pty

    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "", **{f"verl/m{i}.py": "x" * 15_000 for i in range(10)}})
    config = site.config("bwlimit = 150\n", ["node1"])  # KiB/s: about a second of transfer
    argv = migrate_argv(tree, config, "--json")
    code, out, screen = run_on_pty(argv, {"PATCHCTL_CACHE": str(tmp_path / "cache")})
    assert code == 0 and json.loads(out)["ok"] is True  # stdout stays the JSON document alone
    assert re.search(r"migrate loop: 1 host\(s\) at work, [1-9]\d* files, [\d.]+ kB sent", screen), screen[-2000:]
    assert "warning: " in screen  # the one real stderr line (the tree carries no patches)


def test_list_without_dry_run_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = invoke("loop", "--list", "--config", str(tmp_path / "none.toml"))
    assert code == 2 and "--list shows a dry run's files: pass it with --dry-run" in err
